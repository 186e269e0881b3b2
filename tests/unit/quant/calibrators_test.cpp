// Parity of the calibrators with the reference implementations on tests/data/quant/laplace_acts.npy (values from
// reference/quant.md, computed with ORT's and NVIDIA pytorch-quantization's numpy code), and the threshold searches
// held to literal transcriptions of the references.
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
#include "lmkit/quant/histogram_kernels.h"
#include "unit/quant/laplace_fixture.h"

using namespace lmkit;
using namespace lmkit::quant;
using namespace lmkit::quant::test_fixture;
using formats::AbsBin;

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
