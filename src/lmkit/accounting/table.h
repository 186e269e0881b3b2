// A small table type and its printers (aligned text, CSV, Markdown), plus the number formats the reports use.
//
// Contract: columns are right-aligned when `numeric[i]` is true. RenderTable never fails. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmkit::accounting {

enum class TableStyle { kText, kCsv, kMd };

struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<bool> numeric;
  std::vector<std::vector<std::string>> rows;
  void Add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
};

// Text: "title\n" then aligned columns; CSV: "# title\n" then RFC 4180 rows; Markdown: "### title\n" then a pipe table.
std::string RenderTable(const Table& t, TableStyle style);

std::string Grouped(uint64_t v);                // 1234567 -> "1,234,567"
std::string Human(double v, const char* unit);  // 4.51e12, "FLOP" -> "4.51 TFLOP"; bytes use GB (1e9) steps
std::string Fixed(double v, int decimals);      // locale-independent fixed notation
std::string Percent(double fraction);           // 0.1673 -> "16.73%"
std::string Seconds(double s);                  // "12.3 ms", "4.20 s", "3.1 h", "6,584 days"

}  // namespace lmkit::accounting
