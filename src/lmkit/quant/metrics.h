// Error metrics of a quantized tensor against its original: SQNR, cosine similarity, MSE, max abs error, share of
// saturated codes.
//
// Contract: ErrorStats holds fp64 sums (fp32 accumulation over millions of elements drifts enough to give cosines > 1),
// filled by the quantizer per row and merged in row order, so results do not depend on the thread count. Plain value
// type; not synchronised.
#pragma once

#include <cstdint>

namespace lmkit::quant {

struct ErrorStats {
  uint64_t count = 0;
  uint64_t clipped = 0;   // codes the range clamp changed (e.g. +absmax -> 127.5 -> 128 -> 127)
  double sum_x2 = 0;      // sum x^2
  double sum_err2 = 0;    // sum (x - xhat)^2
  double sum_x_xhat = 0;  // sum x * xhat
  double sum_xhat2 = 0;   // sum xhat^2
  double max_abs_err = 0;

  void Merge(const ErrorStats& o);
  // 10 log10(sum x^2 / sum err^2); +inf when the error is 0 (an exact reconstruction, including all-zero input).
  double SqnrDb() const;
  // x . xhat / (|x| |xhat|); 1 when both are all zero, 0 when exactly one is.
  double Cosine() const;
  double Mse() const { return count ? sum_err2 / static_cast<double>(count) : 0.0; }
  double ClippedShare() const { return count ? static_cast<double>(clipped) / static_cast<double>(count) : 0.0; }
};

// Stats of `xhat` against `x` over n elements (fp64 accumulation), for tests and independent checks.
ErrorStats CompareValues(const float* x, const float* xhat, uint64_t n);

}  // namespace lmkit::quant
