// The range scan under the calibration histograms (quant/sample_range.h).
#include "lmkit/quant/sample_range.h"

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
