// Reading the golden files of tests/data (JSON written by the scripts that ran the reference tool: HF tokenizers,
// sentencepiece, mistral-common): the whole document, and one list of ids in it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/json.h"

namespace lmkit::test {

// The JSON document at `path`; the calling test fails (REQUIRE) when it is missing or malformed.
Json ReadGoldenJson(const std::string& path);
// A JSON list of token ids; the calling test fails when an element is not an id.
std::vector<uint32_t> GoldenIds(const Json& list);

}  // namespace lmkit::test
