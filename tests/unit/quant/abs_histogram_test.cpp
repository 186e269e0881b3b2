// The nvidia flavour's |x| histogram (quant/abs_histogram.h): torch.histc's binning in every kernel, and the
// speculative one-read histogram against two passes.
#include "lmkit/quant/abs_histogram.h"

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
