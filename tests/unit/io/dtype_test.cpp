// DType table and the float conversions: exhaustive round trips, ties, subnormals, inf, NaN, and an independent
// nearest-value check of F32 -> F16/BF16 rounding.
#include "lmkit/io/dtype.h"

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace lmkit::io;

namespace {

float FromBits(uint32_t b) { return std::bit_cast<float>(b); }

// Independent definition of a half's value (IEEE 754 binary16), in double.
double HalfValue(uint16_t h) {
  int sign = (h >> 15) ? -1 : 1;
  int e = (h >> 10) & 0x1f;
  int m = h & 0x3ff;
  if (e == 0) return sign * std::ldexp(m, -24);
  if (e == 31) return m ? std::nan("") : sign * INFINITY;
  return sign * std::ldexp(1024 + m, e - 25);
}

double Bf16Value(uint16_t b) {
  int sign = (b >> 15) ? -1 : 1;
  int e = (b >> 7) & 0xff;
  int m = b & 0x7f;
  if (e == 0) return sign * std::ldexp(m, -133);
  if (e == 255) return m ? std::nan("") : sign * INFINITY;
  return sign * std::ldexp(128 + m, e - 134);
}

// Checks that `got` is a correctly rounded (nearest, ties to even) encoding of x among same-sign neighbours.
template <typename ValueFn>
bool IsNearestEven(float x, uint16_t got, ValueFn value, uint16_t inf_bits) {
  double xv = x;
  double gv = value(got);
  if (std::isinf(gv)) {
    // Overflow to inf is right when x is at least halfway between the largest finite value and the next power.
    uint16_t max_finite = static_cast<uint16_t>((inf_bits - 1) | (got & 0x8000));
    double mf = value(max_finite);
    double next = std::fabs(mf) + (std::fabs(mf) - std::fabs(value(static_cast<uint16_t>(max_finite - 1))));
    return std::fabs(xv) >= (std::fabs(mf) + next) / 2;
  }
  double err = std::fabs(xv - gv);
  for (int d : {-1, 1}) {
    int nb = static_cast<int>(got & 0x7fff) + d;
    if (nb < 0 || nb >= inf_bits) continue;
    double nv = value(static_cast<uint16_t>(nb | (got & 0x8000)));
    double nerr = std::fabs(xv - nv);
    if (nerr < err) return false;
    if (nerr == err && (got & 1)) return false;  // a tie must go to the even encoding
  }
  return true;
}

}  // namespace

TEST_CASE("dtype: table of names and sizes", "[io][dtype]") {
  REQUIRE(AllDTypes().size() == 15);
  const char* names[] = {"BOOL", "U8",  "I8",  "F8_E5M2", "F8_E4M3", "I16", "U16", "F16",
                         "BF16", "I32", "U32", "F32",     "F64",     "I64", "U64"};
  const size_t sizes[] = {1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8};
  for (size_t i = 0; i < 15; ++i) {
    DType t = AllDTypes()[i];
    CHECK(DTypeName(t) == names[i]);
    CHECK(DTypeSize(t) == sizes[i]);
    REQUIRE(ParseDType(names[i]).has_value());
    CHECK(*ParseDType(names[i]) == t);
  }
  CHECK_FALSE(ParseDType("f32").has_value());
  CHECK_FALSE(ParseDType("F4").has_value());
  CHECK_FALSE(ParseDType("").has_value());
  CHECK(IsFloatDType(DType::kBF16));
  CHECK_FALSE(IsFloatDType(DType::kI8));
}

TEST_CASE("dtype: BF16 -> F32 -> BF16 round-trips every non-NaN pattern - NaN stays NaN", "[io][dtype]") {
  for (uint32_t b = 0; b < 65536; ++b) {
    auto h = static_cast<uint16_t>(b);
    float f = Bf16ToF32(h);
    double ref = Bf16Value(h);
    if (std::isnan(ref)) {
      REQUIRE(std::isnan(f));
      REQUIRE(std::isnan(Bf16ToF32(F32ToBf16(f))));
      continue;
    }
    REQUIRE(static_cast<double>(f) == ref);
    REQUIRE(F32ToBf16(f) == h);
  }
}

TEST_CASE("dtype: F16 -> F32 -> F16 round-trips every non-NaN pattern - NaN stays NaN", "[io][dtype]") {
  for (uint32_t b = 0; b < 65536; ++b) {
    auto h = static_cast<uint16_t>(b);
    float f = F16ToF32(h);
    double ref = HalfValue(h);
    if (std::isnan(ref)) {
      REQUIRE(std::isnan(f));
      REQUIRE(std::isnan(F16ToF32(F32ToF16(f))));
      continue;
    }
    REQUIRE(static_cast<double>(f) == ref);
    REQUIRE(F32ToF16(f) == h);
    if (b == 0x8000) REQUIRE(std::signbit(f));
  }
}

TEST_CASE("dtype: F32 -> BF16 rounds to nearest even", "[io][dtype]") {
  CHECK(F32ToBf16(FromBits(0x3f808000)) == 0x3f80);  // 1 + half ulp: tie, stays on even 0x3f80
  CHECK(F32ToBf16(FromBits(0x3f818000)) == 0x3f82);  // tie from odd 0x3f81 goes up to even
  CHECK(F32ToBf16(FromBits(0x3f808001)) == 0x3f81);  // just above the tie
  CHECK(F32ToBf16(FromBits(0x3f807fff)) == 0x3f80);  // just below
  CHECK(F32ToBf16(FromBits(0xbf808001)) == 0xbf81);  // negative
  CHECK(F32ToBf16(FromBits(0x7f7fffff)) == 0x7f80);  // FLT_MAX rounds up to inf
  CHECK(F32ToBf16(FromBits(0x7f7f7fff)) == 0x7f7f);
  CHECK(F32ToBf16(FromBits(0x00010000)) == 0x0001);  // subnormal kept
  CHECK(F32ToBf16(FromBits(0x00008000)) == 0x0000);  // subnormal tie to even (zero)
  CHECK(F32ToBf16(FromBits(0x00018000)) == 0x0002);
  CHECK(F32ToBf16(INFINITY) == 0x7f80);
  CHECK(F32ToBf16(-INFINITY) == 0xff80);
  CHECK(F32ToBf16(FromBits(0x7f800001)) == 0x7fc0);  // signalling NaN with a low payload: quiet, still NaN
  CHECK(F32ToBf16(FromBits(0xffc00000)) == 0xffc0);
  CHECK(F32ToBf16(FromBits(0x7fffffff)) == 0x7fff);  // payload all ones must not carry into the sign
}

TEST_CASE("dtype: F32 -> F16 rounds to nearest even, with subnormals and overflow", "[io][dtype]") {
  CHECK(F32ToF16(1.0f) == 0x3c00);
  CHECK(F32ToF16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie -> even
  CHECK(F32ToF16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie from odd -> up
  CHECK(F32ToF16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)) == 0x3c01);
  CHECK(F32ToF16(65504.0f) == 0x7bff);
  CHECK(F32ToF16(std::nextafter(65520.0f, 0.0f)) == 0x7bff);
  CHECK(F32ToF16(65520.0f) == 0x7c00);  // halfway to 2^16: ties to even = inf
  CHECK(F32ToF16(-1e9f) == 0xfc00);
  CHECK(F32ToF16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(F32ToF16(std::ldexp(1.0f, -25)) == 0x0000);  // tie between 0 and 2^-24 -> 0
  CHECK(F32ToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  CHECK(F32ToF16(3 * std::ldexp(1.0f, -25)) == 0x0002);        // tie 1.5 units -> 2
  CHECK(F32ToF16(1023.5f * std::ldexp(1.0f, -24)) == 0x0400);  // largest subnormal + half -> min normal
  CHECK(F32ToF16(std::ldexp(1.0f, -14)) == 0x0400);
  CHECK(F32ToF16(-std::ldexp(1.0f, -30)) == 0x8000);  // underflow keeps the sign
  CHECK(F32ToF16(INFINITY) == 0x7c00);
  CHECK(F32ToF16(-INFINITY) == 0xfc00);
  uint16_t nan = F32ToF16(FromBits(0x7f800001));
  CHECK((nan & 0x7c00) == 0x7c00);
  CHECK((nan & 0x3ff) != 0);
  CHECK(std::isnan(F16ToF32(F32ToF16(std::nanf("")))));
}

TEST_CASE("dtype: random floats convert to the nearest F16/BF16 (independent check)", "[io][dtype]") {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> bits_dist;
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = bits_dist(rng);
    // Bias half of the samples into F16's range so its rounding paths (normal/subnormal) are all exercised.
    if (i % 2) bits = (bits & 0x807fffffu) | ((100u + bits % 45u) << 23);
    float x = FromBits(bits);
    if (std::isnan(x)) continue;
    uint16_t h = F32ToF16(x);
    INFO("x bits " << bits);
    REQUIRE(IsNearestEven(x, h, HalfValue, 0x7c00));
    uint16_t b = F32ToBf16(x);
    REQUIRE(IsNearestEven(x, b, Bf16Value, 0x7f80));
  }
}

TEST_CASE("dtype: bulk conversions equal the scalar ones, on unaligned buffers", "[io][dtype]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> d;
  const size_t n = 1001;
  std::vector<float> src(n);
  for (auto& x : src) x = FromBits(d(rng));
  std::vector<uint8_t> buf(2 * n + 1);
  F32ToF16(src.data(), buf.data() + 1, n);
  std::vector<float> back(n);
  F16ToF32(buf.data() + 1, back.data(), n);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, buf.data() + 1 + 2 * i, 2);
    REQUIRE(h == F32ToF16(src[i]));
    REQUIRE(std::bit_cast<uint32_t>(back[i]) == std::bit_cast<uint32_t>(F16ToF32(h)));
  }
  F32ToBf16(src.data(), buf.data() + 1, n);
  Bf16ToF32(buf.data() + 1, back.data(), n);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, buf.data() + 1 + 2 * i, 2);
    REQUIRE(h == F32ToBf16(src[i]));
    REQUIRE(std::bit_cast<uint32_t>(back[i]) == std::bit_cast<uint32_t>(Bf16ToF32(h)));
  }
}

TEST_CASE("dtype: every dtype converts to float by value", "[io][dtype]") {
  auto one = [](DType t, std::vector<uint8_t> bytes) {
    float f = -12345;
    double d = -12345;
    ConvertToF32(t, bytes.data(), &f, 1);
    ConvertToF64(t, bytes.data(), &d, 1);
    if (!std::isnan(f)) CHECK(static_cast<double>(f) == static_cast<float>(d));
    return std::pair{f, d};
  };
  CHECK(one(DType::kBool, {2}).first == 1.0f);
  CHECK(one(DType::kBool, {0}).first == 0.0f);
  CHECK(one(DType::kU8, {255}).first == 255.0f);
  CHECK(one(DType::kI8, {0x80}).first == -128.0f);
  CHECK(one(DType::kI16, {0x00, 0x80}).first == -32768.0f);
  CHECK(one(DType::kU16, {0xff, 0xff}).first == 65535.0f);
  CHECK(one(DType::kF16, {0x00, 0x3c}).first == 1.0f);
  CHECK(one(DType::kBF16, {0xc0, 0xbf}).first == -1.5f);
  CHECK(one(DType::kI32, {0xfe, 0xff, 0xff, 0xff}).first == -2.0f);
  CHECK(one(DType::kU32, {0, 0, 0, 0x80}).first == 2147483648.0f);
  CHECK(one(DType::kF32, {0, 0, 0x80, 0x3f}).first == 1.0f);
  CHECK(one(DType::kF64, {0, 0, 0, 0, 0, 0, 0xf0, 0x3f}).first == 1.0f);
  CHECK(one(DType::kI64, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}).second == -1.0);
  CHECK(one(DType::kU64, {0, 0, 0, 0, 0, 0, 0x10, 0}).second == std::ldexp(1.0, 52));
  CHECK(one(DType::kI64, {1, 0, 0, 0, 0, 0, 0x10, 0}).second == std::ldexp(1.0, 52) + 1);  // exact in double
  // F8_E4M3 (fn): bias 7, no inf, 0x7f NaN, max 448
  CHECK(F8E4M3ToF32(0x38) == 1.0f);
  CHECK(F8E4M3ToF32(0x7e) == 448.0f);
  CHECK(F8E4M3ToF32(0xfe) == -448.0f);
  CHECK(std::isnan(F8E4M3ToF32(0x7f)));
  CHECK(F8E4M3ToF32(0x01) == std::ldexp(1.0f, -9));
  CHECK(F8E4M3ToF32(0x78) == 256.0f);
  CHECK(one(DType::kF8E4M3, {0x40}).first == 2.0f);
  // F8_E5M2: the top byte of an F16
  CHECK(F8E5M2ToF32(0x3c) == 1.0f);
  CHECK(F8E5M2ToF32(0x7b) == 57344.0f);
  CHECK(std::isinf(F8E5M2ToF32(0x7c)));
  CHECK(std::isnan(F8E5M2ToF32(0x7d)));
  CHECK(F8E5M2ToF32(0x01) == std::ldexp(1.0f, -16));
  CHECK(one(DType::kF8E5M2, {0xc0}).first == -2.0f);
}

TEST_CASE("dtype: ConvertFromF32 to float dtypes - integers are refused", "[io][dtype]") {
  const float in[3] = {1.0f, -2.5f, 65536.0f};
  uint8_t out[24];
  REQUIRE(ConvertFromF32(DType::kF16, in, out, 3).ok());
  float back[3];
  F16ToF32(out, back, 3);
  CHECK(back[0] == 1.0f);
  CHECK(back[1] == -2.5f);
  CHECK(std::isinf(back[2]));
  REQUIRE(ConvertFromF32(DType::kF64, in, out, 3).ok());
  double d[3];
  std::memcpy(d, out, sizeof d);
  CHECK(d[1] == -2.5);
  REQUIRE(ConvertFromF32(DType::kBF16, in, out, 3).ok());
  Bf16ToF32(out, back, 3);
  CHECK(back[2] == 65536.0f);
  auto st = ConvertFromF32(DType::kI8, in, out, 3);
  CHECK(st.code() == lmkit::ErrorCode::kUnsupported);
}

TEST_CASE("dtype: bulk F16/BF16 -> F32 equal the scalar conversions bit for bit on every pattern", "[io][dtype]") {
  // The bulk loops run 16 lanes at a time (AVX-512 / AVX2 / baseline clones chosen at run time), with a scalar tail:
  // every half and bfloat16 bit pattern, NaN payloads and subnormals included, through both, at an odd offset and
  // length so the tail runs too.
  const size_t n = 65536 + 7;
  std::vector<uint8_t> buf(2 * n + 1);
  for (size_t i = 0; i < n; ++i) {
    const auto h = static_cast<uint16_t>(i * 40503u);  // odd multiplier: a permutation of the 65536 patterns
    std::memcpy(buf.data() + 1 + 2 * i, &h, 2);
  }
  std::vector<float> f16(n), bf16(n);
  F16ToF32(buf.data() + 1, f16.data(), n);
  Bf16ToF32(buf.data() + 1, bf16.data(), n);
  std::vector<float> via_convert(n);
  ConvertToF32(DType::kF16, buf.data() + 1, via_convert.data(), n);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, buf.data() + 1 + 2 * i, 2);
    INFO("pattern " << h);
    REQUIRE(std::bit_cast<uint32_t>(f16[i]) == std::bit_cast<uint32_t>(F16ToF32(h)));
    REQUIRE(std::bit_cast<uint32_t>(via_convert[i]) == std::bit_cast<uint32_t>(f16[i]));
    REQUIRE(std::bit_cast<uint32_t>(bf16[i]) == std::bit_cast<uint32_t>(Bf16ToF32(h)));
  }
}
