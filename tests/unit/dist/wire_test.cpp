// The varint wire form: round trips at every length, and a cut-short or overlong varint is refused without reading
// past the end.
#include "lmkit/dist/wire.h"

#include <catch2/catch.hpp>

using lmkit::dist::GetVarint;
using lmkit::dist::PutVarint;

TEST_CASE("wire: varints round-trip, 7 bits a byte", "[dist]") {
  const uint64_t values[] = {0, 1, 127, 128, 300, 16383, 16384, uint64_t{1} << 35, UINT64_MAX - 1, UINT64_MAX};
  std::string all;
  for (uint64_t v : values) {
    std::string one;
    PutVarint(&one, v);
    size_t bytes = 1;
    for (uint64_t x = v; x >= 128; x >>= 7) ++bytes;
    CHECK(one.size() == bytes);
    all += one;
  }
  CHECK(all.substr(0, 4) == std::string("\x00\x01\x7f\x80", 4));
  const char* p = all.data();
  for (uint64_t v : values) {
    uint64_t got = 0;
    REQUIRE(GetVarint(&p, all.data() + all.size(), &got));
    CHECK(got == v);
  }
  CHECK(p == all.data() + all.size());
}

TEST_CASE("wire: a varint cut short or longer than 10 bytes is refused", "[dist]") {
  std::string s;
  PutVarint(&s, uint64_t{1} << 40);
  const char* p = s.data();
  uint64_t v = 7;
  CHECK_FALSE(GetVarint(&p, s.data() + s.size() - 1, &v));
  CHECK(p == s.data());
  CHECK(v == 7);
  const std::string endless(11, '\x80');
  p = endless.data();
  CHECK_FALSE(GetVarint(&p, endless.data() + endless.size(), &v));
}
