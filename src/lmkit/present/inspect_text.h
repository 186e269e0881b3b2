// The `lmkit inspect` report as text and as its JSON document. Deterministic; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "lmkit/common/json.h"
#include "lmkit/io/inspect.h"

namespace lmkit::present {

// The text table: header lines (path, format, counts, metadata, model_type) then one row per tensor, with statistics
// when the report has them. Names and metadata are shown with control bytes escaped (PrintableText).
std::string InspectText(const io::InspectResult& report);

// The --json document: path, format, files, counts, metadata, config, then one object per tensor.
Json InspectJson(const io::InspectResult& report);

// `text` with every byte below 0x20 and 0x7f (NUL, escape sequences, newlines) written as \xNN and the backslash as
// \\, so a tensor name from a file cannot break a table or drive the terminal.
std::string PrintableText(std::string_view text);

}  // namespace lmkit::present
