// Numbers as every report, message and progress line prints them: the one number-formatting module, on fmt.
// Locale-independent and deterministic (fmt formats a double exactly as printf's "%.Nf" does).
//
// Contract: pure functions, thread-safe; each keeps the exact format its reports have always printed.
#pragma once

#include <cstdint>
#include <string>

namespace lmkit {

// Counts and shares.
std::string Grouped(uint64_t v);                         // 1234567 -> "1,234,567"
std::string Fixed(double v, int decimals);               // fixed notation, `decimals` digits
std::string Percent(double fraction, int decimals = 2);  // 0.1673 -> "16.73%"; (0.0321, 1) -> "3.2%"
double ShareOf(uint64_t part, uint64_t whole);           // part / whole, 0 when whole is 0
std::string Ratio(double x);                             // "476x" from 10 up, else "0.59x"

// Magnitudes with SI prefixes (steps of 1000).
std::string Human(double v, const char* unit);  // 4.51e12, "FLOP" -> "4.51 TFLOP"; 999 B -> "999.0 B"; K, M, G...
std::string HumanBytes(double bytes);           // Human(bytes, "B"): "1.50 GB" (the accounting reports)
std::string FormatBytes(double bytes);          // "512 B", "1.23 kB", "4.20 GB" (summaries and progress lines)
std::string Tokens(double tokens_per_s);        // "1.2 M tokens/s", "3.4 k tokens/s", "56 tokens/s"

// Durations.
std::string Time(double s);            // "12.3 us", "4.56 ms", "1.23 s" (never a larger unit)
std::string Seconds(double s);         // Time below 2 minutes, then "2.5 min", "3.10 h", "6,584 days"
std::string ShortTime(double s);       // "12 us" below a millisecond, else "4.56 ms" (advice lines)
std::string FormatDuration(double s);  // "12.3s", "1m05s", "2h07m"; "?" when negative or not finite (ETAs)

}  // namespace lmkit
