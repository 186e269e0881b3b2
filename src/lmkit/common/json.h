// JSON parsing and emission.
//
// Contract: ParseJson never throws; malformed input gives kInvalidInput naming `subject` and the byte offset.
// Json (ordered) keeps keys in insertion order, so every --json document lmkit prints has a stable key order and the
// same input gives the same bytes. Numbers: integers print exactly, doubles in shortest round-trip form.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "lmkit/common/status.h"

namespace lmkit {

using Json = nlohmann::ordered_json;

Result<Json> ParseJson(std::string_view text, const std::string& subject);

// Pretty (indent 2) or compact (indent < 0) serialisation; invalid UTF-8 in strings is replaced, never thrown.
std::string DumpJson(const Json& j, int indent = 2);

}  // namespace lmkit
