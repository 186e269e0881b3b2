// The definition of each weight format lmkit writes, as short scalar loops: INT8 (symmetric, channel / tensor / group
// scales), FP8 E4M3 and GGUF Q8_0. The fast paths (the vector kernels of int8_kernels.h, the threaded drivers of
// quantizer.h and fp8_quantizer.h, gguf.h's block loop) must give these codes and scales bit for bit, and the tests
// hold them to it (tests/unit/quant/format_ref_test.cpp). Speed is not a concern here: read these to learn what a
// format computes.
//
// Contract: pure functions of their arguments; inputs are finite (the drivers report non-finite values and scales that
// would not dequantize finitely as errors before coding). Thread-safe.
#pragma once

#include <cstdint>

#include "lmkit/formats/int8.h"
#include "lmkit/io/dtype.h"
#include "lmkit/quant/granularity.h"

namespace lmkit::quant {

// ---- scales ---------------------------------------------------------------------------------------------------------

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

// ---- INT8 -----------------------------------------------------------------------------------------------------------

// The codes of x[0, n) under one `scale`: q = clamp(rint(x * (1 / scale)), lo, hi) (formats/int8.h: the reciprocal
// in fp32, a division where it overflows, 0 for a zero scale).
void QuantizeRowInt8Ref(const float* x, uint64_t n, float scale, formats::Int8Convention convention, int8_t* codes);

// A rows x cols matrix (row-major) into rows*cols codes and granularity.ScaleCount(rows, cols) scales: each row's,
// group's or the tensor's scale is StoredScale of its absmax, and its values are coded by QuantizeRowInt8Ref.
void QuantizeMatrixInt8Ref(const float* x, uint64_t rows, uint64_t cols, const Granularity& granularity,
                           formats::Int8Convention convention, io::DType scale_dtype, int8_t* codes, float* scales);

// ---- FP8 E4M3 -------------------------------------------------------------------------------------------------------

// absmax / 448 rounded up to `scale_dtype` (F32 included, unlike StoredScale's nearest F32 value), so no |x| <= absmax
// is past 448 s: the scale of FP8 weights and of fp8-static input_scale.
float Fp8Scale(float absmax, io::DType scale_dtype);

// The codes of x[0, n) under `scale`: E4M3FromF32(x / scale) with the division in IEEE fp32 (formats/fp8.h: round to
// nearest even, saturating at +-448); all codes 0 for a zero scale.
void QuantizeRowFp8Ref(const float* x, uint64_t n, float scale, uint8_t* codes);

// ---- GGUF Q8_0 ------------------------------------------------------------------------------------------------------

// One block of 32 values into 34 bytes, as ggml's quantize_row_q8_0_ref: d = absmax / 127 stored as F16 (little-
// endian), then 32 codes round(x * (1 / d)) with halves away from zero, the reciprocal taken of the fp32 d (not the
// stored F16). Where 1 / d overflows (a subnormal d) the values are divided by d instead (ggml multiplies by inf
// there).
void QuantizeBlockQ8_0Ref(const float* x, uint8_t* out);

}  // namespace lmkit::quant
