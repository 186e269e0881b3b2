#include "lmkit/present/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lmkit::present {
namespace {

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

constexpr EnumName<Format> kFormatNames[] = {{Format::kTable, "table"}, {Format::kJson, "json"},
                                             {Format::kCsv, "csv"},     {Format::kMd, "md"},
                                             {Format::kTable, "text"},  {Format::kMd, "markdown"}};

}  // namespace

std::span<const EnumName<Format>> FormatNames() { return kFormatNames; }

std::string TextLine(const std::string& s, Format f, bool md_break) {
  if (f == Format::kCsv) return "# " + s + "\n";
  return s + (f == Format::kMd && md_break ? "  \n" : "\n");
}

std::string BlockGap(Format f) { return f == Format::kCsv ? "" : "\n"; }

std::string RenderTable(const Table& t, Format style) {
  std::string out;
  const size_t cols = t.header.size();
  if (style == Format::kCsv) {
    if (!t.title.empty()) out += "# " + t.title + "\n";
    auto line = [&](const std::vector<std::string>& r) {
      for (size_t i = 0; i < r.size(); ++i) {
        if (i) out.push_back(',');
        out += CsvField(r[i]);
      }
      out += "\n";
    };
    line(t.header);
    for (const auto& r : t.rows) line(r);
    return out;
  }
  if (style == Format::kMd) {
    if (!t.title.empty()) out += "### " + t.title + "\n\n";
    auto line = [&](const std::vector<std::string>& r) {
      out += "|";
      for (const auto& c : r) out += " " + c + " |";
      out += "\n";
    };
    line(t.header);
    out += "|";
    for (size_t i = 0; i < cols; ++i) out += (i < t.numeric.size() && t.numeric[i]) ? "---:|" : "---|";
    out += "\n";
    for (const auto& r : t.rows) line(r);
    return out;
  }
  std::vector<size_t> w(cols, 0);
  for (size_t i = 0; i < cols; ++i) w[i] = t.header[i].size();
  for (const auto& r : t.rows)
    for (size_t i = 0; i < cols && i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  if (!t.title.empty()) out += t.title + "\n";
  auto line = [&](const std::vector<std::string>& r) {
    std::string l = "  ";
    for (size_t i = 0; i < cols; ++i) {
      std::string c = i < r.size() ? r[i] : "";
      std::string pad(w[i] - std::min(w[i], c.size()), ' ');
      bool right = i < t.numeric.size() && t.numeric[i];
      l += right ? pad + c : c + pad;
      if (i + 1 < cols) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(t.header);
  std::vector<std::string> rule;
  for (size_t i = 0; i < cols; ++i) rule.emplace_back(w[i], '-');
  line(rule);
  for (const auto& r : t.rows) line(r);
  return out;
}

}  // namespace lmkit::present
