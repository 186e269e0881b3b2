#include "lmkit/present/dataload_units.h"

#include <cstdio>

#include "lmkit/io/token_dtype.h"

namespace lmkit::present {

std::string Fmt(const char* format, double value) {
  char b[64];
  std::snprintf(b, sizeof b, format, value);
  return b;
}

std::string Time(double s) {
  if (s < 1e-3) return Fmt("%.1f us", s * 1e6);
  if (s < 1) return Fmt("%.2f ms", s * 1e3);
  return Fmt("%.2f s", s);
}

std::string ShortTime(double s) { return s < 1e-3 ? Fmt("%.0f us", s * 1e6) : Fmt("%.2f ms", s * 1e3); }

std::string Pct(double share) { return Fmt("%.1f%%", share * 100); }

std::string Tokens(double tps) {
  if (tps >= 1e6) return Fmt("%.1f M tokens/s", tps / 1e6);
  if (tps >= 1e3) return Fmt("%.1f k tokens/s", tps / 1e3);
  return Fmt("%.0f tokens/s", tps);
}

std::string Ratio(double x) { return Fmt(x >= 10 ? "%.0fx" : "%.2fx", x); }

std::string TokenDtypeOf(unsigned token_bytes) {
  return std::string(io::TokenDtypeName(io::TokenDtypeOfBytes(token_bytes)));
}

}  // namespace lmkit::present
