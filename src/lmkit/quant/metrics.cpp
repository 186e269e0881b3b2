#include "lmkit/quant/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lmkit::quant {

void ErrorStats::Merge(const ErrorStats& o) {
  count += o.count;
  clipped += o.clipped;
  sum_x2 += o.sum_x2;
  sum_err2 += o.sum_err2;
  sum_x_xhat += o.sum_x_xhat;
  sum_xhat2 += o.sum_xhat2;
  max_abs_err = std::max(max_abs_err, o.max_abs_err);
}

double ErrorStats::SqnrDb() const {
  // An exact reconstruction has infinite SQNR; JSON cannot carry inf, so callers print it as null / "inf".
  if (sum_err2 == 0) return std::numeric_limits<double>::infinity();
  if (sum_x2 == 0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(sum_x2 / sum_err2);
}

double ErrorStats::Cosine() const {
  if (sum_x2 == 0 && sum_xhat2 == 0) return 1.0;
  if (sum_x2 == 0 || sum_xhat2 == 0) return 0.0;
  // The quantizer derives sum_x_xhat from the other three sums (int8_kernels.h); when the error is 0 or nearly so,
  // their last-bit rounding could put the quotient a hair above 1, which a cosine never is.
  return std::min(1.0, sum_x_xhat / std::sqrt(sum_x2 * sum_xhat2));
}

ErrorStats CompareValues(const float* x, const float* xhat, uint64_t n) {
  ErrorStats s;
  s.count = n;
  for (uint64_t i = 0; i < n; ++i) {
    double a = x[i], b = xhat[i], e = a - b;
    s.sum_x2 += a * a;
    s.sum_err2 += e * e;
    s.sum_x_xhat += a * b;
    s.sum_xhat2 += b * b;
    s.max_abs_err = std::max(s.max_abs_err, std::fabs(e));
  }
  return s;
}

}  // namespace lmkit::quant
