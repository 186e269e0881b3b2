// GGUF header bytes and ggml's Q8_0 rule (src/lmkit/quant/gguf.h): exact bytes against the GGUF v3 layout written out
// by hand, rounding ties away from zero, fp16 scales, zero blocks.
#include "lmkit/quant/gguf.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "lmkit/io/dtype.h"

using namespace lmkit::quant;
using namespace lmkit::quant::gguf;

namespace {

std::string Le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

}  // namespace

TEST_CASE("gguf: header bytes follow the v3 layout, tensors 32-byte aligned", "[quant][gguf]") {
  GgufHeader h;
  h.AddString("general.architecture", "llama");
  h.AddU32("llama.block_count", 5);
  h.AddF32("llama.rope.freq_base", 10000.0f);
  REQUIRE(h.AddTensor("a", {64, 3}, GgmlType::kQ8_0));  // 6 blocks: 204 bytes
  REQUIRE(h.AddTensor("b", {5}, GgmlType::kF32));       // 20 bytes
  CHECK_FALSE(h.AddTensor(std::string(64, 'x'), {1}, GgmlType::kF32));
  const std::string s = h.Serialize();
  std::string want = "GGUF" + Le(3, 4) + Le(2, 8) + Le(3, 8);
  want += Le(20, 8) + "general.architecture" + Le(8, 4) + Le(5, 8) + "llama";
  want += Le(17, 8) + "llama.block_count" + Le(4, 4) + Le(5, 4);
  want += Le(20, 8) + "llama.rope.freq_base" + Le(6, 4) + Le(0x461c4000, 4);  // 10000.0f
  want += Le(1, 8) + "a" + Le(2, 4) + Le(64, 8) + Le(3, 8) + Le(8, 4) + Le(0, 8);
  want += Le(1, 8) + "b" + Le(1, 4) + Le(5, 8) + Le(0, 4) + Le(224, 8);  // 204 rounded up to 32
  REQUIRE(s.size() % 32 == 0);
  CHECK(s.substr(0, want.size()) == want);
  CHECK(s.find_first_not_of('\0', want.size()) == std::string::npos);
  CHECK(s.size() - want.size() < 32);
  CHECK(h.TensorOffset(1) == 224);
  CHECK(h.PaddingAfter(0) == 20);
  CHECK(h.PaddingAfter(1) == 12);
  CHECK(h.DataBytes() == 256);
  CHECK(TensorBytes(GgmlType::kBF16, {64, 3}) == 384);
}

TEST_CASE("gguf: Q8_0 codes round half away from zero with 1/d, d stored as fp16", "[quant][gguf]") {
  // max|x| = 127 gives d = 1 and 1/d = 1 exactly, so x * (1/d) hits the .5 ties themselves.
  float x[32] = {127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.49999988f, 126.5f, -127.0f, 0.0f, -0.0f};
  for (int j = 10; j < 32; ++j) x[j] = static_cast<float>(j) - 20.25f;
  uint8_t blk[34];
  ErrorStats st;
  float lo = INFINITY, hi = -INFINITY;
  REQUIRE(QuantizeQ8_0(x, 32, blk, &st, &lo, &hi) == Q8_0Status::kOk);
  CHECK((blk[0] | (blk[1] << 8)) == 0x3c00);  // fp16 1.0
  const int8_t want[10] = {127, 3, -3, 1, -1, 1, 127, -127, 0, 0};
  for (int j = 0; j < 10; ++j) CHECK(static_cast<int8_t>(blk[2 + j]) == want[j]);
  for (int j = 10; j < 32; ++j) CHECK(static_cast<int8_t>(blk[2 + j]) == static_cast<int>(std::round(x[j])));
  CHECK(st.count == 32);
  CHECK(st.clipped == 0);
  CHECK(st.max_abs_err == 0.5);  // the ties
  float back[32];
  DequantizeQ8_0(blk, 32, back);
  CHECK(back[1] == 3.0f);
  CHECK(back[7] == -127.0f);
}

TEST_CASE("gguf: Q8_0 scale is fp32 max/127 rounded to fp16, codes use the fp32 scale", "[quant][gguf]") {
  float x[32] = {};
  x[0] = 0.3f;   // d = 0.3 / 127 = 0.0023622..., not an fp16 value
  x[1] = 0.15f;  // 0.15 * (1 / d) = 63.5 up to rounding
  uint8_t blk[34];
  ErrorStats st;
  float lo = INFINITY, hi = -INFINITY;
  REQUIRE(QuantizeQ8_0(x, 32, blk, &st, &lo, &hi) == Q8_0Status::kOk);
  const float d = 0.3f / 127.0f;
  CHECK((blk[0] | (blk[1] << 8)) == lmkit::io::F32ToF16(d));
  const float id = 1.0f / d;
  const float v = 0.15f * id;
  const int want = static_cast<int>(std::floor(v) + (v - std::floor(v) >= 0.5f ? 1 : 0));
  CHECK(static_cast<int8_t>(blk[3]) == want);
  CHECK(static_cast<int8_t>(blk[2]) == 127);
  // Zero blocks: d = 0, zero codes, no NaN in the stats.
  float z[64] = {};
  uint8_t two[68];
  ErrorStats zs;
  REQUIRE(QuantizeQ8_0(z, 64, two, &zs, &lo, &hi) == Q8_0Status::kOk);
  for (uint8_t b : two) CHECK(b == 0);
  CHECK(zs.sum_err2 == 0.0);
  CHECK(lo == 0.0f);
  CHECK(hi == lmkit::io::F16ToF32(lmkit::io::F32ToF16(d)));
  // The largest weight fp16 scales take is 65504 * 127 (8.3e6); NaN and inf are refused whatever the scale.
  float big[32] = {8.3e6f};
  CHECK(QuantizeQ8_0(big, 32, blk, &zs, &lo, &hi) == Q8_0Status::kOk);
  big[0] = 8.4e6f;
  CHECK(QuantizeQ8_0(big, 32, blk, &zs, &lo, &hi) == Q8_0Status::kScaleOverflow);
  big[0] = 1.0f;
  big[31] = NAN;
  CHECK(QuantizeQ8_0(big, 32, blk, &zs, &lo, &hi) == Q8_0Status::kNonFinite);
  big[31] = -INFINITY;
  CHECK(QuantizeQ8_0(big, 32, blk, &zs, &lo, &hi) == Q8_0Status::kNonFinite);
}

TEST_CASE("gguf: a block whose scale is subnormal divides instead of multiplying by an infinite 1/d", "[quant][gguf]") {
  float x[32] = {};
  x[0] = std::ldexp(127.0f, -133);  // d = 2^-133 exactly (subnormal), 1 / d = 2^133 = inf in fp32
  x[1] = std::ldexp(-63.5f, -133);  // x / d = -63.5 exactly
  REQUIRE(std::isinf(1.0f / (x[0] / 127.0f)));
  uint8_t blk[34];
  ErrorStats st;
  float lo = INFINITY, hi = -INFINITY;
  REQUIRE(QuantizeQ8_0(x, 32, blk, &st, &lo, &hi) == Q8_0Status::kOk);
  CHECK(static_cast<int8_t>(blk[2]) == 127);
  CHECK(static_cast<int8_t>(blk[3]) == -64);  // -63.5 away from zero
  for (int j = 4; j < 34; ++j) CHECK(blk[j] == 0);
}
