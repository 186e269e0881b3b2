// CUDA kernels for INT8 quantization and calibration histograms, behind host launchers that return Status.
//
// Contract: every function is callable in every build. Without CUDA (or without a device) they return kUnsupported
// (stub: src/lmkit/quant/quant_kernels_nocuda.cpp). Outputs are defined by the CPU references and must agree bit for
// bit: QuantizePerChannel == quant::QuantizeMatrix with channel granularity (codes and stored scales, int8_format.h;
// for input with NaN or inf, the same kInvalidInput error naming the first such element), AbsHistogram ==
// quant::AbsHistogram::Add (bins from quant::AbsBin). The *Host functions copy host buffers to the device and back
// (for tests and small inputs), to device buffers at the host data's offset from a 16-byte boundary, so the kernel
// variant that runs is the one device data of that alignment gets; the Bench* functions time the kernels on
// device-resident data with CUDA events and report achieved bandwidth (bytes read + written per second). Every CUDA
// call goes through LMKIT_CUDA_CHECK. Not thread-safe (uses the default stream of the current device). This header is
// C++17 so .cu files can include it.
#pragma once

#include <cstdint>

#include "lmkit/common/status.h"
#include "lmkit/quant/int8_format.h"

namespace lmkit::cuda {

enum class ElemType : uint8_t { kF32, kF16, kBF16 };

// rows x cols elements of `type` (host memory) -> rows*cols codes and `rows` scales (fp32 values representable in
// `scale_type`, rounded up as the CPU reference does).
Status QuantizePerChannelHost(const void* data, ElemType type, uint64_t rows, uint64_t cols,
                              quant::Int8Convention convention, ElemType scale_type, int8_t* codes, float* scales);

// How the histogram kernel adds to its shared-memory counters: one atomic per value (kShared), or one per group of a
// warp's lanes whose values share a bin (kWarpAggregated: pays a warp match per value, saves the serialised atomics
// when most values fall in a few bins, as when a far outlier sets amax). The counts are the same.
enum class HistogramKernel : uint8_t { kShared, kWarpAggregated };

// counts[bins] += number of |x[i]| in each bin over [0, amax] (values above amax and NaN are skipped).
Status AbsHistogramHost(const float* x, uint64_t n, float amax, uint32_t bins, uint64_t* counts,
                        HistogramKernel kernel = HistogramKernel::kShared);

struct KernelTiming {
  double seconds = 0;  // per call, median of the timed iterations
  double bytes = 0;    // bytes read + written per call
  double gb_per_s = 0;
};

// BF16 [rows, cols] -> codes + BF16-representable scales, device-resident. two_reads: time the kernel that reads each
// row twice (the one used for rows too long to hold in registers) instead of the one QuantizePerChannelHost picks.
Result<KernelTiming> BenchQuantizePerChannel(uint64_t rows, uint64_t cols, int iterations, bool two_reads = false);

// What the histogram benchmark counts: |x| uniform over [0, amax) (every bin alike); Laplace-distributed with amax
// at the sample maximum (most counts in the low bins, like activations: shared-memory atomics collide more); or the
// same values under an amax 60x their maximum, as a far outlier sets it (every count in the first 35 bins).
enum class BenchData : uint8_t { kUniform, kLaplace, kOutlierRange };
// n fp32 values into a `bins` histogram, device-resident.
Result<KernelTiming> BenchAbsHistogram(uint64_t n, uint32_t bins, int iterations, BenchData data = BenchData::kUniform,
                                       HistogramKernel kernel = HistogramKernel::kShared);

}  // namespace lmkit::cuda
