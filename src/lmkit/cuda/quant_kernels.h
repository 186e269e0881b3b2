// CUDA kernels for INT8 quantization and calibration histograms, behind host launchers that return Status. The CPU
// references define the outputs (formats/int8.h, formats/histogram_bins.h) and tests/unit/quant/quant_kernels_test.cpp
// holds the kernels to them bit for bit, on a GPU or on the CPU emulator of tests/emu. Every function is callable in
// every build: without CUDA (stub: quant_kernels_nocuda.cpp) or without a device it returns kUnsupported. Every CUDA
// call goes through LMKIT_CUDA_CHECK (kIo naming the call). This header is C++17 so .cu files can include it.
#pragma once

#include <cstdint>

#include "lmkit/common/status.h"
#include "lmkit/formats/int8.h"

// cudaStream_t, spelled without CUDA's headers (the runtime declares it as a pointer to this struct).
struct CUstream_st;

namespace lmkit::cuda {

// The stream a launcher enqueues its copies and kernels on; nullptr is the default stream. Launchers synchronize it
// before they return.
using Stream = CUstream_st*;

// A non-blocking stream of the current device, destroyed with the object; move-only. Create returns kUnsupported where
// the launchers do (no CUDA, no device) and kIo for a failed cudaStreamCreateWithFlags.
class OwnedStream {
 public:
  static Result<OwnedStream> Create();
  OwnedStream() = default;
  OwnedStream(OwnedStream&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  OwnedStream& operator=(OwnedStream&& o) noexcept;
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  ~OwnedStream();
  Stream get() const { return s_; }

 private:
  Stream s_ = nullptr;
};

enum class ElemType : uint8_t { kF32, kF16, kBF16 };

// rows x cols elements of `type` (host memory) -> rows*cols codes and `rows` scales (fp32 values representable in
// `scale_type`, rounded up), equal to quant::QuantizeMatrix with channel granularity; for input with NaN or inf, the
// same kInvalidInput error naming the first such element. The data are copied to a device buffer at the host data's
// offset from a 16-byte boundary, so the kernel variant that runs is the one device data of that alignment gets.
// kUnsupported naming Field("rows") past 2^31 - 1 rows. Each call owns its device buffers.
Status QuantizePerChannelHost(const void* data, ElemType type, uint64_t rows, uint64_t cols,
                              formats::Int8Convention convention, ElemType scale_type, int8_t* codes, float* scales,
                              Stream stream = nullptr);

// How the histogram kernel adds to its shared-memory counters: one atomic per value (kShared), or one per group of a
// warp's lanes whose values share a bin (kWarpAggregated: pays a warp match per value, saves the serialised atomics
// when most values fall in a few bins, as when a far outlier sets amax). The counts are the same.
enum class HistogramKernel : uint8_t { kShared, kWarpAggregated };

// counts[bins] += number of |x[i]| in each bin over [0, amax] (values above amax and NaN are skipped), equal to
// quant::AbsHistogram::Add. kUnsupported naming Field("bins") outside [1, 12288].
Status AbsHistogramHost(const float* x, uint64_t n, float amax, uint32_t bins, uint64_t* counts,
                        HistogramKernel kernel = HistogramKernel::kShared, Stream stream = nullptr);

// The benchmarks time the kernels on device-resident data with CUDA events on the default stream and report achieved
// bandwidth.
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
