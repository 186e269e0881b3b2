#include "lmkit/quant/smoothquant.h"

#include <algorithm>
#include <cmath>

namespace lmkit::quant {

void ChannelRange::Add(const float* x, uint64_t rows) {
  const uint64_t n = min_.size();
  for (uint64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    // The first row sets the range (a channel that is always positive has min > 0, as in llm-compressor).
    if (rows_ == 0 && r == 0) {
      std::copy(xr, xr + n, min_.begin());
      std::copy(xr, xr + n, max_.begin());
      continue;
    }
    for (uint64_t j = 0; j < n; ++j) {
      min_[j] = std::min(min_[j], xr[j]);
      max_[j] = std::max(max_[j], xr[j]);
    }
  }
  rows_ += rows;
}

std::vector<float> ChannelRange::Range() const {
  std::vector<float> out(min_.size());
  for (size_t j = 0; j < out.size(); ++j) out[j] = max_[j] - min_[j];
  return out;
}

std::vector<float> SmoothingScales(const std::vector<float>& range, const std::vector<BalancedWeight>& weights,
                                   double alpha) {
  const uint64_t n = range.size();
  std::vector<float> wmax(n, 0.0f);
  for (const BalancedWeight& w : weights)
    for (uint64_t r = 0; r < w.rows; ++r)
      for (uint64_t j = 0; j < n; ++j) wmax[j] = std::max(wmax[j], std::fabs(w.data[r * n + j]));
  std::vector<float> s(n);
  for (uint64_t j = 0; j < n; ++j) {
    const double wr = 2.0 * static_cast<double>(wmax[j]);
    const double v = wr > 0 ? std::pow(static_cast<double>(range[j]), alpha) / std::pow(wr, 1.0 - alpha)
                            : static_cast<double>(range[j]);
    s[j] = std::max(static_cast<float>(v), kMinSmoothingScale);
  }
  return s;
}

void FoldIntoNorm(const std::vector<float>& scales, float* norm) {
  for (size_t j = 0; j < scales.size(); ++j) norm[j] /= scales[j];
}

void FoldIntoWeight(const std::vector<float>& scales, float* w, uint64_t rows) {
  const uint64_t n = scales.size();
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t j = 0; j < n; ++j) w[r * n + j] *= scales[j];
}

void SmoothHessian(const std::vector<float>& scales, double* h) {
  const uint64_t n = scales.size();
  for (uint64_t i = 0; i < n; ++i)
    for (uint64_t j = 0; j < n; ++j) h[i * n + j] /= static_cast<double>(scales[i]) * static_cast<double>(scales[j]);
}

}  // namespace lmkit::quant
