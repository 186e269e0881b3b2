#include "lmkit/quant/smoothquant.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "lmkit/quant/gptq.h"

namespace lmkit::quant {

TEST_CASE("SmoothQuant scales follow range^a / (2 max|W|)^(1-a), with llm-compressor's floor and zero rule",
          "[quant][smoothquant]") {
  const std::vector<float> range = {4.0f, 1.0f, 0.0f, 9.0f, 0.5f};
  const float w1[5] = {0.5f, -2.0f, 0.0f, 1.0f, 0.0f};
  const float w2[10] = {-1.0f, 1.0f, 0.0f, 0.25f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  const std::vector<BalancedWeight> ws = {{w1, 1}, {w2, 2}};
  // By hand: 2 max|W_j| = {2, 4, 0, 2, 0}.
  auto s = SmoothingScales(range, ws, 0.5);
  CHECK(s[0] == Approx(std::sqrt(4.0 / 2.0)).epsilon(1e-7));
  CHECK(s[1] == Approx(0.5).epsilon(1e-7));
  CHECK(s[2] == kMinSmoothingScale);  // zero weights: s = range = 0, floored
  CHECK(s[3] == Approx(3.0 / std::sqrt(2.0)).epsilon(1e-7));
  CHECK(s[4] == 0.5f);  // zero weights: s = range
  s = SmoothingScales(range, ws, 0.8);
  CHECK(s[0] == Approx(std::pow(4.0, 0.8) / std::pow(2.0, 0.2)).epsilon(1e-7));
  CHECK(s[3] == Approx(std::pow(9.0, 0.8) / std::pow(2.0, 0.2)).epsilon(1e-7));
  s = SmoothingScales(range, ws, 0.0);  // alpha 0: 1 / (2 max|W|)
  CHECK(s[1] == Approx(0.25).epsilon(1e-7));
}

TEST_CASE("SmoothQuant folding keeps the float function and smooths the Hessian", "[quant][smoothquant]") {
  std::mt19937 rng(3);
  std::normal_distribution<float> n01;
  const uint64_t cols = 16, rows = 6, tokens = 40;
  std::vector<float> x(tokens * cols), norm(cols), w(rows * cols);
  for (uint64_t t = 0; t < tokens; ++t)
    for (uint64_t c = 0; c < cols; ++c) x[t * cols + c] = n01(rng) * (c == 5 ? 30.0f : 1.0f);  // an outlier channel
  for (float& v : norm) v = 1.0f + 0.1f * n01(rng);
  for (float& v : w) v = 0.1f * n01(rng);
  // The norm's output is x * norm; its range per channel.
  std::vector<float> y(x.size());
  for (uint64_t t = 0; t < tokens; ++t)
    for (uint64_t c = 0; c < cols; ++c) y[t * cols + c] = x[t * cols + c] * norm[c];
  ChannelRange cr(cols);
  cr.Add(y.data(), 15);
  cr.Add(y.data() + 15 * cols, tokens - 15);
  CHECK(cr.rows() == tokens);
  const std::vector<float> range = cr.Range();
  for (uint64_t c = 0; c < cols; ++c) {
    float lo = y[c], hi = y[c];
    for (uint64_t t = 1; t < tokens; ++t) {
      lo = std::min(lo, y[t * cols + c]);
      hi = std::max(hi, y[t * cols + c]);
    }
    CHECK(range[c] == hi - lo);
  }
  const std::vector<float> s = SmoothingScales(range, {{w.data(), rows}}, 0.5);
  CHECK(s[5] > 3 * s[4]);  // the outlier channel is divided the most
  std::vector<float> norm2 = norm, w2 = w;
  FoldIntoNorm(s, norm2.data());
  FoldIntoWeight(s, w2.data(), rows);
  for (uint64_t t = 0; t < tokens; ++t)
    for (uint64_t r = 0; r < rows; ++r) {
      double a = 0, b = 0, mag = 0;
      for (uint64_t c = 0; c < cols; ++c) {
        a += static_cast<double>(w[r * cols + c]) * x[t * cols + c] * norm[c];
        b += static_cast<double>(w2[r * cols + c]) * x[t * cols + c] * norm2[c];
        mag += std::fabs(static_cast<double>(w[r * cols + c]) * x[t * cols + c] * norm[c]);
      }
      CHECK(std::fabs(a - b) <= 1e-6 * mag);
    }
  // The Hessian of the smoothed input y / s equals D^-1 H D^-1.
  std::vector<float> ys(y.size());
  for (uint64_t t = 0; t < tokens; ++t)
    for (uint64_t c = 0; c < cols; ++c) ys[t * cols + c] = x[t * cols + c] * norm2[c];
  HessianAccumulator h(cols), hs(cols);
  h.Add(y.data(), tokens, nullptr);
  hs.Add(ys.data(), tokens, nullptr);
  std::vector<double> hd = h.Hessian();
  const std::vector<double> want = hs.Hessian();
  SmoothHessian(s, hd.data());
  // H is summed in fp32 chunks: entries agree within 1e-5 of their scale sqrt(H_ii H_jj).
  for (uint64_t i = 0; i < cols; ++i)
    for (uint64_t j = 0; j < cols; ++j)
      CHECK(std::fabs(hd[i * cols + j] - want[i * cols + j]) <=
            1e-5 * std::sqrt(want[i * cols + i] * want[j * cols + j]) + 1e-12);
}

}  // namespace lmkit::quant
