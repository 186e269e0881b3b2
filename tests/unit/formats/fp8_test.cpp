// FP8 E4M3 coding (formats/fp8.h) against two independent references over every bf16 input: PyTorch's
// float8_e4m3fn cast (tests/data/formats/e4m3_from_bf16.bin, how it was made is beside it) and a brute-force search
// for the nearest E4M3 value written here from the format's definition.
#include "lmkit/formats/fp8.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>

#include "lmkit/io/dtype.h"
#include "support/run_lmkit.h"

using namespace lmkit;

namespace {

// E4M3FN by its definition: sign, 4 exponent bits with bias 7, 3 mantissa bits, subnormals at exponent 0, only
// S.1111.111 is NaN (no infinities).
double Decode(int b) {
  const int e = (b >> 3) & 15, m = b & 7;
  const double mag = e == 0 ? m * std::ldexp(1.0, -9) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
  return (b & 0x80) ? -mag : mag;
}

// The nearest finite E4M3 value to x (|x| clamped to 448 first), ties to the even bit pattern: a search over the
// 126 non-negative finite codes, in exact double arithmetic.
uint8_t NearestE4M3(float x) {
  if (std::isnan(x)) return std::signbit(x) ? 0xff : 0x7f;
  const double a = std::min(std::fabs(static_cast<double>(x)), 448.0);
  int best = 0;
  for (int b = 1; b <= 0x7e; ++b) {
    const double d = std::fabs(Decode(b) - a), db = std::fabs(Decode(best) - a);
    if (d < db || (d == db && (b & 1) == 0)) best = b;
  }
  return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
}

float Bf16(uint16_t bits) { return io::Bf16ToF32(bits); }

}  // namespace

TEST_CASE("formats: E4M3 rounding equals torch's float8_e4m3fn cast for every bf16 input", "[formats][fp8]") {
  const std::string want = test::ReadAll(test::TestData("formats/e4m3_from_bf16.bin"));
  REQUIRE(want.size() == 65536);
  uint64_t mismatches = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint8_t got = formats::E4M3FromF32(Bf16(static_cast<uint16_t>(b)));
    if (got != static_cast<uint8_t>(want[b])) {
      if (++mismatches <= 5) FAIL_CHECK("bf16 " << b << ": lmkit " << int(got) << ", torch " << int(uint8_t(want[b])));
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("formats: E4M3 rounding equals the nearest E4M3 value, ties to even, for every bf16 input",
          "[formats][fp8]") {
  uint64_t mismatches = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    const float x = Bf16(static_cast<uint16_t>(b));
    if (formats::E4M3FromF32(x) != NearestE4M3(x) && ++mismatches <= 5) FAIL_CHECK("bf16 " << b << " (" << x << ")");
  }
  CHECK(mismatches == 0);
}

TEST_CASE("formats: E4M3 decoding is exact for all 256 codes and agrees with io's reader", "[formats][fp8]") {
  for (int b = 0; b < 256; ++b) {
    const float v = formats::E4M3ToF32(static_cast<uint8_t>(b));
    const float io_v = io::F8E4M3ToF32(static_cast<uint8_t>(b));
    if ((b & 0x7f) == 0x7f) {
      CHECK(std::isnan(v));
      CHECK(std::isnan(io_v));
      continue;
    }
    CHECK(static_cast<double>(v) == Decode(b));
    CHECK(std::memcmp(&v, &io_v, 4) == 0);
    CHECK(formats::E4M3FromF32(v) == b);  // every finite code is a fixed point
  }
}

TEST_CASE("formats: E4M3 saturates, keeps signs and rounds ties to even at the edges", "[formats][fp8]") {
  CHECK(formats::E4M3FromF32(448.0f) == 0x7e);
  CHECK(formats::E4M3FromF32(463.99f) == 0x7e);
  CHECK(formats::E4M3FromF32(1e30f) == 0x7e);
  CHECK(formats::E4M3FromF32(-std::numeric_limits<float>::infinity()) == 0xfe);
  CHECK(formats::E4M3FromF32(-0.0f) == 0x80);
  // Subnormal grid 2^-9: 0.5 and 1.5 ulps round to even codes 0 and 2; just above 0.5 ulp rounds up.
  CHECK(formats::E4M3FromF32(std::ldexp(1.0f, -10)) == 0x00);
  CHECK(formats::E4M3FromF32(std::ldexp(3.0f, -10)) == 0x02);
  CHECK(formats::E4M3FromF32(std::nextafter(std::ldexp(1.0f, -10), 1.0f)) == 0x01);
  // The largest subnormal plus half an ulp rounds to the smallest normal 2^-6 (code 8).
  CHECK(formats::E4M3FromF32(std::ldexp(15.0f, -10)) == 0x08);
  // Between 1 and 1.125 (codes 0x38, 0x39): the midpoint goes to the even code, anything above it up.
  CHECK(formats::E4M3FromF32(1.0625f) == 0x38);
  CHECK(formats::E4M3FromF32(std::nextafter(1.0625f, 2.0f)) == 0x39);
  CHECK(formats::E4M3FromF32(1.1875f) == 0x3a);  // between 0x39 and 0x3a: to even 0x3a
}
