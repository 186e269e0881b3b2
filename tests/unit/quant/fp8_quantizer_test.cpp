// The FP8 E4M3 weight quantizer (quant/fp8_quantizer.h): its definition element by element, the error bound, the
// metrics against an fp64 comparison, determinism, the streaming variant, and its refusals.
#include "lmkit/quant/fp8_quantizer.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "lmkit/formats/fp8.h"
#include "lmkit/io/dtype.h"

using namespace lmkit;
using namespace lmkit::quant;

namespace {

struct Fp8Out {
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  ErrorStats stats;
};

Status RunFp8(const std::vector<float>& x, uint64_t rows, uint64_t cols, Granularity g, Fp8Out* o,
              io::DType scale_dtype = io::DType::kF32, ThreadPool* pool = nullptr) {
  o->codes.assign(rows * cols, 0xaa);
  o->scales.assign(g.ScaleCount(rows, cols), -1.0f);
  return QuantizeMatrixFp8(x.data(), io::DType::kF32, rows, cols, Fp8MatrixOptions{g, scale_dtype}, pool,
                           o->codes.data(), o->scales.data(), &o->stats);
}

std::vector<float> Fp8Gaussian(uint64_t n, uint32_t seed, float sigma = 0.02f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

const Granularity kFp8Channel{};
const Granularity kFp8Tensor{Granularity::Kind::kTensor, 0};

}  // namespace

TEST_CASE("fp8 quantizer: codes are E4M3 of x / s with s = absmax / 448 rounded up, zero rows stay zero",
          "[quant][fp8]") {
  const uint64_t rows = 5, cols = 37;
  std::vector<float> x = Fp8Gaussian(rows * cols, 3);
  x[7] = 0.5f;                                              // an outlier sets row 0's scale
  for (uint64_t c = 0; c < cols; ++c) x[2 * cols + c] = 0;  // a zero row
  for (io::DType sd : {io::DType::kF32, io::DType::kBF16, io::DType::kF16}) {
    Fp8Out o;
    REQUIRE(RunFp8(x, rows, cols, kFp8Channel, &o, sd).ok());
    double x2 = 0, e2 = 0;
    for (uint64_t r = 0; r < rows; ++r) {
      float absmax = 0;
      for (uint64_t c = 0; c < cols; ++c) absmax = std::max(absmax, std::fabs(x[r * cols + c]));
      const float s = o.scales[r];
      CHECK(s == Fp8Scale(absmax, sd));
      CHECK(static_cast<double>(s) * 448 >= absmax);  // rounded up: no value past the range
      for (uint64_t c = 0; c < cols; ++c) {
        const float v = x[r * cols + c];
        const uint8_t want = s > 0 ? formats::E4M3FromF32(v / s) : 0;
        CHECK(o.codes[r * cols + c] == want);
        const double xhat = static_cast<double>(formats::E4M3ToF32(o.codes[r * cols + c]) * s);
        // 3 mantissa bits: half an ulp is 2^-4 relative in the normal range, 2^-10 * s below it.
        CHECK(std::fabs(v - xhat) <= std::max(std::fabs(static_cast<double>(v)) * 0x1p-4, s * 0x1p-10) * (1 + 1e-6));
        x2 += static_cast<double>(v) * v;
        e2 += (v - xhat) * (v - xhat);
      }
    }
    CHECK(o.scales[2] == 0);
    CHECK(o.stats.count == rows * cols);
    CHECK(o.stats.clipped == 0);
    CHECK(o.stats.sum_x2 == Approx(x2).epsilon(1e-12));
    CHECK(o.stats.sum_err2 == Approx(e2).epsilon(1e-12));
    // E4M3 keeps 3 mantissa bits (relative error up to 2^-4): 38.5-39.1 dB on these Gaussian rows.
    CHECK(o.stats.SqnrDb() > 37);
    CHECK(o.stats.SqnrDb() < 41);
  }
}

TEST_CASE("fp8 quantizer: per-tensor scale, same bytes for any thread count and through streams", "[quant][fp8]") {
  const uint64_t rows = 67, cols = 50;
  const std::vector<float> x = Fp8Gaussian(rows * cols, 9);
  for (const Granularity& g : {kFp8Channel, kFp8Tensor}) {
    Fp8Out one;
    REQUIRE(RunFp8(x, rows, cols, g, &one).ok());
    if (g.kind == Granularity::Kind::kTensor) {
      float absmax = 0;
      for (float v : x) absmax = std::max(absmax, std::fabs(v));
      CHECK(one.scales.size() == 1);
      CHECK(one.scales[0] == Fp8Scale(absmax, io::DType::kF32));
    }
    for (unsigned threads : {2u, 3u}) {
      ThreadPool pool(threads);
      Fp8Out many;
      REQUIRE(RunFp8(x, rows, cols, g, &many, io::DType::kF32, &pool).ok());
      CHECK(many.codes == one.codes);
      CHECK(many.scales == one.scales);
      CHECK(std::memcmp(&many.stats, &one.stats, sizeof(ErrorStats)) == 0);
      // Streams: rows read and codes written in blocks from the workers.
      std::vector<int8_t> streamed(rows * cols, 0);
      RowStreams s;
      s.read = [&](uint64_t first, uint64_t count, uint8_t* dst) {
        std::memcpy(dst, x.data() + first * cols, count * cols * 4);
        return Status::Ok();
      };
      s.write = [&](uint64_t first, uint64_t count, const int8_t* codes) {
        std::memcpy(streamed.data() + first * cols, codes, count * cols);
        return Status::Ok();
      };
      std::vector<float> scales(g.ScaleCount(rows, cols));
      ErrorStats st;
      REQUIRE(QuantizeMatrixFp8(s, io::DType::kF32, rows, cols, Fp8MatrixOptions{g, io::DType::kF32}, &pool,
                                scales.data(), &st)
                  .ok());
      CHECK(std::memcmp(streamed.data(), one.codes.data(), streamed.size()) == 0);
      CHECK(scales == one.scales);
      CHECK(std::memcmp(&st, &one.stats, sizeof(ErrorStats)) == 0);
    }
  }
}

TEST_CASE("fp8 quantizer: NaN, weights whose dequantized code overflows and group scales are errors", "[quant][fp8]") {
  std::vector<float> x = Fp8Gaussian(4 * 8, 1);
  x[2 * 8 + 5] = std::numeric_limits<float>::quiet_NaN();
  Fp8Out o;
  Status st = RunFp8(x, 4, 8, kFp8Channel, &o);
  CHECK(st.code() == ErrorCode::kInvalidInput);
  CHECK(st.message() == "non-finite value at [2, 5]");
  st = RunFp8(x, 4, 8, kFp8Tensor, &o);
  CHECK(st.message() == "non-finite value at [2, 5]");
  // |w| = 3.4e38 codes in F32: 448 * s is about |w| (INT8's code -128 is what overflows there, quantizer_test.cpp).
  std::vector<float> big = Fp8Gaussian(2 * 8, 2);
  big[8 + 3] = 3.4e38f;
  REQUIRE(RunFp8(big, 2, 8, kFp8Channel, &o).ok());
  CHECK(std::isfinite(o.stats.SqnrDb()));
  CHECK(std::isfinite(o.stats.max_abs_err));
  CHECK(RunFp8(big, 2, 8, kFp8Tensor, &o).ok());
  // F16's range ends at 65504 and its scales are coarse: 65504 / 448 rounds up to 146.25, and 448 * 146.25 = 65520.
  std::vector<float> h = Fp8Gaussian(8, 4);
  h[0] = 65504.0f;
  st = RunFp8(h, 1, 8, kFp8Channel, &o, io::DType::kF16);
  CHECK(st.code() == ErrorCode::kInvalidInput);
  CHECK(st.message() ==
        "|w| = 65504 in row 0: 448 times its FP8 scale is beyond the range of F16, so a loader would "
        "dequantize it to inf");
  h[0] = 60000.0f;
  CHECK(RunFp8(h, 1, 8, kFp8Channel, &o, io::DType::kF16).ok());
  CHECK(RunFp8(x, 4, 8, Granularity{Granularity::Kind::kGroup, 4}, &o).code() == ErrorCode::kInvalidInput);
}
