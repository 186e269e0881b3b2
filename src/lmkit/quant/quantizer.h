// The INT8 quantizer for 2-D weights: per-channel (row), per-tensor or per-group symmetric scales, with the error
// metrics of the report computed in the same pass, on the pool's threads. Its codes and scales are those of the
// format's scalar reference (format_ref.h, which also declares StoredScale); its kernels are int8_kernels.h's, its
// streams row_stream.h's. The CUDA kernels are tested against it bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/formats/int8.h"
#include "lmkit/io/dtype.h"
#include "lmkit/quant/format_ref.h"
#include "lmkit/quant/granularity.h"
#include "lmkit/quant/metrics.h"
#include "lmkit/quant/row_stream.h"

namespace lmkit::quant {

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
