// The scalar references of the weight formats (src/lmkit/quant/format_ref.h): their codes on hand-worked values, and
// every fast path held to them bit for bit on random rows: the INT8 driver at each kernel level (baseline, AVX2,
// AVX-512 where the CPU has them), the FP8 driver, and GGUF Q8_0's block loop.
#include "lmkit/quant/format_ref.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "lmkit/formats/fp8.h"
#include "lmkit/quant/fp8_quantizer.h"
#include "lmkit/quant/gguf.h"
#include "lmkit/quant/quantizer.h"

using namespace lmkit;
using namespace lmkit::quant;
using formats::Int8Convention;

namespace {

// Gaussian rows with the cases the kernels treat apart: exact ties, a zero row, one outlier, subnormal values.
std::vector<float> Rows(uint64_t rows, uint64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (float& v : x) v = nd(rng);
  for (uint64_t c = 0; c < cols; ++c) {
    if (rows > 1) x[cols + c] = 0.0f;
    if (rows > 2) x[2 * cols + c] = static_cast<float>(static_cast<int>(c % 9) - 4) * 0.5f;
    if (rows > 3) x[3 * cols + c] = c % 3 == 0 ? 0.0f : (c % 3 == 1 ? 1e-41f : -3e-42f);
  }
  if (rows > 4) x[4 * cols] = 1e6f;
  return x;
}

}  // namespace

TEST_CASE("format_ref: INT8 codes and scales worked by hand", "[quant]") {
  // absmax 1: the 127.5 convention's scale is fl(1 / 127.5) and 1 / scale rounds to 127.5 or just below it, so +1.0
  // codes to 127 either way (saturated or rounded), -0.5 -> -63.75 -> -64, 0.25 -> 31.875 -> 32, 0.1 -> 12.75 -> 13.
  const float x[5] = {1.0f, -0.5f, 0.25f, 0.1f, 0.0f};
  int8_t q[5];
  float s = -1;
  QuantizeMatrixInt8Ref(x, 1, 5, Granularity{}, Int8Convention::kHalfStep, io::DType::kF32, q, &s);
  CHECK(s == 1.0f / 127.5f);
  CHECK(std::vector<int>(q, q + 5) == std::vector<int>{127, -64, 32, 13, 0});
  // The 127 convention: scale 1/127; -0.4 -> -50.8 -> -51, 0.25 -> 31.75 -> 32, 0.1 -> 12.7 -> 13.
  const float y[5] = {1.0f, -0.4f, 0.25f, 0.1f, 0.0f};
  QuantizeMatrixInt8Ref(y, 1, 5, Granularity{}, Int8Convention::kSymmetric127, io::DType::kF32, q, &s);
  CHECK(s == 1.0f / 127.0f);
  CHECK(std::vector<int>(q, q + 5) == std::vector<int>{127, -51, 32, 13, 0});
  // Groups of one value: each is its own absmax (code 127 at the 127.5 convention, as above); a zero group gets
  // scale 0 and code 0, never NaN.
  const float z[2] = {1.0f, 0.0f};
  float gs[2];
  QuantizeMatrixInt8Ref(z, 1, 2, Granularity{Granularity::Kind::kGroup, 1}, Int8Convention::kHalfStep, io::DType::kF32,
                        q, gs);
  CHECK(std::vector<int>(q, q + 2) == std::vector<int>{127, 0});
  CHECK(gs[0] == 1.0f / 127.5f);
  CHECK(gs[1] == 0.0f);
}

TEST_CASE("format_ref: the INT8 driver gives the reference's codes and scales at every kernel level", "[quant]") {
  for (uint64_t cols : {1u, 13u, 24u, 64u, 1000u, 4099u}) {
    const uint64_t rows = 7;
    const std::vector<float> x = Rows(rows, cols, static_cast<uint32_t>(cols));
    std::vector<uint16_t> bf(x.size());  // the same values as BF16 (the reference reads them widened)
    std::vector<float> bf_wide(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      uint32_t b;
      std::memcpy(&b, &x[i], 4);
      bf[i] = static_cast<uint16_t>(b >> 16);
      bf_wide[i] = io::Bf16ToF32(bf[i]);
    }
    std::vector<Granularity> gs = {Granularity{}, Granularity{Granularity::Kind::kTensor, 0}};
    for (uint64_t size : {13u, 8u, 32u})
      if (cols % size == 0) gs.push_back(Granularity{Granularity::Kind::kGroup, size});
    for (const Granularity& g : gs)
      for (io::DType dt : {io::DType::kF32, io::DType::kBF16})
        for (auto [sdt, conv] : {std::pair{io::DType::kF32, Int8Convention::kHalfStep},
                                 std::pair{io::DType::kBF16, Int8Convention::kHalfStep},
                                 std::pair{io::DType::kF32, Int8Convention::kSymmetric127}}) {
          std::vector<int8_t> ref_codes(rows * cols);
          std::vector<float> ref_scales(g.ScaleCount(rows, cols));
          QuantizeMatrixInt8Ref(dt == io::DType::kF32 ? x.data() : bf_wide.data(), rows, cols, g, conv, sdt,
                                ref_codes.data(), ref_scales.data());
          for (int level : {0, 1, 2}) {  // baseline, AVX2, the run-time choice (AVX-512 where available)
            INFO("cols " << cols << " granularity " << GranularityName(g) << " dtype " << io::DTypeName(dt) << " scale "
                         << io::DTypeName(sdt) << " convention " << static_cast<int>(conv) << " kernels " << level);
            ForceBaselineKernelsForTesting(level == 0);
            ForceAvx2KernelsForTesting(level == 1);
            std::vector<int8_t> codes(rows * cols, 99);
            std::vector<float> scales(ref_scales.size(), -1.0f);
            const void* src = dt == io::DType::kF32 ? static_cast<const void*>(x.data()) : bf.data();
            const Status st =
                QuantizeMatrix(src, dt, rows, cols, {g, conv, sdt}, nullptr, codes.data(), scales.data(), nullptr);
            ForceBaselineKernelsForTesting(false);
            ForceAvx2KernelsForTesting(false);
            REQUIRE(st.ok());
            CHECK(codes == ref_codes);
            CHECK(std::memcmp(scales.data(), ref_scales.data(), scales.size() * 4) == 0);
          }
        }
  }
}

TEST_CASE("format_ref: FP8 E4M3 codes by hand, and the FP8 driver gives the reference's bytes", "[quant]") {
  // absmax 448 gives scale 1: the codes are E4M3 of the values themselves (0x7e = 448, 0x38 = 1.0, 0xb8 = -1.0,
  // 0.0 -> 0x00; 1.0625 lies halfway between 1.0 and 1.125 and rounds to the even mantissa, 1.0).
  const float x[5] = {448.0f, 1.0f, -1.0f, 0.0f, 1.0625f};
  CHECK(Fp8Scale(448.0f, io::DType::kF32) == 1.0f);
  uint8_t q[5];
  QuantizeRowFp8Ref(x, 5, 1.0f, q);
  CHECK(std::vector<int>(q, q + 5) == std::vector<int>{0x7e, 0x38, 0xb8, 0x00, 0x38});
  QuantizeRowFp8Ref(x, 5, 0.0f, q);
  CHECK(std::vector<int>(q, q + 5) == std::vector<int>{0, 0, 0, 0, 0});

  const uint64_t rows = 6, cols = 300;
  const std::vector<float> w = Rows(rows, cols, 5);
  for (const Granularity& g : {Granularity{}, Granularity{Granularity::Kind::kTensor, 0}})
    for (io::DType sdt : {io::DType::kF32, io::DType::kBF16}) {
      std::vector<uint8_t> codes(rows * cols), ref(rows * cols);
      std::vector<float> scales(g.ScaleCount(rows, cols));
      REQUIRE(QuantizeMatrixFp8(w.data(), io::DType::kF32, rows, cols, {g, sdt}, nullptr, codes.data(), scales.data(),
                                nullptr)
                  .ok());
      float tensor_max = 0;
      for (float v : w) tensor_max = std::max(tensor_max, std::fabs(v));
      for (uint64_t r = 0; r < rows; ++r) {
        float m = tensor_max;
        if (g.kind == Granularity::Kind::kChannel) {
          m = 0;
          for (uint64_t c = 0; c < cols; ++c) m = std::max(m, std::fabs(w[r * cols + c]));
        }
        const float s = Fp8Scale(m, sdt);
        CHECK(scales[g.kind == Granularity::Kind::kChannel ? r : 0] == s);
        QuantizeRowFp8Ref(w.data() + r * cols, cols, s, ref.data() + r * cols);
      }
      CHECK(codes == ref);
    }
}

TEST_CASE("format_ref: GGUF Q8_0 blocks by hand, and the block loop gives the reference's bytes", "[quant][gguf]") {
  // max|x| = 127: d = 1 (F16 0x3c00) and halves round away from zero.
  float x[32] = {127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.49999988f, 126.5f, -127.0f};
  uint8_t blk[34];
  QuantizeBlockQ8_0Ref(x, blk);
  CHECK((blk[0] | (blk[1] << 8)) == 0x3c00);
  const int want[8] = {127, 3, -3, 1, -1, 1, 127, -127};
  for (int j = 0; j < 8; ++j) CHECK(static_cast<int8_t>(blk[2 + j]) == want[j]);
  for (int j = 8; j < 32; ++j) CHECK(blk[2 + j] == 0);

  // Random blocks, a zero block and one with a subnormal d (divided, not multiplied by an infinite 1 / d).
  const uint64_t n = 32 * 64;
  std::vector<float> v = Rows(1, n, 9);
  for (int j = 0; j < 32; ++j) v[32 + j] = 0.0f;
  for (int j = 0; j < 32; ++j) v[64 + j] = j % 2 ? 3e-42f : -1e-41f;
  std::vector<uint8_t> fast(n / 32 * 34), ref(n / 32 * 34);
  ErrorStats st;
  float lo = INFINITY, hi = -INFINITY;
  REQUIRE(gguf::QuantizeQ8_0(v.data(), n, fast.data(), &st, &lo, &hi) == gguf::Q8_0Status::kOk);
  for (uint64_t b = 0; b < n / 32; ++b) QuantizeBlockQ8_0Ref(v.data() + 32 * b, ref.data() + 34 * b);
  CHECK(fast == ref);
}
