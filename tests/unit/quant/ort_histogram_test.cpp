// The ort flavour's histograms (quant/ort_histogram.h): growth by whole bins, its limits, numpy's binning by the fast
// kernels, and the same counts for any thread count.
#include "lmkit/quant/ort_histogram.h"

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
#include "lmkit/quant/calibrators.h"
#include "lmkit/quant/histogram_kernels.h"
#include "unit/quant/laplace_fixture.h"

using namespace lmkit;
using namespace lmkit::quant;
using namespace lmkit::quant::test_fixture;
using formats::AbsBin;

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
