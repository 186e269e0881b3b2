// Helpers shared by the calibration tests: the parity fixture (tests/data/quant/laplace_acts.npy) and the scalar
// torch.histc rule the |x| histogram kernels must reproduce.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "lmkit/formats/histogram_bins.h"
#include "lmkit/io/npy.h"
#include "lmkit/quant/abs_histogram.h"
#include "support/run_lmkit.h"

namespace lmkit::quant::test_fixture {

inline std::vector<std::vector<float>> LoadLaplace() {
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

inline float AbsMaxOf(const std::vector<std::vector<float>>& rows) {
  float m = 0;
  for (const auto& r : rows)
    for (float v : r) m = std::max(m, std::fabs(v));
  return m;
}

// The counts AbsHistogram must give, by the scalar torch.histc rule value by value (|v| > amax and NaN dropped).
inline std::vector<uint64_t> ScalarAbsCounts(const std::vector<float>& x, float amax, uint32_t bins) {
  std::vector<uint64_t> want(bins, 0);
  for (float v : x)
    if (std::fabs(v) <= amax) ++want[formats::AbsBin(std::fabs(v), amax, bins)];
  return want;
}

inline AbsHistogram NvidiaHistogram(const std::vector<std::vector<float>>& rows, uint32_t bins = 2048) {
  AbsHistogram h(bins, AbsMaxOf(rows));
  for (const auto& r : rows) h.Add(r.data(), r.size());
  return h;
}

}  // namespace lmkit::quant::test_fixture
