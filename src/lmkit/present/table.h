// A small table type and its printers (aligned text, CSV, Markdown), and the output formats the reports share.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "lmkit/common/name_table.h"

namespace lmkit::present {

enum class Format { kTable, kJson, kCsv, kMd };
std::span<const EnumName<Format>> FormatNames();  // table, json, csv, md (aliases text, markdown)

struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<bool> numeric;  // right-aligned columns
  std::vector<std::vector<std::string>> rows;
  void Add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
};

// Text: "title\n" then aligned columns; CSV: "# title\n" then RFC 4180 rows; Markdown: "### title\n" then a pipe
// table. kJson renders as text. Never fails.
std::string RenderTable(const Table& t, Format f);
// A free-text line: a comment in CSV; in Markdown it ends in a hard line break when `md_break` (consecutive lines
// stay lines).
std::string TextLine(const std::string& s, Format f, bool md_break = false);
// The blank line between blocks ("" in CSV).
std::string BlockGap(Format f);

}  // namespace lmkit::present
