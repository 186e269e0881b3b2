#include "lmkit/accounting/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lmkit::accounting {
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

}  // namespace

std::string RenderTable(const Table& t, TableStyle style) {
  std::string out;
  const size_t cols = t.header.size();
  if (style == TableStyle::kCsv) {
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
  if (style == TableStyle::kMd) {
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

std::string Grouped(uint64_t v) {
  std::string s = std::to_string(v), out;
  int n = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (n && n % 3 == 0) out.push_back(',');
    out.push_back(*it);
    ++n;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Human(double v, const char* unit) {
  static const char* kPrefix[] = {"", "K", "M", "G", "T", "P", "E", "Z"};
  int i = 0;
  double a = std::fabs(v);
  while (a >= 1000.0 && i < 7) {
    a /= 1000.0;
    v /= 1000.0;
    ++i;
  }
  return Fixed(v, a >= 100 ? 1 : 2) + " " + kPrefix[i] + unit;
}

std::string Percent(double fraction) { return Fixed(100.0 * fraction, 2) + "%"; }

std::string Seconds(double s) {
  if (s < 1e-3) return Fixed(s * 1e6, 1) + " us";
  if (s < 1) return Fixed(s * 1e3, 2) + " ms";
  if (s < 120) return Fixed(s, 2) + " s";
  if (s < 2 * 3600) return Fixed(s / 60, 1) + " min";
  if (s < 2 * 86400) return Fixed(s / 3600, 2) + " h";
  const double days = s / 86400;
  // llround past 2^63 (or of inf) is undefined and printed 9,223,372,036,854,775,808 days for a tiny --mfu; beyond a
  // grouped integer's useful range the count is printed in scientific form instead.
  if (!(days < 1e15)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g days", days);
    return buf;
  }
  return Grouped(static_cast<uint64_t>(std::llround(days))) + " days";
}

}  // namespace lmkit::accounting
