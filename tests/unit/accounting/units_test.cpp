// Numbers as the accounting reports print them: SI steps, digits by magnitude, time units by size.
#include "lmkit/accounting/units.h"

#include <catch2/catch.hpp>
#include <limits>

using namespace lmkit::accounting;

TEST_CASE("units: Human steps by 1000 and keeps three significant digits", "[accounting][units]") {
  CHECK(Human(4.51e12, "FLOP") == "4.51 TFLOP");
  CHECK(Human(999, "B") == "999.0 B");  // no step below 1000; 100 and over print one decimal
  CHECK(Human(1000, "B") == "1.00 KB");
  CHECK(Human(123456789, "B") == "123.5 MB");
  CHECK(Human(-2500, "FLOP") == "-2.50 KFLOP");  // the sign does not stop the steps
  CHECK(Human(1e24, "B") == "1000.0 ZB");        // Z is the last prefix
  CHECK(HumanBytes(1.5e9) == "1.50 GB");         // decimal gigabytes, not GiB
}

TEST_CASE("units: shares, percentages and fixed notation", "[accounting][units]") {
  CHECK(ShareOf(1, 4) == 0.25);
  CHECK(ShareOf(5, 0) == 0.0);
  CHECK(ShareOf(0, 7) == 0.0);
  CHECK(Percent(0.1673) == "16.73%");
  CHECK(Percent(1.0) == "100.00%");
  CHECK(Fixed(3.14159, 3) == "3.142");
  CHECK(Fixed(-0.5, 1) == "-0.5");
}

TEST_CASE("units: Seconds picks the unit by size", "[accounting][units]") {
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
