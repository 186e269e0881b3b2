// The CPU reference FP8 E4M3 weight quantizer (compressed-tensors "float-quantized", llm-compressor's FP8 recipes):
// per-channel or per-tensor symmetric scales with the error metrics of the report computed in the same pass.
//
// Definition (format_ref.h: Fp8Scale, QuantizeRowFp8Ref): scale s = Fp8Scale(absmax, scale_dtype) (absmax / 448 rounded
// up to the scale dtype), code = formats::E4M3FromF32(x / s) with the division in IEEE fp32 (round to nearest even,
// saturating at +-448), dequantized value fl32(E4M3ToF32(code) * s). Zero rows (or tensors) get scale 0 and codes 0.
// Errors (kInvalidInput, no subject: the caller names the tensor): NaN/Inf ("non-finite value at [row, col]"); a weight
// so large that 448 * s is beyond the scale dtype's range, where every loader would dequantize it to inf; group
// granularity (FP8 takes channel or tensor scales); an unsupported dtype. Deterministic for any thread count (rows are
// reduced in index order); thread-safe.
#pragma once

#include <cstdint>

#include "lmkit/common/status.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/io/dtype.h"
#include "lmkit/quant/granularity.h"
#include "lmkit/quant/metrics.h"
#include "lmkit/quant/quantizer.h"

namespace lmkit::quant {

struct Fp8MatrixOptions {
  Granularity granularity;  // channel or tensor
  io::DType scale_dtype = io::DType::kF32;
};

// rows x cols elements of `dtype` (F32, F16, BF16; row-major, possibly unaligned) -> rows*cols E4M3 bytes in `codes`
// and granularity.ScaleCount(rows, cols) scales; `stats` (optional) gets the error metrics.
Status QuantizeMatrixFp8(const void* data, io::DType dtype, uint64_t rows, uint64_t cols,
                         const Fp8MatrixOptions& options, ThreadPool* pool, uint8_t* codes, float* scales,
                         ErrorStats* stats);

// The same through `streams` (quantizer.h): rows are read in blocks by the pool's workers and the E4M3 bytes written
// back through streams.write (its int8_t pointer carries the E4M3 bytes); same results as the in-memory version.
Status QuantizeMatrixFp8(const RowStreams& streams, io::DType dtype, uint64_t rows, uint64_t cols,
                         const Fp8MatrixOptions& options, ThreadPool* pool, float* scales, ErrorStats* stats);

}  // namespace lmkit::quant
