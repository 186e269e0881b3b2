// The integer matrix product of the W8A8 Linear kinds: acc[r][c] = sum over k of xq[r][k] * W[c][k] in int32.
// Integer sums are exact, so every kernel (AVX2 vpmaddwd here, the scalar GemmI8Ref) gives the same values in any
// order, on any machine, for any split into tiles. Dispatch: AVX2 or the scalar loop; there are no AVX-512 VNNI,
// AVX-VNNI or AMX kernels (not runnable on the Zen 2 machines this was measured on, so not shipped untested). |acc| <=
// in * 128 * 128 fits int32 for in <= 131072.
//
// Packed weights: panel p holds outputs [16p, 16p + 16) (rows past `out` are zero), k in pairs (a zero code pads an
// odd `in`): pair j is 32 bytes, outputs 0..7 then 8..15, each output's two codes k = 2j, 2j + 1 side by side.
// Activations are int16 codes (values in [-128, 127]), row stride `ldx` even and >= in rounded up to even, with a zero
// at position `in` when `in` is odd.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lmkit/model/gemm_f32.h"

namespace lmkit::model::gemm {

// Rounds `in` up to even: the activation row stride GemmI8 needs.
inline size_t I8RowStride(uint32_t in) { return (size_t{in} + 1) & ~size_t{1}; }

// Panels of w [out, in]; the result has ceil(out / 16) * 16 * I8RowStride(in) codes.
AlignedVector<int8_t> PackI8Panels(const int8_t* w, uint32_t out, uint32_t in);

// acc[r * ldacc + (c - c0)] for r in [0, rows), c in [c0, c1) (c0 a multiple of 16). `w` is packed (PackI8Panels)
// when `packed`, else [out, in] as stored (each call then packs the panels it reads). Thread-safe.
void GemmI8(const int8_t* w, bool packed, uint32_t out, uint32_t in, const int16_t* xq, size_t ldx, size_t rows,
            uint32_t c0, uint32_t c1, int32_t* acc, size_t ldacc);
// The definition, plain int32 sums over w [out, in] as stored (for tests).
void GemmI8Ref(const int8_t* w, uint32_t in, const int16_t* xq, size_t ldx, size_t rows, uint32_t c0, uint32_t c1,
               int32_t* acc, size_t ldacc);

}  // namespace lmkit::model::gemm
