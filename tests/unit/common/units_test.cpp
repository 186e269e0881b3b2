// The one number-formatting module: SI steps, digits by magnitude, time units by size, and the exact strings each
// report has always printed (each was printf before it moved onto fmt).
#include "lmkit/common/units.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

using namespace lmkit;

TEST_CASE("units: Human steps by 1000 and keeps three significant digits", "[common][units]") {
  CHECK(Human(4.51e12, "FLOP") == "4.51 TFLOP");
  CHECK(Human(999, "B") == "999.0 B");  // no step below 1000; 100 and over print one decimal
  CHECK(Human(1000, "B") == "1.00 KB");
  CHECK(Human(123456789, "B") == "123.5 MB");
  CHECK(Human(-2500, "FLOP") == "-2.50 KFLOP");  // the sign does not stop the steps
  CHECK(Human(1e24, "B") == "1000.0 ZB");        // Z is the last prefix
  CHECK(HumanBytes(1.5e9) == "1.50 GB");         // decimal gigabytes, not GiB
}

TEST_CASE("units: shares, percentages and fixed notation", "[common][units]") {
  CHECK(ShareOf(1, 4) == 0.25);
  CHECK(ShareOf(5, 0) == 0.0);
  CHECK(ShareOf(0, 7) == 0.0);
  CHECK(Percent(0.1673) == "16.73%");
  CHECK(Percent(1.0) == "100.00%");
  CHECK(Fixed(3.14159, 3) == "3.142");
  CHECK(Fixed(-0.5, 1) == "-0.5");
}

TEST_CASE("units: Seconds picks the unit by size", "[common][units]") {
  CHECK(Seconds(5e-4) == "500.0 us");
  CHECK(Seconds(0.0123) == "12.30 ms");
  CHECK(Seconds(4.2) == "4.20 s");
  CHECK(Seconds(119) == "119.00 s");
  CHECK(Seconds(150) == "2.5 min");
  CHECK(Seconds(3.1 * 3600) == "3.10 h");
  CHECK(Seconds(6584.0 * 86400) == "6,584 days");
  // Past a grouped integer's range (or infinite) the day count is scientific, not an undefined llround.
  CHECK(Seconds(1e30) == "1.16e+25 days");
  CHECK(Seconds(std::numeric_limits<double>::infinity()) == "inf days");
}

TEST_CASE("units: byte counts in decimal units, durations as s, m s, h m", "[common][units]") {
  CHECK(FormatBytes(0) == "0 B");
  CHECK(FormatBytes(999) == "999 B");
  CHECK(FormatBytes(1000) == "1.00 kB");
  CHECK(FormatBytes(1234567) == "1.23 MB");
  CHECK(FormatBytes(5e15) == "5.00 PB");
  CHECK(FormatBytes(2e18) == "2000.00 PB");  // PB is the last unit
  CHECK(FormatDuration(0) == "0.0s");
  CHECK(FormatDuration(59.94) == "59.9s");
  CHECK(FormatDuration(65) == "1m05s");
  CHECK(FormatDuration(3599) == "59m59s");
  CHECK(FormatDuration(3600 + 61) == "1h01m");
  CHECK(FormatDuration(-1) == "?");
  CHECK(FormatDuration(NAN) == "?");
}

TEST_CASE("units: the dataload report's times, shares, rates and ratios", "[common][units]") {
  CHECK(Time(12.34e-6) == "12.3 us");
  CHECK(Time(4.567e-3) == "4.57 ms");
  CHECK(Time(1.5) == "1.50 s");
  CHECK(Time(999e-6) == "999.0 us");
  CHECK(Time(1e-3) == "1.00 ms");
  CHECK(Time(0.999) == "999.00 ms");
  CHECK(Time(150) == "150.00 s");  // no minutes, unlike Seconds
  CHECK(Seconds(100) == Time(100));
  CHECK(ShortTime(41e-6) == "41 us");
  CHECK(ShortTime(999e-6) == "999 us");
  CHECK(ShortTime(2.5e-3) == "2.50 ms");
  CHECK(Percent(0.0321, 1) == "3.2%");
  CHECK(Percent(1.0, 1) == "100.0%");
  CHECK(Tokens(218.9e6) == "218.9 M tokens/s");
  CHECK(Tokens(460.2e3) == "460.2 k tokens/s");
  CHECK(Tokens(56) == "56 tokens/s");
  CHECK(Tokens(999) == "999 tokens/s");
  CHECK(Grouped(46749208) == "46,749,208");
  CHECK(Grouped(0) == "0");
  CHECK(Grouped(999) == "999");
  CHECK(Grouped(1000) == "1,000");
  CHECK(Ratio(475.61) == "476x");
  CHECK(Ratio(0.59) == "0.59x");
  CHECK(Ratio(10) == "10x");
  CHECK(Ratio(9.994) == "9.99x");
}

TEST_CASE("units: fmt prints what printf printed, ties and non-finite values included", "[common][units]") {
  CHECK(Fixed(0.125, 2) == "0.12");  // the binary value is exactly a tie: round half to even, as printf
  CHECK(Fixed(0.375, 2) == "0.38");
  CHECK(Fixed(2.5, 0) == "2");
  CHECK(Fixed(-0.0, 1) == "-0.0");
  CHECK(Fixed(std::numeric_limits<double>::infinity(), 2) == "inf");
  CHECK(Fixed(std::numeric_limits<double>::quiet_NaN(), 2) == "nan");
  CHECK(Time(std::numeric_limits<double>::quiet_NaN()) == "nan s");
}
