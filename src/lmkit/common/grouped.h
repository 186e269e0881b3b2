// Integers as every report prints them: decimal digits in groups of three, locale-independent.
#pragma once

#include <cstdint>
#include <string>

namespace lmkit {

// 1234567 -> "1,234,567". Pure, thread-safe.
inline std::string Grouped(uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace lmkit
