#include "lmkit/common/nearest_name.h"

#include <catch2/catch.hpp>

TEST_CASE("nearest name: prefix first, then edit distance up to 3 and half the typed length", "[common]") {
  const std::vector<std::string> names = {"inspect", "quantize", "train", "l4"};
  CHECK(lmkit::NearestName("quant", names) == "quantize");   // a prefix, however far
  CHECK(lmkit::NearestName("inspcet", names) == "inspect");  // 2 edits of 7
  CHECK(lmkit::NearestName("trian", names) == "train");      // 2 edits of 5
  CHECK(lmkit::NearestName("zzz", names).empty());           // 3 edits from "l4": all of what was typed
  CHECK(lmkit::NearestName("zzzzzzzz", names).empty());      // nothing within 3
  CHECK(lmkit::NearestName("", names).empty());
}
