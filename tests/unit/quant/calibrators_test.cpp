// Parity of the calibrators with the reference implementations on tests/data/quant/laplace_acts.npy (values from
// reference/quant.md, computed with ORT's and NVIDIA pytorch-quantization's numpy code), plus properties of the
// histograms (batch-order independence for the nvidia flavour, growth for the ort flavour).
#include "lmkit/quant/calibrators.h"

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <tuple>

#include "lmkit/common/thread_pool.h"
#include "lmkit/formats/histogram_bins.h"
#include "lmkit/io/npy.h"
#include "lmkit/quant/abs_histogram.h"
#include "lmkit/quant/histogram_kernels.h"
#include "lmkit/quant/ort_histogram.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::quant;
using formats::AbsBin;

namespace {

std::vector<std::vector<float>> LoadLaplace() {
  auto f = io::NpyFile::Open(lmkit::test::TestData("quant/laplace_acts.npy"));
  REQUIRE(f.ok());
  REQUIRE(f->dtype() == io::DType::kF32);
  REQUIRE(f->shape() == std::vector<uint64_t>{4, 100000});
  std::vector<std::vector<float>> rows(4, std::vector<float>(100000));
  io::ConvertToF32(io::DType::kF32, f->data().data(), rows[0].data(), 0);
  for (size_t r = 0; r < 4; ++r)
    io::ConvertToF32(io::DType::kF32, f->data().data() + r * 100000 * 4, rows[r].data(), 100000);
  return rows;
}

float AbsMaxOf(const std::vector<std::vector<float>>& rows) {
  float m = 0;
  for (const auto& r : rows)
    for (float v : r) m = std::max(m, std::fabs(v));
  return m;
}

// The counts AbsHistogram must give, by the scalar torch.histc rule value by value (|v| > amax and NaN dropped).
std::vector<uint64_t> ScalarAbsCounts(const std::vector<float>& x, float amax, uint32_t bins) {
  std::vector<uint64_t> want(bins, 0);
  for (float v : x)
    if (std::fabs(v) <= amax) ++want[AbsBin(std::fabs(v), amax, bins)];
  return want;
}

AbsHistogram NvidiaHistogram(const std::vector<std::vector<float>>& rows, uint32_t bins = 2048) {
  AbsHistogram h(bins, AbsMaxOf(rows));
  for (const auto& r : rows) h.Add(r.data(), r.size());
  return h;
}

}  // namespace

TEST_CASE("calibrators: absmax of the parity fixture", "[quant][calib]") {
  auto rows = LoadLaplace();
  CHECK(AbsMaxOf(rows) == Approx(68.191483).epsilon(1e-7));
}

TEST_CASE("calibrators: NVIDIA entropy and percentile on one |x| histogram (parity)", "[quant][calib]") {
  auto rows = LoadLaplace();
  AbsHistogram h = NvidiaHistogram(rows);
  CHECK(h.total() == 400000);
  CHECK(NvidiaPercentileAmax(h, 99.99) == Approx(9.955690).epsilon(1e-5));
  CHECK(NvidiaEntropyAmax(h) == Approx(10.954589).epsilon(1e-5));
  // The result does not depend on batch order or batch size: same counts from reversed, re-cut batches.
  AbsHistogram h2(2048, AbsMaxOf(rows));
  for (size_t r = 4; r-- > 0;)
    for (size_t off = 0; off < 100000; off += 30000)
      h2.Add(rows[r].data() + off, std::min<size_t>(30000, 100000 - off));
  CHECK(h2.counts() == h.counts());
  // MSE picks a threshold between the bulk and the outliers.
  double mse = NvidiaMseAmax(h);
  CHECK(mse > 4.0);
  CHECK(mse < 68.2);
}

TEST_CASE("calibrators: ORT entropy and percentile on grown histograms (parity)", "[quant][calib]") {
  auto rows = LoadLaplace();
  OrtSignedHistogram s(2048);
  OrtAbsHistogram a(2048);
  for (const auto& r : rows) {
    s.AddBatch(r.data(), r.size());
    a.AddBatch(r.data(), r.size());
  }
  auto [lo, hi] = OrtEntropyThreshold(s, 128);
  CHECK(lo == Approx(-13.585022).epsilon(1e-5));
  CHECK(hi == Approx(13.651615).epsilon(1e-5));
  auto [plo, phi] = OrtPercentileThreshold(a, 99.999);
  CHECK(plo == Approx(-27.669510).epsilon(1e-5));
  CHECK(phi == Approx(27.669510).epsilon(1e-5));
  // ORT's defaults (128 bins, 128 quantized bins) collapse to min/max (fixture README, onnxruntime issue 9597).
  OrtSignedHistogram d(128);
  for (const auto& r : rows) d.AddBatch(r.data(), r.size());
  auto [dlo, dhi] = OrtEntropyThreshold(d, 128);
  CHECK(dlo == Approx(-68.191483).epsilon(1e-6));
  CHECK(dhi == Approx(55.126057).epsilon(1e-6));
}

TEST_CASE("calibrators: ORT signed histogram grows by whole bins and keeps every count", "[quant][calib]") {
  OrtSignedHistogram h(8);
  std::vector<float> b1 = {-1.0f, 0.5f, 1.0f};
  std::vector<float> b2 = {3.0f, -0.1f};
  h.AddBatch(b1.data(), b1.size());
  CHECK(h.counts().size() == 8);
  CHECK(h.edges().front() == -1.0f);
  h.AddBatch(b2.data(), b2.size());
  // stride 0.25; (3 - 1) // 0.25 + 1 = 9 bins added on each side
  CHECK(h.counts().size() == 8 + 2 * 9);
  CHECK(h.edges().back() == Approx(3.25f));
  uint64_t total = 0;
  for (uint64_t c : h.counts()) total += c;
  CHECK(total == 5);
  CHECK(h.min() == -1.0f);
  CHECK(h.max() == 3.0f);
}

TEST_CASE("calibrators: ORT histograms refuse growth past the bin limit or the float range", "[quant][calib]") {
  // One far outlier used to grow the histogram by billions of bins (hang, out of memory), and edges near FLT_MAX
  // made the bin index NaN (a write far outside the counts).
  OrtSignedHistogram s(2048);
  std::vector<float> b1 = {-1.0f, 0.5f, 1.0f};
  std::vector<float> far = {1e6f};
  REQUIRE(s.AddBatch(b1.data(), b1.size()));
  CHECK_FALSE(s.AddBatch(far.data(), far.size()));
  CHECK(s.counts().size() == 2048);  // unchanged
  CHECK(s.max() == 1.0f);
  OrtAbsHistogram a(2048);
  REQUIRE(a.AddBatch(b1.data(), b1.size()));
  CHECK_FALSE(a.AddBatch(far.data(), far.size()));
  CHECK(a.counts().size() == 2048);

  OrtSignedHistogram huge(2048);
  std::vector<float> h1 = {3e38f, -3e38f, 1.0f};
  REQUIRE(huge.AddBatch(h1.data(), h1.size()));
  uint64_t total = 0;
  for (uint64_t c : huge.counts()) total += c;
  CHECK(total == 3);
  CHECK(huge.counts().front() == 1);
  CHECK(huge.counts().back() == 1);
  std::vector<float> h2 = {-3.2e38f};
  CHECK_FALSE(huge.AddBatch(h2.data(), h2.size()));  // 2 * threshold overflows fp32
}

TEST_CASE("calibrators: histogram binning follows torch.histc and numpy edges", "[quant][calib]") {
  AbsHistogram h(4, 2.0f);
  std::vector<float> v = {0.0f, 0.49f, 0.5f, -1.0f, 1.99f, 2.0f, -2.0f, 2.5f};
  h.Add(v.data(), v.size());
  CHECK(h.counts() == std::vector<uint64_t>{2, 1, 1, 3});  // 2.5 > amax is not counted; amax in the last bin
  std::vector<uint64_t> c(4, 0);
  HistogramUniform(v.data(), v.size(), LinspaceEdges(-2.0f, 2.0f, 4), c, false);
  CHECK(c == std::vector<uint64_t>{1, 1, 3, 2});  // [-2,-1) [-1,0) [0,1) [1,2]; 2.5 is outside
}

namespace {

// scipy.stats.entropy(p, q), which both reference searches call: KL(p || q) of the two normalised, infinite when
// either sums to zero or q is zero where p is not.
double LiteralEntropy(const std::vector<double>& p, const std::vector<double>& q) {
  double sp = 0, sq = 0;
  for (double v : p) sp += v;
  for (double v : q) sq += v;
  if (sp <= 0 || sq <= 0) return INFINITY;
  double kl = 0;
  for (size_t j = 0; j < p.size(); ++j) {
    const double a = p[j] / sp, b = q[j] / sq;
    if (a > 0) {
      if (b <= 0) return INFINITY;
      kl += a * std::log(a / b);
    }
  }
  return kl;
}

// NVIDIA's _compute_amax_entropy transcribed literally (the arrays P and Q of every candidate built in full): the
// oracle for NvidiaEntropyDivergences, which visits only non-zero bins and runs candidates in parallel.
std::vector<double> LiteralNvidiaEntropyDivergences(const AbsHistogram& h, uint32_t start_bin, uint32_t quant_bins) {
  std::vector<double> bins(h.counts().begin(), h.counts().end());
  const uint32_t n = static_cast<uint32_t>(bins.size());
  bins[0] = bins[1];
  std::vector<double> out;
  for (uint32_t i = start_bin; i <= n; ++i) {
    const double step = static_cast<double>(i) / quant_bins;
    std::vector<double> sum(quant_bins, 0.0), nz(quant_bins, 0.0), q(i, 0.0);
    std::vector<int> group(i, -1);
    for (uint32_t idx = 0; idx < i; ++idx) {
      int k = 0;
      while (k + 1 <= static_cast<int>(quant_bins) && (k + 1) * step <= idx) ++k;
      if (bins[idx] == 0) continue;
      group[idx] = k;
      sum[k] += bins[idx];
      nz[k] += 1;
    }
    for (uint32_t idx = 0; idx < i; ++idx)
      if (group[idx] >= 0) q[idx] = sum[group[idx]] / nz[group[idx]];
    std::vector<double> p(bins.begin(), bins.begin() + i);
    double tail = 0;
    for (uint32_t t = n; t-- > i;) tail += bins[t];
    p[i - 1] += tail;
    out.push_back(LiteralEntropy(p, q));
  }
  return out;
}

}  // namespace

TEST_CASE("calibrators: NVIDIA entropy search equals a literal transcription, for any thread count", "[quant][calib]") {
  std::mt19937 rng(7);
  std::exponential_distribution<float> expo(1.0f);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  struct Case {
    const char* name;
    uint32_t bins;
    std::function<float()> draw;
  };
  const std::vector<Case> cases = {
      {"peaked with outliers", 2048, [&] { return uni(rng) < 1e-4f ? 50.0f * uni(rng) : expo(rng); }},
      {"dense uniform", 2048, [&] { return uni(rng); }},
      {"sparse: a few distinct values", 512, [&] { return static_cast<float>(static_cast<int>(8 * uni(rng))); }},
      {"small histogram", 200, [&] { return expo(rng); }},
      {"one value: every candidate but the last is infinite", 2048, [&] { return 3.0f; }},
      {"two values: ties", 2048, [&] { return uni(rng) < 0.5f ? 1.0f : 2.0f; }},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      std::vector<float> x(50000);
      for (float& v : x) v = c.draw();
      float amax = 0;
      for (float v : x) amax = std::max(amax, v);
      AbsHistogram h(c.bins, amax);
      h.Add(x.data(), x.size());
      const std::vector<double> want = LiteralNvidiaEntropyDivergences(h, 128, 128);
      REQUIRE(want.size() == c.bins - 127);
      CHECK(NvidiaEntropyDivergences(h, 128, 128) == want);  // bit for bit, every candidate
      // The regrouped divergences: the same up to rounding, infinite exactly where the literal ones are.
      const std::vector<double> fast = NvidiaEntropyDivergencesFast(h, 128, 128);
      REQUIRE(fast.size() == want.size());
      for (size_t k = 0; k < want.size(); ++k) {
        INFO("candidate " << 128 + k);
        CHECK(std::isinf(fast[k]) == std::isinf(want[k]));
        if (!std::isinf(want[k])) CHECK(std::fabs(fast[k] - want[k]) <= 1e-11);
      }
      // The threshold (shortlisted by the fast ones) is the literal divergences' last minimum.
      uint32_t last_min = 0;
      for (uint32_t k = 0; k < want.size(); ++k)
        if (want[k] <= want[last_min]) last_min = k;
      CHECK(NvidiaEntropyAmax(h, 128, 128) == h.Edge(128 + last_min));
      for (unsigned threads : {2u, 3u, 8u}) {
        ThreadPool pool(threads);
        CHECK(NvidiaEntropyDivergences(h, 128, 128, &pool) == want);
        CHECK(NvidiaEntropyAmax(h, 128, 128, &pool) == NvidiaEntropyAmax(h, 128, 128));
      }
    }
  }
}

TEST_CASE("calibrators: every AbsHistogram kernel bins like the scalar torch.histc rule", "[quant][calib]") {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const float amax = 8.0f;
  std::vector<float> x(10007);  // not a multiple of 16 or 8: the tails run too
  for (float& v : x) v = normal(rng);
  // Edge values: exactly amax (last bin), just above (dropped), negative zero, a subnormal, bin boundaries, NaN.
  const std::vector<float> edges = {amax,      -amax,   std::nextafter(amax, 100.0f), -0.0f, 1e-40f,
                                    0.5f,      4.0f,    std::nextafter(4.0f, 0.0f),   NAN,   INFINITY,
                                    -INFINITY, 7.99999f};
  for (size_t i = 0; i < edges.size(); ++i) x[i * 97] = edges[i];
  const std::vector<uint64_t> want = ScalarAbsCounts(x, amax, 2048);
  for (int level : {0, 1, 2}) {
    kernels::SetAbsHistogramKernelForTesting(level);
    AbsHistogram h(2048, amax), fused(2048, amax);
    h.Add(x.data(), 5000);  // two calls: the tables carry over between them
    h.Add(x.data() + 5000, x.size() - 5000);
    // The same counts with the range folded in the same pass, and the range ScanRange gives (with and without the
    // NaN and infinities, which clear `finite`).
    for (const size_t skip : {size_t{0}, size_t{10 * 97 + 1}}) {  // x[8 * 97], x[9 * 97], x[10 * 97]: NaN, inf, -inf
      SampleRange got, scan;
      AbsHistogram g(2048, amax);
      g.Add(x.data() + skip, x.size() - skip, &got);
      ScanRange(x.data() + skip, x.size() - skip, &scan);
      INFO("kernel level " << level << ", from " << skip);
      CHECK(g.counts() == ScalarAbsCounts(std::vector<float>(x.begin() + skip, x.end()), amax, 2048));
      CHECK(std::bit_cast<uint32_t>(got.min) == std::bit_cast<uint32_t>(scan.min));
      CHECK(std::bit_cast<uint32_t>(got.max) == std::bit_cast<uint32_t>(scan.max));
      CHECK(got.abs_min == scan.abs_min);
      CHECK(got.abs_max == scan.abs_max);
      CHECK(got.finite == scan.finite);
      CHECK(got.finite == (skip != 0));
    }
    kernels::SetAbsHistogramKernelForTesting(-1);
    INFO("kernel level " << level);
    CHECK(h.counts() == want);
    CHECK(h.total() ==
          static_cast<uint64_t>(std::count_if(x.begin(), x.end(), [&](float v) { return std::fabs(v) <= amax; })));
  }
}

TEST_CASE("calibrators: the division-free AbsHistogram kernels agree with the division at every bin boundary",
          "[quant][calib]") {
  // The vector kernels bin with a multiply and fall back to the division only where the result is in doubt, so the
  // values that matter are the first float of every bin and its neighbours, for amax and bin counts whose ratio is not
  // a power of two (where the multiply and the division round differently), plus an amax so small that bins / amax
  // overflows (the kernels must then divide throughout).
  for (const float amax : {68.191483f, 8.0f, 0.0033f, 3e-37f, 1.17549435e-38f}) {
    for (const uint32_t bins : {2048u, 2000u, 1001u, 65u, 64u, 63u, 7u}) {  // 63-65: pairs' limit (kPairBins)
      std::vector<float> x;
      for (uint32_t k = 1; k < bins; ++k) {
        // Smallest float a in [0, amax] with AbsBin(a) >= k (AbsBin is monotone in a): bisection over the bits.
        uint32_t lo = 0, hi = std::bit_cast<uint32_t>(amax);
        while (lo < hi) {
          const uint32_t mid = lo + (hi - lo) / 2;
          if (AbsBin(std::bit_cast<float>(mid), amax, bins) >= k)
            hi = mid;
          else
            lo = mid + 1;
        }
        const float a = std::bit_cast<float>(lo);
        for (float v : {a, std::nextafter(a, 0.0f), std::nextafter(a, amax), -a}) x.push_back(v);
      }
      std::mt19937 rng(bins);
      std::uniform_real_distribution<float> u(-amax, amax);
      for (int i = 0; i < 4001; ++i) x.push_back(u(rng));
      const std::vector<uint64_t> want = ScalarAbsCounts(x, amax, bins);
      for (int level : {1, 2}) {
        kernels::SetAbsHistogramKernelForTesting(level);
        AbsHistogram h(bins, amax);
        h.Add(x.data(), x.size());
        kernels::SetAbsHistogramKernelForTesting(-1);
        INFO("amax " << amax << ", bins " << bins << ", kernel level " << level);
        CHECK(h.counts() == want);
      }
    }
  }
}

TEST_CASE("calibrators: AbsHistogram kernels agree on peaked data with dropped values, for any bin count",
          "[quant][calib]") {
  // Peaked data, as activations are: nearly all values in the first few bins (the increments of a few counters
  // follow each other closely, the case the interleaved tables and the AVX-512 kernel's pair slots are for), with a
  // high bin, values above amax (dropped), NaN (dropped) and amax itself (the last bin) mixed in, for bin counts above
  // and below a vector's width and around the pairs' limit of 64 bins, added in uneven pieces so that steps, rounds
  // and tails of every length run.
  for (const uint32_t bins : {2048u, 65u, 64u, 63u, 50u, 7u}) {
    const float amax = 100.0f;
    const float low = amax * static_cast<float>(std::min(bins, 64u)) / static_cast<float>(bins);
    std::mt19937 rng(bins + 1);
    std::exponential_distribution<float> expo(8.0f / low);
    std::vector<float> x(40000);
    for (size_t i = 0; i < x.size(); ++i) {
      float v = std::min(expo(rng), std::nextafter(low, 0.0f));
      x[i] = (i % 3 == 0) ? -v : v;
    }
    for (size_t i = 0; i < x.size(); i += 997) x[i] = amax * 0.9f;                  // a high bin
    for (size_t i = 5; i < x.size(); i += 1499) x[i] = std::nextafter(amax, 1e9f);  // dropped
    for (size_t i = 11; i < x.size(); i += 2003) x[i] = NAN;                        // dropped
    for (size_t i = 17; i < x.size(); i += 3001) x[i] = amax;                       // the last bin
    const std::vector<uint64_t> want = ScalarAbsCounts(x, amax, bins);
    const auto kept =
        static_cast<uint64_t>(std::count_if(x.begin(), x.end(), [&](float v) { return std::fabs(v) <= amax; }));
    for (int level : {0, 1, 2}) {
      kernels::SetAbsHistogramKernelForTesting(level);
      AbsHistogram h(bins, amax);
      h.Add(x.data(), 12345);  // uneven pieces: rounds and tails of every length
      h.Add(x.data() + 12345, 17);
      h.Add(x.data() + 12362, x.size() - 12362);
      kernels::SetAbsHistogramKernelForTesting(-1);
      INFO("bins " << bins << ", kernel level " << level);
      CHECK(h.counts() == want);
      CHECK(h.total() == kept);
    }
  }
}

namespace {

// The edges the ORT flavour bins over, of every shape HistogramUniformFast meets: symmetric linspace (signed
// histogram), an |x| histogram grown by appended arange edges (they drift from uniform spacing, so the margin must
// widen), odd bin counts, a range so narrow for its magnitude that consecutive edges repeat (the fast path must step
// aside), and a range whose width overflows fp32.
std::vector<std::pair<std::string, std::vector<float>>> OrtEdgeSets() {
  std::vector<std::pair<std::string, std::vector<float>>> sets;
  sets.push_back({"signed 2048", LinspaceEdges(-13.651615f, 13.651615f, 2048)});
  sets.push_back({"signed 7", LinspaceEdges(-3.0f, 3.0f, 7)});
  sets.push_back({"offset 3001", LinspaceEdges(-0.37f, 123.5f, 3001)});
  sets.push_back({"narrow, repeated edges", LinspaceEdges(1000.0f, 1000.01f, 2048)});
  sets.push_back({"overflowing width", LinspaceEdges(-3e38f, 3e38f, 2048)});
  OrtAbsHistogram grown(2048);
  std::vector<float> b1 = {0.001f, 0.5f, 1.7f, -2.25f}, b2 = {9.5f, -0.2f}, b3 = {-40.125f};
  REQUIRE(grown.AddBatch(b1.data(), b1.size()));
  REQUIRE(grown.AddBatch(b2.data(), b2.size()));
  REQUIRE(grown.AddBatch(b3.data(), b3.size()));
  REQUIRE(grown.edges().size() > 2049);
  sets.push_back({"abs, grown twice", grown.edges()});
  return sets;
}

// Every edge and its float neighbours (where the fast map is most likely wrong), both signs, bin middles, values
// just outside the range, specials, then uniform values over a slightly wider range; shuffled so that hard values
// land in every vector lane and in the scalar tails.
std::vector<float> HardValues(const std::vector<float>& edges, uint32_t seed) {
  std::vector<float> x;
  for (size_t i = 0; i < edges.size(); ++i) {
    const float e = edges[i];
    for (float v : {e, std::nextafter(e, -INFINITY), std::nextafter(e, INFINITY),
                    std::nextafter(std::nextafter(e, INFINITY), INFINITY)}) {
      x.push_back(v);
      x.push_back(-v);
    }
    if (i + 1 < edges.size()) x.push_back(edges[i] + (edges[i + 1] - edges[i]) * 0.5f);
  }
  for (float v : {0.0f, -0.0f, 1e-40f, NAN, INFINITY, -INFINITY}) x.push_back(v);
  // mid + half * t for t a little wider than [-1, 1]: no intermediate overflows, even for a range near +-FLT_MAX.
  const float half = edges.back() / 2 - edges.front() / 2, mid = edges.front() / 2 + edges.back() / 2;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.01f, 1.01f);
  for (int i = 0; i < 20011; ++i) x.push_back(mid + half * u(rng));
  std::shuffle(x.begin(), x.end(), rng);
  return x;
}

}  // namespace

TEST_CASE("calibrators: HistogramUniformFast gives HistogramUniform's counts, for any kernel and thread count",
          "[quant][calib]") {
  ThreadPool pool(3);
  uint32_t seed = 1;
  for (const auto& [name, edges] : OrtEdgeSets()) {
    std::vector<float> x = HardValues(edges, seed++);
    // More than two of the parallel pieces (65536 values), so that the pool splits the work.
    const std::vector<float> once = x;
    while (x.size() < 150000) x.insert(x.end(), once.begin(), once.end());
    for (const bool absolute : {false, true}) {
      std::vector<uint64_t> want(edges.size() - 1, 0);
      HistogramUniform(x.data(), x.size(), edges, want, absolute);
      for (int level : {0, 1, 2}) {
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
          kernels::SetAbsHistogramKernelForTesting(level);
          std::vector<uint64_t> got(edges.size() - 1, 5), with_range(edges.size() - 1, 0);  // adds to what is there
          HistogramUniformFast(x.data(), x.size(), edges, got, absolute, p);
          // With the range from the same pass (the AVX-512 kernel folds it in): the same counts, ScanSamples' range.
          SampleRange range;
          HistogramUniformFast(x.data(), x.size(), edges, with_range, absolute, p, &range);
          const SampleRange scan = ScanSamples(x.data(), x.size());
          kernels::SetAbsHistogramKernelForTesting(-1);
          for (uint64_t& c : got) c -= 5;
          INFO(name << ", absolute " << absolute << ", kernel level " << level << ", pool " << (p != nullptr));
          CHECK(got == want);
          CHECK(with_range == want);
          CHECK(std::bit_cast<uint32_t>(range.min) == std::bit_cast<uint32_t>(scan.min));
          CHECK(std::bit_cast<uint32_t>(range.max) == std::bit_cast<uint32_t>(scan.max));
          CHECK(range.abs_min == scan.abs_min);
          CHECK(range.abs_max == scan.abs_max);
          CHECK(range.finite == scan.finite);
        }
      }
    }
  }
}

namespace {

// ORT's get_entropy_threshold transcribed step by step (quant_utils / calibrate.py: slice the histogram, fold the
// outside mass into the end bins, merge into quant_bins groups, expand with int64 truncation, smooth both in float32,
// scipy.stats.entropy, keep the divergence as float32): the oracle for OrtEntropyDivergences, which fuses these steps.
std::vector<double> LiteralOrtEntropyDivergences(const OrtSignedHistogram& h, uint32_t quant_bins) {
  const auto& hist = h.counts();
  const uint32_t num_bins = static_cast<uint32_t>(hist.size());
  const uint32_t zero = num_bins / 2, half_q = quant_bins / 2;
  std::vector<double> out;
  if (num_bins == 0 || half_q > zero) return out;
  auto smooth = [](std::vector<double>& v) {  // False when all are zero (ORT: None).
    size_t zeros = 0;
    for (double x : v) zeros += x == 0;
    const size_t nonzeros = v.size() - zeros;
    if (nonzeros == 0) return false;
    const double eps = 1e-4;
    const float eps1 = static_cast<float>(eps * static_cast<double>(zeros) / static_cast<double>(nonzeros));
    for (double& x : v) {
      float f = static_cast<float>(x);
      f += x == 0 ? static_cast<float>(eps) : -eps1;
      x = f;
    }
    return true;
  };
  for (uint32_t i = half_q; i <= zero; ++i) {
    const uint32_t start = zero - i, end = std::min(zero + i + 1, num_bins), size = end - start;
    std::vector<double> sliced(size);
    for (uint32_t k = 0; k < size; ++k) sliced[k] = static_cast<double>(hist[start + k]);
    std::vector<double> p = sliced;
    double left = 0, right = 0;
    for (uint32_t k = 0; k < start; ++k) left += static_cast<double>(hist[k]);
    for (uint32_t k = end; k < num_bins; ++k) right += static_cast<double>(hist[k]);
    p[0] += left;
    p[size - 1] += right;
    const uint32_t merged = size / quant_bins;
    std::vector<int64_t> quantized(quant_bins, 0);
    for (uint32_t k = 0; k < quant_bins; ++k)
      for (uint32_t j = k * merged; j < (k + 1) * merged; ++j) quantized[k] += static_cast<int64_t>(sliced[j]);
    for (uint32_t j = quant_bins * merged; j < size; ++j) quantized[quant_bins - 1] += static_cast<int64_t>(sliced[j]);
    std::vector<double> q(size, 0.0);
    for (uint32_t k = 0; k < quant_bins; ++k) {
      int64_t norm = 0;
      for (uint32_t j = k * merged; j < (k + 1) * merged; ++j) norm += p[j] != 0;
      if (norm == 0) continue;
      const double v = std::trunc(static_cast<double>(quantized[k]) / static_cast<double>(norm));
      for (uint32_t j = k * merged; j < (k + 1) * merged; ++j) q[j] = v;
    }
    const double div = smooth(p) && smooth(q) ? LiteralEntropy(p, q) : INFINITY;
    out.push_back(static_cast<float>(div));
  }
  return out;
}

}  // namespace

TEST_CASE("calibrators: ORT entropy divergences equal a literal transcription, for any thread count",
          "[quant][calib]") {
  std::mt19937 rng(11);
  std::exponential_distribution<float> expo(1.0f);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  auto laplace = [&] { return (uni(rng) < 0 ? -1.0f : 1.0f) * expo(rng); };
  struct Case {
    const char* name;
    uint32_t bins, quant_bins;
    std::function<float(size_t)> draw;
  };
  const std::vector<Case> cases = {
      // The benchmark's shape: every 1000th value x20, so the range spans outliers and most bins are empty.
      {"Laplace with sparse outliers", 2048, 128, [&](size_t k) { return laplace() * (k % 1000 == 0 ? 20.0f : 1.0f); }},
      {"Laplace", 2048, 128, [&](size_t) { return laplace(); }},
      {"dense uniform", 2048, 128, [&](size_t) { return uni(rng); }},
      {"a few distinct values (runs of equal bins, empty groups)", 1024, 128,
       [&](size_t) { return static_cast<float>(static_cast<int>(6 * uni(rng))); }},
      {"small histogram, groups of one bin and a remainder", 300, 128, [&](size_t) { return laplace(); }},
      {"other quantized bins (remainders in the last group)", 2048, 100, [&](size_t) { return laplace(); }},
      {"one value and its negation: most windows hold nothing", 2048, 128,
       [&](size_t k) { return k % 2 ? 3.0f : -3.0f; }},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      OrtSignedHistogram h(c.bins);
      size_t k = 0;
      for (int batch = 0; batch < 3; ++batch) {  // later batches grow the range: the histogram is grown too
        std::vector<float> x(20000);
        for (float& v : x) v = c.draw(k++) * (1.0f + 0.5f * static_cast<float>(batch));
        REQUIRE(h.AddBatch(x.data(), x.size()));
      }
      const std::vector<double> want = LiteralOrtEntropyDivergences(h, c.quant_bins);
      REQUIRE(!want.empty());
      CHECK(OrtEntropyDivergences(h, c.quant_bins) == want);  // bit for bit, every candidate
      for (unsigned threads : {2u, 3u}) {
        ThreadPool pool(threads);
        CHECK(OrtEntropyDivergences(h, c.quant_bins, &pool) == want);
      }
    }
  }
  OrtSignedHistogram tiny(64);  // 64 bins, 128 quantized bins: no candidate
  std::vector<float> x = {1.0f, -2.0f};
  REQUIRE(tiny.AddBatch(x.data(), x.size()));
  CHECK(OrtEntropyDivergences(tiny, 128).empty());
  CHECK(LiteralOrtEntropyDivergences(tiny, 128).empty());
}

TEST_CASE("calibrators: the ORT histograms give the same counts for any thread count", "[quant][calib]") {
  auto rows = LoadLaplace();
  ThreadPool pool(2);
  OrtSignedHistogram s1(2048), s2(2048);
  OrtAbsHistogram a1(2048), a2(2048);
  for (const auto& r : rows) {
    const SampleRange range = ScanSamples(r.data(), r.size(), &pool);
    REQUIRE(s1.AddBatch(r.data(), r.size()));
    REQUIRE(s2.AddBatch(r.data(), r.size(), range, &pool));
    REQUIRE(a1.AddBatch(r.data(), r.size()));
    REQUIRE(a2.AddBatch(r.data(), r.size(), range, &pool));
  }
  CHECK(s1.counts() == s2.counts());
  CHECK(s1.edges() == s2.edges());
  CHECK(a1.counts() == a2.counts());
  CHECK(a1.edges() == a2.edges());
  CHECK(OrtEntropyThreshold(s2, 128, &pool) == OrtEntropyThreshold(s1, 128));
}

TEST_CASE("calibrators: AddIfWithinRange leaves the ORT histograms as AddBatch alone does", "[quant][calib]") {
  // Batches inside the range (taken in one pass), one that grows it, one that reaches the range exactly, an empty one
  // and one with a NaN (neither added: the caller sees the range and reports the NaN).
  auto rows = LoadLaplace();
  std::vector<std::vector<float>> batches = {rows[0], rows[1], rows[2], rows[3]};
  for (float& v : batches[1]) v *= 0.5f;  // inside
  batches[2][77] = 300.0f;                // grows the range
  batches[3][5] = -300.0f;                // reaches it again, from below
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    OrtSignedHistogram s_ref(2048), s(2048);
    OrtAbsHistogram a_ref(2048), a(2048);
    std::vector<bool> taken_s, taken_a;
    for (const auto& b : batches) {
      REQUIRE(s_ref.AddBatch(b.data(), b.size()));
      REQUIRE(a_ref.AddBatch(b.data(), b.size()));
      SampleRange range;
      taken_s.push_back(s.AddIfWithinRange(b.data(), b.size(), p, &range));
      CHECK(range.max == ScanSamples(b.data(), b.size()).max);
      if (!taken_s.back()) REQUIRE(s.AddBatch(b.data(), b.size(), range, p));
      taken_a.push_back(a.AddIfWithinRange(b.data(), b.size(), p, &range));
      if (!taken_a.back()) REQUIRE(a.AddBatch(b.data(), b.size(), range, p));
    }
    CHECK(taken_s == std::vector<bool>{false, true, false, true});
    // (For |x|, the grown last edge may fall just short of 300 in fp32, and then batch 3 grows it again.)
    CHECK((taken_a[0] == false && taken_a[1] == true && taken_a[2] == false));
    CHECK(s.counts() == s_ref.counts());
    CHECK(s.edges() == s_ref.edges());
    CHECK(s.min() == s_ref.min());
    CHECK(s.max() == s_ref.max());
    CHECK(a.counts() == a_ref.counts());
    CHECK(a.edges() == a_ref.edges());
    std::vector<float> bad = rows[0];
    bad[1000] = NAN;
    SampleRange range;
    const std::vector<uint64_t> before = s.counts();
    CHECK_FALSE(s.AddIfWithinRange(bad.data(), bad.size(), p, &range));
    CHECK_FALSE(range.finite);
    CHECK(s.counts() == before);
    CHECK_FALSE(a.AddIfWithinRange(bad.data(), 0, p, &range));
    CHECK(a.counts() == a_ref.counts());
  }
}

TEST_CASE("calibrators: ScanRange finds min, max, min|x| and max|x| in every lane and the tail", "[quant][calib]") {
  // The kernels keep 2 x 16 (or 2 x 8, 2 x 4) lanes and a scalar tail; each extreme is put in each of those places.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(1.0f, 4.0f);
  std::vector<float> base(1037);
  for (float& v : base) v = (rng() & 1) ? u(rng) : -u(rng);
  for (const size_t p : {size_t{0}, size_t{7}, size_t{16}, size_t{31}, size_t{32}, size_t{1023}, size_t{1036}}) {
    for (int level : {0, 1, 2}) {
      INFO("position " << p << ", kernel level " << level);
      kernels::SetAbsHistogramKernelForTesting(level);
      std::vector<float> x = base;
      x[p] = -0.25f;
      SampleRange r;
      ScanRange(x.data(), x.size(), &r);
      CHECK(r.abs_min == 0.25f);
      x[p] = -9.0f;
      r = SampleRange{};
      ScanRange(x.data(), x.size(), &r);
      CHECK(r.min == -9.0f);
      CHECK(r.abs_max == 9.0f);
      x[p] = 11.0f;
      r = SampleRange{};
      ScanRange(x.data(), x.size(), &r);
      CHECK(r.max == 11.0f);
      CHECK(r.abs_max == 11.0f);
      CHECK(r.finite);
      x[p] = NAN;
      r = SampleRange{};
      ScanRange(x.data(), x.size(), &r);
      CHECK_FALSE(r.finite);
      CHECK(r.abs_min >= 1.0f);  // NaN is skipped by the extremes
      kernels::SetAbsHistogramKernelForTesting(-1);
    }
  }
}

namespace {

// Feeds x to a SpeculativeAbsHistogram as a caller does: pass 0 in batches of `batch` samples, each split into pieces
// of `piece` over `pool` (Compact after each batch), then pass 1 with a different split (`batch2`), skipping what is
// Covered. Returns the histogram; *range gets pass 0's merged scan, *recounted the samples pass 1 counted.
AbsHistogram Speculate(const std::vector<float>& x, uint32_t bins, uint64_t batch, uint64_t piece, uint64_t batch2,
                       ThreadPool& pool, SampleRange* range, uint64_t* recounted) {
  SpeculativeAbsHistogram h(bins, pool.size());
  std::vector<SampleRange> parts(pool.size());
  for (uint64_t b = 0; b < x.size(); b += batch) {
    const uint64_t n = std::min<uint64_t>(batch, x.size() - b), pieces = (n + piece - 1) / piece;
    pool.ParallelFor(pieces, [&](size_t c, unsigned w) {
      const uint64_t at = b + c * piece;
      h.AddFirst(at, x.data() + at, std::min(piece, n - c * piece), w, &parts[w]);
    });
    h.Compact();
  }
  *range = SampleRange{};
  for (const SampleRange& p : parts) range->Merge(p);
  h.BeginSecond(range->abs_max);
  for (uint64_t b = 0; b < x.size(); b += batch2) {
    const uint64_t n = std::min<uint64_t>(batch2, x.size() - b), pieces = (n + piece - 1) / piece;
    if (h.Covered(b, n)) continue;
    pool.ParallelFor(pieces, [&](size_t c, unsigned w) {
      const uint64_t at = b + c * piece;
      h.AddSecond(at, x.data() + at, std::min(piece, n - c * piece), w);
    });
  }
  *recounted = h.recounted();
  return h.Finish();
}

}  // namespace

TEST_CASE("calibrators: the speculative histogram equals two passes wherever the maximum is", "[quant][calib]") {
  // Peaked data with a few outliers; the global maximum placed first, in the middle, last, and as a staircase of
  // rising maxima (every piece a new record), for several thread counts, batch and piece sizes. The counts must equal
  // AbsHistogram over [0, max|x|] exactly, and pass 1 must recount no more than the samples before the maximum's
  // piece ended (pieces run in index order, at most `threads` at a time).
  std::mt19937 rng(5);
  std::exponential_distribution<float> expo(1.0f);
  std::vector<float> base(50000);
  for (size_t i = 0; i < base.size(); ++i) base[i] = (i % 2 ? -1.0f : 1.0f) * expo(rng);
  for (size_t i = 0; i < base.size(); i += 4999) base[i] *= 20.0f;
  const float top = 500.0f;  // above every base value
  struct Case {
    const char* name;
    std::function<void(std::vector<float>&)> shape;
  };
  const std::vector<Case> cases = {
      {"max first", [&](std::vector<float>& x) { x[3] = -top; }},
      {"max in the middle", [&](std::vector<float>& x) { x[x.size() / 2] = top; }},
      {"max last", [&](std::vector<float>& x) { x.back() = top; }},
      {"rising staircase",
       [&](std::vector<float>& x) {
         for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 1e-3f * (i % 3 ? 1.0f : -1.0f);
       }},
      {"all zero", [&](std::vector<float>& x) { std::fill(x.begin(), x.end(), 0.0f); }},
  };
  for (const Case& c : cases) {
    std::vector<float> x = base;
    c.shape(x);
    float amax = 0;
    size_t at_max = 0;
    for (size_t i = 0; i < x.size(); ++i)
      if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), at_max = i;
    AbsHistogram want(2048, amax);
    want.Add(x.data(), x.size());
    for (unsigned threads : {1u, 2u, 3u}) {
      ThreadPool pool(threads);
      for (const auto& [batch, piece, batch2] : std::vector<std::tuple<uint64_t, uint64_t, uint64_t>>{
               {50000, 1000, 50000}, {7000, 512, 3001}, {999, 1000, 50000}, {50000, 37, 12345}}) {
        SampleRange range;
        uint64_t recounted = 0;
        AbsHistogram got = Speculate(x, 2048, batch, piece, batch2, pool, &range, &recounted);
        INFO(c.name << ", threads " << threads << ", batch " << batch << ", piece " << piece);
        CHECK(range.abs_max == amax);
        CHECK(got.counts() == want.counts());
        if (threads == 1)  // in order: pass 1 recounts nothing after the end of the max's piece
          CHECK(recounted <= at_max + piece);
        // The first piece is scanned before it is counted; with more threads, pieces that start before it raised
        // the running max are recounted, so only one thread is sure to recount nothing (and all-zero data, whose
        // every piece is counted under max 0, the final max).
        if (amax == 0 || (threads == 1 && at_max < piece)) CHECK(recounted == 0);
      }
    }
  }
}

TEST_CASE("calibrators: the speculative histogram counts in one pass when the maximum comes first", "[quant][calib]") {
  // Pass 0 scans the first piece before counting it, so a maximum in the first piece leaves pass 1 nothing to count:
  // Covered is true for every stretch and nothing is recounted. With the maximum in the last piece everything is.
  std::vector<float> x(20000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i));
  x[10] = 9.0f;
  ThreadPool pool(1);
  SampleRange range;
  uint64_t recounted = 1;
  AbsHistogram got = Speculate(x, 256, 20000, 1000, 20000, pool, &range, &recounted);
  CHECK(recounted == 0);
  AbsHistogram want(256, 9.0f);
  want.Add(x.data(), x.size());
  CHECK(got.counts() == want.counts());
  x[10] = 0.5f;
  x.back() = -9.0f;
  got = Speculate(x, 256, 20000, 1000, 20000, pool, &range, &recounted);
  CHECK(recounted == 20000);  // every piece was counted under a smaller running max
  want = AbsHistogram(256, 9.0f);
  want.Add(x.data(), x.size());
  CHECK(got.counts() == want.counts());
}

TEST_CASE("calibrators: the speculative histogram falls back to two passes when its record would grow",
          "[quant][calib]") {
  // Pieces fed out of stream order so that stretches counted under the final max alternate with stretches counted
  // under an older one: past kMaxRuns records pass 0 stops speculating and pass 1 counts everything, still exactly.
  const uint64_t pairs = SpeculativeAbsHistogram::kMaxRuns + 100;
  std::vector<float> x(2 * pairs + 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * (i % 2 ? 2.0f : 1.0f);
  x[0] = 10.0f;              // the first piece: running max 10
  x[2 * pairs + 1] = 20.0f;  // fed after the even pieces: raises it to 20
  SpeculativeAbsHistogram h(128, 1);
  SampleRange range;
  for (uint64_t i = 0; i <= 2 * pairs; i += 2) h.AddFirst(i, &x[i], 1, 0, &range);  // counted under 10
  h.AddFirst(2 * pairs + 1, &x[2 * pairs + 1], 1, 0, &range);
  for (uint64_t i = 1; i < 2 * pairs; i += 2) h.AddFirst(i, &x[i], 1, 0, &range);  // counted under 20
  h.Compact();
  REQUIRE(range.abs_max == 20.0f);
  h.BeginSecond(range.abs_max);
  CHECK_FALSE(h.Covered(1, 1));
  h.AddSecond(0, x.data(), x.size(), 0);
  CHECK(h.recounted() == x.size());
  AbsHistogram want(128, 20.0f);
  want.Add(x.data(), x.size());
  CHECK(h.Finish().counts() == want.counts());
}
