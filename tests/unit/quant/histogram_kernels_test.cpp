// The counting kernels under the calibration histograms, at every instruction-set level: hand-counted bins, the drop
// slot, the pair table folded back into its two bins, numpy's edge rule, and the fast uniform binner agreeing with it.
#include "lmkit/quant/histogram_kernels.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "lmkit/quant/sample_range.h"

using namespace lmkit::quant;
using namespace lmkit::quant::kernels;

namespace {

// Counts per bin from CountAbs's tables, as AbsHistogram folds them: the interleaved tables summed, each pair-table
// increment added to both of its bins; the drop slot is the kernels' scratch (the AVX-512 one parks lanes there), so
// what was dropped is n less what was counted (index `bins` here).
std::vector<uint64_t> FoldAbsTables(const std::vector<uint32_t>& t, uint32_t bins, uint64_t n) {
  std::vector<uint64_t> c(bins + 1, 0);
  const uint32_t stride = TableStride(bins);
  for (uint32_t k = 0; k < kTables; ++k)
    for (uint32_t b = 0; b < bins; ++b) c[b] += t[k * stride + b];
  for (uint32_t first = 0; first < kPairBins && first < bins; ++first)
    for (uint32_t second = 0; second < kPairBins && second < bins; ++second) {
      const uint32_t both = t[PairBase(bins) + first * kPairBins + second];
      c[first] += both;
      c[second] += both;
    }
  uint64_t counted = 0;
  for (uint32_t b = 0; b < bins; ++b) counted += c[b];
  c[bins] = n - counted;
  return c;
}

std::vector<uint64_t> KernelAbsCounts(const std::vector<float>& x, float amax, uint32_t bins, SampleRange* range) {
  std::vector<uint32_t> tables(TableSlots(bins), 0);
  CountAbs(x.data(), x.size(), amax, bins, tables.data(), range);
  return FoldAbsTables(tables, bins, x.size());
}

}  // namespace

TEST_CASE("histogram kernels: CountAbs bins |x| as counted by hand, at every level", "[quant][histogram_kernels]") {
  // amax 4, 8 bins of 0.5: 0.1 -> 0, 0.6 -> 1, 2.25 -> 4, -3.9 -> 7, 4 -> 7 (the last bin is closed); 4.5 and NaN
  // are dropped.
  const std::vector<float> x = {0.1f, 0.6f, 2.25f, -3.9f, 4.0f, 4.5f, NAN, -0.0f};
  const std::vector<uint64_t> want = {2, 1, 0, 0, 1, 0, 0, 2, 2};
  for (int level : {0, 1, 2}) {
    SetAbsHistogramKernelForTesting(level);
    INFO("level " << level);
    SampleRange range;
    CHECK(KernelAbsCounts(x, 4.0f, 8, &range) == want);
    CHECK(range.max == 4.5f);
    CHECK(range.min == -3.9f);
    CHECK_FALSE(range.finite);  // the NaN
    SetAbsHistogramKernelForTesting(-1);
  }
  CHECK(KernelLevel() >= 0);
  CHECK(KernelLevel() <= 2);
}

TEST_CASE("histogram kernels: every level gives the scalar rule's counts on long random input",
          "[quant][histogram_kernels]") {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(4099);  // not a multiple of any vector width
  for (float& v : x) v = normal(rng);
  for (uint32_t bins : {7u, 64u, 2048u}) {
    std::vector<uint64_t> want(bins + 1, 0);
    for (float v : x) {
      const float a = std::fabs(v);
      ++want[a <= 2.5f ? std::min<uint32_t>(static_cast<uint32_t>(a / 2.5f * static_cast<float>(bins)), bins - 1)
                       : bins];
    }
    for (int level : {0, 1, 2}) {
      SetAbsHistogramKernelForTesting(level);
      INFO("bins " << bins << ", level " << level);
      CHECK(KernelAbsCounts(x, 2.5f, bins, nullptr) == want);
      SetAbsHistogramKernelForTesting(-1);
    }
  }
  CHECK(TableStride(2048) >= 2049);
  CHECK(TableSlots(64) == size_t{PairBase(64)} + kPairBins * kPairBins);
}

TEST_CASE("histogram kernels: numpy's edge rule, and the fast binner agrees with it", "[quant][histogram_kernels]") {
  const std::vector<float> edges = {0, 1, 2, 3, 4};
  const UniformEdges u(edges);
  CHECK(NumpyBin(0.0f, u) == 0);
  CHECK(NumpyBin(std::nextafter(1.0f, 0.0f), u) == 0);
  CHECK(NumpyBin(1.0f, u) == 1);  // an edge starts its bin
  CHECK(NumpyBin(3.5f, u) == 3);
  CHECK(NumpyBin(4.0f, u) == 3);  // the last edge closes the last bin

  // Edges of -1.7 .. 2.9 in 300 bins, as numpy.linspace makes them (in double, then fp32).
  std::vector<float> lin(301);
  for (int i = 0; i <= 300; ++i) lin[i] = static_cast<float>(-1.7 + (2.9 + 1.7) * i / 300.0);
  const UniformBinner b(lin);
  CHECK(b.fast);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> in(-2.0f, 3.0f);
  std::vector<float> x(5000);
  for (float& v : x) v = in(rng);
  for (size_t i = 0; i < 301; i += 10) x[i] = lin[i];  // exactly on edges
  std::vector<uint64_t> want(301, 0);
  for (float v : x) ++want[v >= lin.front() && v <= lin.back() ? NumpyBin(v, b.u) : 300];
  for (int level : {0, 1, 2}) {
    SetAbsHistogramKernelForTesting(level);
    std::vector<uint32_t> tables(TableSlots(300), 0);
    CountUniform(x.data(), x.size(), b, false, tables.data(), nullptr);
    std::vector<uint64_t> got(301, 0);
    for (uint32_t k = 0; k < kTables; ++k)
      for (uint32_t i = 0; i < 300; ++i) got[i] += tables[k * TableStride(300) + i];
    uint64_t counted = 0;
    for (uint32_t i = 0; i < 300; ++i) counted += got[i];
    got[300] = x.size() - counted;  // outside [first, last]: dropped
    INFO("level " << level);
    CHECK(got == want);
    SetAbsHistogramKernelForTesting(-1);
  }
}
