#include "lmkit/common/json.h"

#include <catch2/catch.hpp>

TEST_CASE("json: malformed input names the byte, an out-of-range number says so without the library's id", "[json]") {
  auto trunc = lmkit::ParseJson("{\"a\": ", "cfg.json");  // nlohmann counts the end of input as byte 7
  REQUIRE(!trunc.ok());
  CHECK(trunc.status().ToString() == "cfg.json: malformed JSON at byte 7");
  // A number past a double's range is not a syntax error: nlohmann throws out_of_range, whose message starts with
  // "[json.exception.out_of_range.406]", which meant nothing to a user.
  auto big = lmkit::ParseJson("{\"a\": 1e999}", "cfg.json");
  REQUIRE(!big.ok());
  CHECK(big.status().ToString() == "cfg.json: malformed JSON: number overflow parsing '1e999'");
  CHECK(lmkit::ParseJson("{\"a\": 1e308}", "cfg.json").ok());
}
