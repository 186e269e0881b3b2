// Numbers as the accounting reports and messages print them: locale-independent, deterministic.
#pragma once

#include <cstdint>
#include <string>

#include "lmkit/common/grouped.h"  // Grouped(): 1234567 -> "1,234,567"

namespace lmkit::accounting {

std::string Human(double v, const char* unit);  // 4.51e12, "FLOP" -> "4.51 TFLOP"; bytes use GB (1e9) steps
std::string HumanBytes(double bytes);           // Human(bytes, "B")
double ShareOf(uint64_t part, uint64_t whole);  // part / whole, 0 when whole is 0
std::string Fixed(double v, int decimals);      // fixed notation, `decimals` digits
std::string Percent(double fraction);           // 0.1673 -> "16.73%"
std::string Seconds(double s);                  // "12.3 ms", "4.20 s", "3.1 h", "6,584 days"

}  // namespace lmkit::accounting
