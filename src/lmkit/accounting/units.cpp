#include "lmkit/accounting/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lmkit::accounting {

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

std::string HumanBytes(double bytes) { return Human(bytes, "B"); }

double ShareOf(uint64_t part, uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0;
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
