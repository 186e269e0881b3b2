// The CPU reference INT8 quantizer for 2-D weights: per-channel (row), per-tensor or per-group symmetric scales, with
// the error metrics of the report computed in the same pass. This code is the definition of the formats lmkit writes;
// the CUDA kernels are tested against it bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/formats/int8.h"
#include "lmkit/io/dtype.h"
#include "lmkit/quant/granularity.h"
#include "lmkit/quant/metrics.h"

namespace lmkit::quant {

// The stored scale for `absmax` (>= 0, finite): smallest value of `scale_dtype` (F32, F16, BF16) >= absmax / divisor
// (for F32 scales in the normal range, the nearest: within 2^-24 relative). F16 scales need absmax <= 65504 * divisor
// (inf beyond), which F16 weights always satisfy; lmkit stores scales in the weight's dtype.
float StoredScale(float absmax, formats::Int8Convention convention, io::DType scale_dtype);
// The same rule for any divisor (448 for FP8 E4M3).
float StoredScale(float absmax, float divisor, io::DType scale_dtype);

// The largest finite value of F32, F16 or BF16.
double DTypeMaxFinite(io::DType dtype);
// Whether code_max * scale, what a loader computes when it dequantizes the largest code, stays finite in
// `scale_dtype` (the product taken exactly). Near the float maximum it does not: |w| = 3.4e38 with INT8's code -128
// (128 * 3.4e38 / 127.5 > FLT_MAX), or |w| near 65504 in F16; the quantizers refuse such weights.
bool DequantizesFinite(float scale, float code_max, io::DType scale_dtype);

struct QuantizeMatrixOptions {
  Granularity granularity;
  formats::Int8Convention convention = formats::Int8Convention::kHalfStep;
  io::DType scale_dtype = io::DType::kF32;
};

// Reads `rows x cols` elements of `dtype` (F32, F16 or BF16, little-endian, row-major, possibly unaligned, e.g. from
// a memory map) and writes rows*cols `codes` (formats/int8.h) and granularity.ScaleCount(rows, cols) `scales`
// (StoredScale of each row's, group's or the tensor's absmax: values exactly representable in the scale dtype); zero
// rows/groups/tensors get scale 0 and codes 0. `stats` (optional) receives the error metrics of the whole matrix.
// Errors, kInvalidInput without a subject (the caller names the tensor): "non-finite value at [row, col]", a weight
// whose code lo times its scale overflows the scale dtype (DequantizesFinite), a group size that does not divide cols,
// an unsupported dtype. Same bytes and stats for any thread count; `pool` may be null. Thread-safe (no shared state).
Status QuantizeMatrix(const void* data, io::DType dtype, uint64_t rows, uint64_t cols,
                      const QuantizeMatrixOptions& options, ThreadPool* pool, int8_t* codes, float* scales,
                      ErrorStats* stats);

// Streaming I/O for QuantizeMatrix. `read` fills `dst` with the raw bytes of rows [first, first + count)
// (count * cols * dtype size bytes); `write` receives the codes of rows [first, first + count) (count * cols bytes).
// Both are called from pool workers at the same time for disjoint row ranges, in no particular order, so they must be
// thread-safe; a non-ok status stops the work.
struct RowStreams {
  std::function<Status(uint64_t first, uint64_t count, uint8_t* dst)> read;
  std::function<Status(uint64_t first, uint64_t count, const int8_t* codes)> write;
};

// The same, with rows read and codes written through `streams` in blocks of >= 128 KiB of input per worker instead of
// whole matrices in memory; codes, scales and stats are identical. Nothing is written for a matrix with a non-finite
// value once it is found (rows written before it may have been); the first failed stream call (in row order among
// those attempted) is returned unchanged. Why: on the build VM, reading a memory-mapped file page by page ran at
// 1.8 GB/s against 8.6 GB/s for pread into a reused buffer, and writing the codes from the workers in parallel
// removes a serial phase (docs/benchmarks/quant.md).
Status QuantizeMatrix(const RowStreams& streams, io::DType dtype, uint64_t rows, uint64_t cols,
                      const QuantizeMatrixOptions& options, ThreadPool* pool, float* scales, ErrorStats* stats);

// Tests only: true makes every later call use the baseline (SSE2) loops instead of the AVX2 / AVX-512 ones, which must
// give the same bytes and stats; false restores the run-time choice.
void ForceBaselineKernelsForTesting(bool on);
// Tests only: true makes later calls use the AVX2 loops where the CPU has AVX-512 (same bytes and stats again).
void ForceAvx2KernelsForTesting(bool on);

// Dequantizes codes with the scales QuantizeMatrix produced (for tests and the report's checks).
void DequantizeMatrix(const int8_t* codes, const float* scales, uint64_t rows, uint64_t cols,
                      const Granularity& granularity, float* out);

}  // namespace lmkit::quant
