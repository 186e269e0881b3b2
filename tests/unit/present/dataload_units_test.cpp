// The dataload reports' number formats: times, shares, rates, ratios, dtypes.
#include "lmkit/present/dataload_units.h"

#include <catch2/catch.hpp>

#include "lmkit/common/grouped.h"

TEST_CASE("dataload units: the report's number formats", "[present][dataload]") {
  using namespace lmkit::present;
  CHECK(Time(12.34e-6) == "12.3 us");
  CHECK(Time(4.567e-3) == "4.57 ms");
  CHECK(Time(1.5) == "1.50 s");
  CHECK(ShortTime(41e-6) == "41 us");
  CHECK(Pct(0.0321) == "3.2%");
  CHECK(Tokens(218.9e6) == "218.9 M tokens/s");
  CHECK(Tokens(460.2e3) == "460.2 k tokens/s");
  CHECK(lmkit::Grouped(46749208) == "46,749,208");
  CHECK(Ratio(475.61) == "476x");
  CHECK(Ratio(0.59) == "0.59x");
  CHECK(TokenDtypeOf(4) == "uint32");
}

TEST_CASE("dataload units: unit boundaries and the snprintf helper", "[present][dataload]") {
  using namespace lmkit::present;
  CHECK(Fmt("%.3f", 2.0 / 3) == "0.667");
  CHECK(Time(999e-6) == "999.0 us");
  CHECK(Time(1e-3) == "1.00 ms");
  CHECK(Time(0.999) == "999.00 ms");
  CHECK(ShortTime(999e-6) == "999 us");
  CHECK(ShortTime(2.5e-3) == "2.50 ms");
  CHECK(Pct(1.0) == "100.0%");
  CHECK(Tokens(56) == "56 tokens/s");
  CHECK(Tokens(999) == "999 tokens/s");
  CHECK(Ratio(10) == "10x");
  CHECK(Ratio(9.994) == "9.99x");
  CHECK(TokenDtypeOf(2) == "uint16");
}
