#include "lmkit/common/units.h"

#include <fmt/format.h>

#include <cmath>

namespace lmkit {

std::string Grouped(uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string Fixed(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }

std::string Percent(double fraction, int decimals) { return Fixed(100.0 * fraction, decimals) + "%"; }

double ShareOf(uint64_t part, uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0;
}

std::string Ratio(double x) { return Fixed(x, x >= 10 ? 0 : 2) + "x"; }

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

std::string HumanBytes(double bytes) { return Human(bytes, "B"); }

std::string FormatBytes(double bytes) {
  static const char* kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (std::fabs(bytes) >= 1000.0 && u < 5) {
    bytes /= 1000.0;
    ++u;
  }
  return Fixed(bytes, u == 0 ? 0 : 2) + " " + kUnits[u];
}

std::string Tokens(double tps) {
  if (tps >= 1e6) return Fixed(tps / 1e6, 1) + " M tokens/s";
  if (tps >= 1e3) return Fixed(tps / 1e3, 1) + " k tokens/s";
  return Fixed(tps, 0) + " tokens/s";
}

std::string Time(double s) {
  if (s < 1e-3) return Fixed(s * 1e6, 1) + " us";
  if (s < 1) return Fixed(s * 1e3, 2) + " ms";
  return Fixed(s, 2) + " s";
}

std::string Seconds(double s) {
  if (s < 120) return Time(s);
  if (s < 2 * 3600) return Fixed(s / 60, 1) + " min";
  if (s < 2 * 86400) return Fixed(s / 3600, 2) + " h";
  const double days = s / 86400;
  // llround past 2^63 (or of inf) is undefined and printed 9,223,372,036,854,775,808 days for a tiny --mfu; beyond a
  // grouped integer's useful range the count is printed in scientific form instead.
  if (!(days < 1e15)) return fmt::format("{:.3g} days", days);
  return Grouped(static_cast<uint64_t>(std::llround(days))) + " days";
}

std::string ShortTime(double s) { return s < 1e-3 ? Fixed(s * 1e6, 0) + " us" : Fixed(s * 1e3, 2) + " ms"; }

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  if (seconds < 60) return fmt::format("{:.1f}s", seconds);
  const int whole = static_cast<int>(seconds);
  if (seconds < 3600) return fmt::format("{}m{:02}s", whole / 60, whole % 60);
  return fmt::format("{}h{:02}m", whole / 3600, whole % 3600 / 60);
}

}  // namespace lmkit
