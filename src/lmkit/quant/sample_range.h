// The range of calibration samples (min, max, min|x|, max|x|, finiteness), found by vector kernels in the same pass
// over memory as the histograms where they can (histogram_kernels.h).
#pragma once

#include <cstdint>
#include <limits>

namespace lmkit {
class ThreadPool;
}

namespace lmkit::quant {

// min, max, min|x|, max|x| and finiteness of samples. NaN is skipped by the four extremes (+-inf is not); both clear
// `finite`. With no samples the extremes stay at their identities. Merge is order-free.
struct SampleRange {
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
  float abs_min = std::numeric_limits<float>::infinity();
  float abs_max = 0;
  bool finite = true;
  void Merge(const SampleRange& other);
};
// Folds x[0, n) into *r (vector kernels: AVX-512, AVX2 or portable, chosen at run time; all give the same result).
void ScanRange(const float* x, uint64_t n, SampleRange* r);
// The range of x[0, n), split over `pool` in fixed pieces when given (the same result for any thread count).
SampleRange ScanSamples(const float* x, uint64_t n, ThreadPool* pool = nullptr);

}  // namespace lmkit::quant
