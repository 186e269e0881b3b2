// The CPU reference quantizer: rounding ties, the 127 vs 127.5 conventions, scale rounding per dtype, zero channels,
// non-finite input, granularities, thread-count independence and the error metrics.
#include "lmkit/quant/quantizer.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "lmkit/io/dtype.h"

using namespace lmkit;
using namespace lmkit::quant;
using formats::Int8Convention;

namespace {

struct Out {
  std::vector<int8_t> codes;
  std::vector<float> scales;
  ErrorStats stats;
};

Out Run(const std::vector<float>& x, uint64_t rows, uint64_t cols, Granularity g, Int8Convention c,
        io::DType scale_dtype = io::DType::kF32, ThreadPool* pool = nullptr) {
  Out o;
  o.codes.assign(rows * cols, 99);
  o.scales.assign(g.ScaleCount(rows, cols), -1.0f);
  QuantizeMatrixOptions opt{g, c, scale_dtype};
  Status st =
      QuantizeMatrix(x.data(), io::DType::kF32, rows, cols, opt, pool, o.codes.data(), o.scales.data(), &o.stats);
  REQUIRE(st.ok());
  return o;
}

Granularity Channel() { return Granularity{}; }

std::vector<int> Ints(const std::vector<int8_t>& v) { return std::vector<int>(v.begin(), v.end()); }

}  // namespace

TEST_CASE("quantizer: exact .5 ties round half to even - 127.5 convention saturates +absmax", "[quant]") {
  // absmax 127.5 -> scale exactly 1.0 under absmax/127.5, so x * (1/scale) is exact and ties are real ties.
  std::vector<float> x = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, 127.5f, -127.5f, 3.49f};
  Out o = Run(x, 1, x.size(), Channel(), Int8Convention::kHalfStep);
  CHECK(o.scales[0] == 1.0f);
  CHECK(Ints(o.codes) == std::vector<int>{0, 2, 2, 0, -2, -2, 126, 127, -128, 3});
  CHECK(o.stats.clipped == 1);  // +127.5 -> 128 -> 127
  CHECK(o.stats.max_abs_err == 0.5);
}

TEST_CASE("quantizer: 127 convention uses the range -127..127 and absmax/127", "[quant]") {
  std::vector<float> x = {0.5f, 1.5f, 2.5f, -126.5f, 127.0f, -127.0f};
  Out o = Run(x, 1, x.size(), Channel(), Int8Convention::kSymmetric127);
  CHECK(o.scales[0] == 1.0f);
  CHECK(Ints(o.codes) == std::vector<int>{0, 2, 2, -126, 127, -127});
  CHECK(o.stats.clipped == 0);
  // The same row under the other convention: scale 127/127.5 and -127 -> -127.5 -> -128 is representable.
  Out h = Run(x, 1, x.size(), Channel(), Int8Convention::kHalfStep);
  CHECK(h.scales[0] == 127.0f / 127.5f);
  CHECK(h.codes[5] == -128);
  CHECK(h.codes[4] == 127);
  CHECK(h.stats.clipped == 1);
}

TEST_CASE("quantizer: zero channels give scale 0 and zero codes, never NaN", "[quant]") {
  std::vector<float> x(3 * 4, 0.0f);
  x[4] = 1.0f;  // row 1 non-zero
  Out o = Run(x, 3, 4, Channel(), Int8Convention::kHalfStep);
  CHECK(o.scales == std::vector<float>{0.0f, 1.0f / 127.5f, 0.0f});
  for (int i : {0, 1, 2, 3, 8, 9, 10, 11}) CHECK(o.codes[i] == 0);
  CHECK(o.codes[4] == 127);
  CHECK(std::isfinite(o.stats.Cosine()));
  Out z = Run(std::vector<float>(8, 0.0f), 2, 4, Granularity{Granularity::Kind::kTensor, 0}, Int8Convention::kHalfStep);
  CHECK(z.scales[0] == 0.0f);
  CHECK(z.stats.Cosine() == 1.0);
  for (int8_t c : z.codes) CHECK(c == 0);
}

TEST_CASE("quantizer: a subnormal scale whose inverse overflows codes by division, within scale/2", "[quant]") {
  // absmax 1e-41 (itself subnormal): absmax / 127.5 is about 56 * 2^-149, whose reciprocal is inf. Multiplying by it
  // used to saturate every non-zero value (errors up to 126 scales) and turn 0 * inf into NaN stats; and a scale
  // rounded to nearest at that precision (6 bits) could leave absmax beyond 127.5 scales.
  // Rows 2 and 3 end at 7050 and 7020 * 2^-149, where the nearest subnormal scale is below absmax / 127.5 (55 against
  // 55.29) and absmax / 127 (55 against 55.28): the scale must be rounded up.
  const uint64_t cols = 103;  // vector bodies and scalar tails
  const uint64_t rows = 4;
  std::vector<float> x(rows * cols);
  for (uint64_t c = 0; c < cols; ++c) {
    const double t = -1 + 2 * static_cast<double>(c) / (cols - 1);
    x[c] = static_cast<float>(1e-41 * t);                               // spread over [-1e-41, 1e-41]
    x[cols + c] = c % 3 == 0 ? 0.0f : (c % 3 == 1 ? 3e-42f : -7e-43f);  // zeros and two values
    x[2 * cols + c] = static_cast<float>(std::ldexp(7050.0 * t, -149));
    x[3 * cols + c] = static_cast<float>(std::ldexp(7020.0 * t, -149));
  }
  x[cols + 1] = 1e-41f;
  for (auto conv : {Int8Convention::kHalfStep, Int8Convention::kSymmetric127}) {
    for (io::DType sdt : {io::DType::kF32, io::DType::kBF16}) {
      Out o = Run(x, rows, cols, Channel(), conv, sdt);
      for (uint64_t r = 0; r < rows; ++r) {
        const float s = o.scales[r];
        INFO("convention " << static_cast<int>(conv) << ", scale dtype " << io::DTypeName(sdt) << ", row " << r);
        REQUIRE(s > 0.0f);
        REQUIRE(std::isinf(1.0f / s));
        for (uint64_t c = 0; c < cols; ++c) {
          const double err = std::fabs(static_cast<double>(x[r * cols + c]) - o.codes[r * cols + c] * double{s});
          CHECK(err <= 0.5 * s);
          if (x[r * cols + c] == 0.0f) CHECK(o.codes[r * cols + c] == 0);
        }
      }
      CHECK(std::isfinite(o.stats.SqnrDb()));
      CHECK(o.stats.clipped <= rows);  // at most +absmax per row (127.5 scales -> 128 -> 127)
    }
  }
}

TEST_CASE("quantizer: NaN or Inf is an error naming the position", "[quant]") {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    for (auto g : {Channel(), Granularity{Granularity::Kind::kTensor, 0}, Granularity{Granularity::Kind::kGroup, 2}}) {
      std::vector<float> x(4 * 6, 1.0f);
      x[2 * 6 + 3] = bad;
      std::vector<int8_t> codes(x.size());
      std::vector<float> scales(g.ScaleCount(4, 6));
      Status st = QuantizeMatrix(x.data(), io::DType::kF32, 4, 6, {g, Int8Convention::kHalfStep, io::DType::kF32},
                                 nullptr, codes.data(), scales.data(), nullptr);
      REQUIRE_FALSE(st.ok());
      CHECK(st.code() == ErrorCode::kInvalidInput);
      CHECK(st.message() == "non-finite value at [2, 3]");
    }
  }
}

TEST_CASE("quantizer: 16-bit scales are rounded up so every error stays within scale/2", "[quant]") {
  // absmax / 127.5 = 0.01 is not representable in BF16 or F16; round-to-nearest would be below it for BF16.
  std::vector<float> x = {1.275f, -1.275f, 0.3f, 1.2f};
  for (io::DType dt : {io::DType::kBF16, io::DType::kF16}) {
    Out o = Run(x, 1, x.size(), Channel(), Int8Convention::kHalfStep, dt);
    float exact = 1.275f / 127.5f;
    CHECK(o.scales[0] >= exact);
    // The stored value is representable and is the next one up: one step less is below `exact`.
    std::vector<uint16_t> bits(1);
    io::ConvertFromF32(dt, &o.scales[0], bits.data(), 1).ok();
    float back = dt == io::DType::kBF16 ? io::Bf16ToF32(bits[0]) : io::F16ToF32(bits[0]);
    CHECK(back == o.scales[0]);
    float below = dt == io::DType::kBF16 ? io::Bf16ToF32(bits[0] - 1) : io::F16ToF32(bits[0] - 1);
    CHECK(below < exact);
    for (size_t i = 0; i < x.size(); ++i)
      CHECK(std::fabs(x[i] - o.codes[i] * o.scales[0]) <= o.scales[0] * (0.5f + 2e-5f));
  }
  // Round-to-nearest BF16 of 0.01 is 0.010009765625 > 0.01 here, so also check a case where nearest is below:
  // 0.0101 -> nearest BF16 0.010070800781 < 0.0101.
  float target = 0.0101f;
  CHECK(StoredScale(target * 127.5f, Int8Convention::kHalfStep, io::DType::kBF16) >= target * 127.5f / 127.5f);
  CHECK(io::Bf16ToF32(io::F32ToBf16(target)) < target);
}

TEST_CASE("quantizer: F16 and BF16 inputs give the codes of their float values", "[quant]") {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  const uint64_t rows = 9, cols = 40;
  std::vector<float> x(rows * cols);
  for (float& v : x) v = nd(rng);
  for (io::DType dt : {io::DType::kBF16, io::DType::kF16}) {
    std::vector<uint16_t> half(x.size());
    REQUIRE(io::ConvertFromF32(dt, x.data(), half.data(), x.size()).ok());
    std::vector<float> back(x.size());
    io::ConvertToF32(dt, half.data(), back.data(), x.size());
    Out ref = Run(back, rows, cols, Channel(), Int8Convention::kHalfStep, dt);
    std::vector<int8_t> codes(x.size());
    std::vector<float> scales(rows);
    REQUIRE(QuantizeMatrix(half.data(), dt, rows, cols, {Channel(), Int8Convention::kHalfStep, dt}, nullptr,
                           codes.data(), scales.data(), nullptr)
                .ok());
    CHECK(codes == ref.codes);
    CHECK(scales == ref.scales);
  }
}

TEST_CASE("quantizer: every finite F16 value is read as its float value", "[quant]") {
  // The F16 row loader uses the CPU's conversion instruction where it has one; the reference converts with io's
  // portable code. All 63,488 finite bit patterns (subnormals, +-0, +-65504) in order, 1024 per row: a row is one
  // sign and exponent with every mantissa, so its codes tell each value apart (one scale over mixed magnitudes would
  // code all but the largest to 0). The rows are reversed so that the order is not that of the bit patterns.
  std::vector<uint16_t> half;
  for (uint32_t b = 0; b < 65536; ++b)
    if (((b >> 10) & 0x1f) != 0x1f) half.push_back(static_cast<uint16_t>(b));
  REQUIRE(half.size() == 62 * 1024);
  for (size_t r = 0; r < 62; ++r) std::reverse(half.begin() + r * 1024, half.begin() + (r + 1) * 1024);
  const uint64_t rows = 62, cols = 1024;
  std::vector<float> back(half.size());
  io::ConvertToF32(io::DType::kF16, half.data(), back.data(), back.size());
  Out ref = Run(back, rows, cols, Channel(), Int8Convention::kHalfStep, io::DType::kF32);
  std::vector<int8_t> codes(half.size());
  std::vector<float> scales(rows);
  REQUIRE(QuantizeMatrix(half.data(), io::DType::kF16, rows, cols,
                         {Channel(), Int8Convention::kHalfStep, io::DType::kF32}, nullptr, codes.data(), scales.data(),
                         nullptr)
              .ok());
  CHECK(codes == ref.codes);
  CHECK(scales == ref.scales);
}

TEST_CASE("quantizer: granularities, shapes and thread-count independence", "[quant]") {
  std::mt19937 rng(1);
  std::student_t_distribution<float> td(4.0f);
  const uint64_t rows = 37, cols = 64;
  std::vector<float> x(rows * cols);
  for (float& v : x) v = td(rng);
  CHECK(Granularity{}.ScaleShape(rows, cols) == std::vector<uint64_t>{rows, 1});
  CHECK((Granularity{Granularity::Kind::kGroup, 16}.ScaleShape(rows, cols)) == std::vector<uint64_t>{rows, 4});
  CHECK((Granularity{Granularity::Kind::kTensor, 0}.ScaleShape(rows, cols)) == std::vector<uint64_t>{1});
  ThreadPool pool(3);
  double sqnr_tensor = 0, sqnr_channel = 0, sqnr_group = 0;
  for (auto g :
       {Granularity{Granularity::Kind::kTensor, 0}, Granularity{}, Granularity{Granularity::Kind::kGroup, 16}}) {
    Out a = Run(x, rows, cols, g, Int8Convention::kHalfStep);
    Out b = Run(x, rows, cols, g, Int8Convention::kHalfStep, io::DType::kF32, &pool);
    CHECK(a.codes == b.codes);
    CHECK(a.scales == b.scales);
    CHECK(a.stats.sum_err2 == b.stats.sum_err2);
    CHECK(a.stats.sum_x_xhat == b.stats.sum_x_xhat);
    // Metrics agree with an independent fp64 comparison of the dequantized values.
    std::vector<float> xh(x.size());
    DequantizeMatrix(a.codes.data(), a.scales.data(), rows, cols, g, xh.data());
    ErrorStats ref = CompareValues(x.data(), xh.data(), x.size());
    // The metric uses the exact xhat = code * scale; the reference rounds it to fp32 first (~3e-8 relative apart).
    CHECK(a.stats.SqnrDb() == Approx(ref.SqnrDb()).epsilon(1e-6));
    CHECK(a.stats.Cosine() == Approx(ref.Cosine()).epsilon(1e-10));
    CHECK(a.stats.max_abs_err == ref.max_abs_err);
    for (uint64_t i = 0; i < x.size(); ++i) {
      float s = g.kind == Granularity::Kind::kTensor    ? a.scales[0]
                : g.kind == Granularity::Kind::kChannel ? a.scales[i / cols]
                                                        : a.scales[(i / cols) * 4 + (i % cols) / 16];
      REQUIRE(std::fabs(x[i] - xh[i]) <= s * (0.5f + 2e-5f));  // scale/2 + fp32 slack (int8_format.h)
    }
    if (g.kind == Granularity::Kind::kTensor) sqnr_tensor = a.stats.SqnrDb();
    if (g.kind == Granularity::Kind::kChannel) sqnr_channel = a.stats.SqnrDb();
    if (g.kind == Granularity::Kind::kGroup) sqnr_group = a.stats.SqnrDb();
  }
  // Heavy tails: finer scales help a lot (reference/quant.md: Student-t(4) 15.8 / 31.7 dB at 4096 columns).
  CHECK(sqnr_channel > sqnr_tensor + 3);
  CHECK(sqnr_group > sqnr_channel);
  CHECK_FALSE(ParseGranularity("group:0").ok());
  CHECK_FALSE(ParseGranularity("row").ok());
  CHECK(GranularityName(*ParseGranularity("group:128")) == "group:128");
  std::vector<int8_t> codes(x.size());
  std::vector<float> scales(rows * 2);
  Status st = QuantizeMatrix(x.data(), io::DType::kF32, rows, cols,
                             {Granularity{Granularity::Kind::kGroup, 48}, Int8Convention::kHalfStep, io::DType::kF32},
                             nullptr, codes.data(), scales.data(), nullptr);
  CHECK(st.message() == "group size 48 does not divide the 64 columns");
}

TEST_CASE("quantizer: codes and metrics do not depend on the weights' magnitude", "[quant]") {
  // Scaling every weight by a power of two scales the scales and nothing else, so the codes must be the same and the
  // metrics (ratios) equal up to the sums' rounding. The fp32 lane partials used to overflow above ~4.6e18 (SQNR NaN)
  // and underflow near 1e-19 and below (sums missing most of the row).
  std::mt19937 rng(2);
  std::student_t_distribution<float> td(4.0f);
  const uint64_t rows = 9, cols = 1000;  // vector bodies and tails
  std::vector<float> x(rows * cols);
  for (float& v : x) v = td(rng);
  for (auto g :
       {Granularity{}, Granularity{Granularity::Kind::kTensor, 0}, Granularity{Granularity::Kind::kGroup, 40}}) {
    const Out base = Run(x, rows, cols, g, Int8Convention::kHalfStep);
    for (int e : {-100, -45, 70, 120}) {
      INFO("granularity " << GranularityName(g) << ", 2^" << e);
      std::vector<float> y(x.size());
      for (size_t i = 0; i < x.size(); ++i) y[i] = std::ldexp(x[i], e);
      const Out o = Run(y, rows, cols, g, Int8Convention::kHalfStep);
      CHECK(o.codes == base.codes);
      for (size_t i = 0; i < o.scales.size(); ++i) CHECK(o.scales[i] == std::ldexp(base.scales[i], e));
      CHECK(o.stats.SqnrDb() == Approx(base.stats.SqnrDb()).epsilon(1e-9));
      CHECK(o.stats.Cosine() == Approx(base.stats.Cosine()).epsilon(1e-12));
      CHECK(o.stats.clipped == base.stats.clipped);
      CHECK(o.stats.max_abs_err == std::ldexp(base.stats.max_abs_err, e));
    }
  }
}

TEST_CASE("quantizer: Gaussian per-channel and per-tensor SQNR match the reference figures", "[quant]") {
  // reference/quant.md [computed]: 4096x4096 Gaussian, per-tensor 38.3 dB, per-channel 41.2 dB. A 256x4096 slice has
  // the same per-row statistics; its global max is a little smaller, so per-tensor comes out slightly higher.
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const uint64_t rows = 256, cols = 4096;
  std::vector<float> x(rows * cols);
  for (float& v : x) v = nd(rng);
  Out c = Run(x, rows, cols, Channel(), Int8Convention::kHalfStep);
  Out t = Run(x, rows, cols, Granularity{Granularity::Kind::kTensor, 0}, Int8Convention::kHalfStep);
  CHECK(c.stats.SqnrDb() == Approx(41.2).margin(0.3));
  CHECK(t.stats.SqnrDb() > 38.0);
  CHECK(t.stats.SqnrDb() < c.stats.SqnrDb());
  CHECK(c.stats.Cosine() < 1.0);
  CHECK(c.stats.Cosine() > 0.9999);
}

TEST_CASE("quantizer: the AVX-512, AVX2 and baseline loops give the same codes, scales and stats bit for bit",
          "[quant]") {
  // Widths cover 16-element chunks alone (24: one chunk and a scalar tail) and in the 64-element store steps with
  // chunks left over (4099), scalar tails, groups that end mid-vector and segments of many 256-element partial-sum
  // blocks; the rows include exact ties, zeros, one outlier, and a row whose scale is subnormal (1/scale overflows to
  // inf, which the vector kernels hand to the baseline). Both conventions: the top clamp and its clip count differ.
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (uint64_t cols : {1u, 7u, 8u, 13u, 24u, 64u, 4099u, 65560u}) {
    const uint64_t rows = 11;
    std::vector<float> x(rows * cols);
    for (float& v : x) v = nd(rng);
    for (uint64_t c = 0; c < cols; ++c) {
      x[1 * cols + c] = 0.0f;
      x[2 * cols + c] = static_cast<float>(static_cast<int>(c % 9) - 4) * 0.5f;  // ties at scale 1/127.5 multiples
      x[3 * cols + c] = c % 3 == 0 ? 0.0f : (c % 3 == 1 ? 1e-41f : -3e-42f);     // subnormal absmax and scale
    }
    x[4 * cols] = 1e6f;  // one outlier: the rest of the row codes to 0
    for (uint64_t c = 0; c < cols; ++c) {
      x[5 * cols + c] = std::ldexp(x[c], 100);  // fp64 partials (squares beyond fp32), every level the baseline
      x[6 * cols + c] = std::ldexp(x[c], -60);  // the same for squares below fp32's normal range
    }
    std::vector<uint16_t> bf(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      uint32_t b;
      std::memcpy(&b, &x[i], 4);
      bf[i] = static_cast<uint16_t>(b >> 16);
    }
    std::vector<Granularity> gs = {Granularity{}, Granularity{Granularity::Kind::kTensor, 0}};
    // Groups: tails only (13), one chunk and a tail (24), two chunks (32), and two chunks and a tail in each of
    // 1639 groups (40): the lane sums run on across a row's groups, the c^2 sums do not.
    for (uint64_t size : {13u, 24u, 32u, 40u})
      if (cols % size == 0) gs.push_back(Granularity{Granularity::Kind::kGroup, size});
    for (const Granularity& g : gs)
      for (io::DType dt : {io::DType::kF32, io::DType::kBF16})
        // (BF16 scales, not F16: rows 4 and 5 are beyond F16's range, whose scales quantization refuses.)
        for (auto [sdt, conv] : {std::pair{io::DType::kF32, Int8Convention::kHalfStep},
                                 std::pair{io::DType::kBF16, Int8Convention::kHalfStep},
                                 std::pair{io::DType::kF32, Int8Convention::kSymmetric127}}) {
          // 0: baseline loops, 1: AVX2 (where the CPU has it), 2: the run-time choice (AVX-512 where available).
          auto run = [&](int level) {
            ForceBaselineKernelsForTesting(level == 0);
            ForceAvx2KernelsForTesting(level == 1);
            Out o;
            o.codes.assign(rows * cols, 99);
            o.scales.assign(g.ScaleCount(rows, cols), -1.0f);
            const void* src = dt == io::DType::kF32 ? static_cast<const void*>(x.data()) : bf.data();
            REQUIRE(
                QuantizeMatrix(src, dt, rows, cols, {g, conv, sdt}, nullptr, o.codes.data(), o.scales.data(), &o.stats)
                    .ok());
            ForceBaselineKernelsForTesting(false);
            ForceAvx2KernelsForTesting(false);
            return o;
          };
          const Out base = run(0);
          for (int level : {1, 2}) {
            const Out a = run(level);
            INFO("cols " << cols << " granularity " << GranularityName(g) << " dtype " << io::DTypeName(dt) << " scale "
                         << io::DTypeName(sdt) << " convention " << static_cast<int>(conv) << " kernels " << level);
            CHECK(a.codes == base.codes);
            CHECK(std::memcmp(a.scales.data(), base.scales.data(), a.scales.size() * 4) == 0);
            CHECK(std::memcmp(&a.stats, &base.stats, sizeof a.stats) == 0);
          }
        }
  }
}

TEST_CASE("quantizer: streamed rows and codes give the same result as the in-memory matrix", "[quant]") {
  // Enough rows for several 128 KiB work items plus a partial one, for every granularity and thread count.
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  const uint64_t rows = 300, cols = 1000;  // 4000-byte F32 rows: 32-row items, the last one 12 rows
  std::vector<float> x(rows * cols);
  for (float& v : x) v = nd(rng);
  const auto* bytes = reinterpret_cast<const uint8_t*>(x.data());
  ThreadPool pool(3);
  for (auto g :
       {Granularity{}, Granularity{Granularity::Kind::kTensor, 0}, Granularity{Granularity::Kind::kGroup, 100}})
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      Out mem = Run(x, rows, cols, g, Int8Convention::kHalfStep, io::DType::kF32, p);
      std::vector<int8_t> codes(rows * cols, 99);
      std::vector<float> scales(g.ScaleCount(rows, cols), -1.0f);
      std::atomic<uint64_t> read_rows{0};
      RowStreams io;
      io.read = [&](uint64_t first, uint64_t count, uint8_t* dst) {
        std::memcpy(dst, bytes + first * cols * 4, count * cols * 4);
        read_rows += count;
        return Status::Ok();
      };
      io.write = [&](uint64_t first, uint64_t count, const int8_t* c) {
        std::memcpy(codes.data() + first * cols, c, count * cols);
        return Status::Ok();
      };
      ErrorStats stats;
      REQUIRE(QuantizeMatrix(io, io::DType::kF32, rows, cols, {g, Int8Convention::kHalfStep, io::DType::kF32}, p,
                             scales.data(), &stats)
                  .ok());
      INFO(GranularityName(g) << (p ? " pool" : " inline"));
      CHECK(codes == mem.codes);
      CHECK(scales == mem.scales);
      CHECK(std::memcmp(&stats, &mem.stats, sizeof stats) == 0);
      // Per-tensor scales need a first pass over every row; the others read each row once.
      CHECK(read_rows.load() == (g.kind == Granularity::Kind::kTensor ? 2 * rows : rows));
    }
}

TEST_CASE("quantizer: stream errors and non-finite rows stop the streamed matrix", "[quant]") {
  const uint64_t rows = 200, cols = 1000;
  std::vector<float> x(rows * cols, 0.5f);
  const auto* bytes = reinterpret_cast<const uint8_t*>(x.data());
  ThreadPool pool(2);
  auto streams = [&](uint64_t bad_read_row, uint64_t bad_write_row, std::atomic<uint64_t>* written) {
    RowStreams io;
    io.read = [=](uint64_t first, uint64_t count, uint8_t* dst) {
      if (bad_read_row >= first && bad_read_row < first + count) return Status::Io("in.bin", "read failed");
      std::memcpy(dst, bytes + first * cols * 4, count * cols * 4);
      return Status::Ok();
    };
    io.write = [=](uint64_t first, uint64_t count, const int8_t*) {
      if (bad_write_row >= first && bad_write_row < first + count) return Status::Io("out.bin", "write failed");
      *written += count;
      return Status::Ok();
    };
    return io;
  };
  std::vector<float> scales(rows);
  const QuantizeMatrixOptions opt{Granularity{}, Int8Convention::kHalfStep, io::DType::kF32};
  std::atomic<uint64_t> written{0};
  Status st =
      QuantizeMatrix(streams(150, rows, &written), io::DType::kF32, rows, cols, opt, &pool, scales.data(), nullptr);
  CHECK(st.subject() == "in.bin");
  CHECK(st.message() == "read failed");
  st = QuantizeMatrix(streams(rows, 10, &written), io::DType::kF32, rows, cols, opt, &pool, scales.data(), nullptr);
  CHECK(st.subject() == "out.bin");
  // A NaN: the error names its position and the rows of its block are never written.
  x[130 * cols + 7] = std::nanf("");
  written = 0;
  st = QuantizeMatrix(streams(rows, rows, &written), io::DType::kF32, rows, cols, opt, &pool, scales.data(), nullptr);
  CHECK(st.message() == "non-finite value at [130, 7]");
  CHECK(written.load() <= rows - 32);
}

TEST_CASE("quantizer: weights whose code -128 times the scale would overflow are an error, not SQNR -inf", "[quant]") {
  // |w| = 3.4e38: scale = 3.4e38 / 127.5 = 2.67e36 is finite, but a loader dequantizes code -128 to -128 * 2.67e36 =
  // -3.41e38, past FLT_MAX: inf. The report used to say "SQNR -inf, max err inf" with exit 0.
  const uint64_t rows = 3, cols = 40;
  std::vector<float> x(rows * cols, 0.25f);
  x[1 * cols + 17] = -3.4e38f;
  for (auto g :
       {Granularity{}, Granularity{Granularity::Kind::kTensor, 0}, Granularity{Granularity::Kind::kGroup, 20}}) {
    INFO(GranularityName(g));
    std::vector<int8_t> codes(rows * cols);
    std::vector<float> scales(g.ScaleCount(rows, cols));
    ErrorStats st;
    Status s = QuantizeMatrix(x.data(), io::DType::kF32, rows, cols, {g, Int8Convention::kHalfStep, io::DType::kF32},
                              nullptr, codes.data(), scales.data(), &st);
    CHECK(s.code() == ErrorCode::kInvalidInput);
    CHECK(s.message() ==
          "|w| = 3.4e+38 at [1, 17]: the code -128 times its scale is beyond the range of F32, so a loader would "
          "dequantize it to inf");
  }
  // The largest magnitude that still codes: 128 * StoredScale(a) <= FLT_MAX.
  const float ok = 3.38e38f;
  CHECK(DequantizesFinite(StoredScale(ok, Int8Convention::kHalfStep, io::DType::kF32), 128, io::DType::kF32));
  std::vector<float> y(cols, 0.5f);
  y[3] = ok;
  std::vector<int8_t> codes(cols);
  std::vector<float> scales(1);
  ErrorStats st;
  REQUIRE(QuantizeMatrix(y.data(), io::DType::kF32, 1, cols,
                         {Granularity{}, Int8Convention::kHalfStep, io::DType::kF32}, nullptr, codes.data(),
                         scales.data(), &st)
              .ok());
  CHECK(std::isfinite(st.SqnrDb()));
  CHECK(std::isfinite(st.max_abs_err));
  // F16 weights near 65504 hit the same wall: 128 * the F16 scale above 65504 / 127.5, rounded up, is past 65504.
  std::vector<uint16_t> h(cols, io::F32ToF16(0.5f));
  h[0] = io::F32ToF16(65504.0f);
  Status s =
      QuantizeMatrix(h.data(), io::DType::kF16, 1, cols, {Granularity{}, Int8Convention::kHalfStep, io::DType::kF16},
                     nullptr, codes.data(), scales.data(), &st);
  CHECK(s.message().find("beyond the range of F16") != std::string::npos);
  // The 127 convention's largest code magnitude is 127: the same weight codes there.
  CHECK(QuantizeMatrix(x.data(), io::DType::kF32, rows, cols,
                       {Granularity{}, Int8Convention::kSymmetric127, io::DType::kF32}, nullptr,
                       std::vector<int8_t>(rows * cols).data(), std::vector<float>(rows).data(), &st)
            .ok());
}
