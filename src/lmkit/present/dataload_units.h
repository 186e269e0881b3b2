// Number formats shared by the dataload reports (text, JSON, advice, trace): times, shares, rates, ratios, dtypes.
//
// Contract: pure functions, thread-safe; the exact formats the reports have always printed.
#pragma once

#include <cstdint>
#include <string>

#include "lmkit/common/grouped.h"  // Grouped(): "1,234,567"

namespace lmkit::present {

std::string Fmt(const char* format, double value);  // snprintf of one double
std::string Time(double s);                         // "12.3 us", "4.56 ms", "1.23 s"
std::string ShortTime(double s);                    // "12 us" below a millisecond, else "4.56 ms" (advice lines)
std::string Pct(double share);                      // "12.3%"
std::string Tokens(double tokens_per_s);            // "1.2 M tokens/s", "3.4 k tokens/s", "56 tokens/s"
std::string Ratio(double x);                        // "476x" from 10 up, else "0.59x"
std::string TokenDtypeOf(unsigned token_bytes);     // "uint16" / "uint32"

}  // namespace lmkit::present
