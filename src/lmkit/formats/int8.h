// Symmetric INT8 coding: the element-level definition shared by the CPU quantizer (quant/quantizer.h) and the CUDA
// kernels (cuda/quant_kernels.h), so that their codes agree bit for bit. Pure functions, host and device; docs/quant.md
// lists the conventions and their sources.
//
// A code is q = clamp(rint(x * inv_scale), lo, hi) where inv_scale = 1 / scale is computed once per scale in fp32
// (IEEE division) and rint rounds half to even (the default FP environment). The multiply by the reciprocal instead
// of a division per element is part of the definition (measured: ~3x cheaper on AVX2, and GPU kernels do the same);
// it can move a value that sits within one fp32 ulp of a .5 boundary to the neighbouring code, which is why the
// dequantization error bound the tests check is scale * (0.5 + 2e-5) (|x / scale| <= 128, fp32 relative error 2^-23).
#pragma once

#include <cmath>
#include <cstdint>

#include "lmkit/formats/host_device.h"

namespace lmkit::formats {

// Which symmetric convention a format follows (reference/quant.md's table).
enum class Int8Convention : uint8_t {
  // compressed-tensors / llm-compressor / PyTorch qint8 symmetric: scale = absmax / 127.5, codes [-128, 127].
  // +absmax lands exactly on 127.5, which rounds (half-even) to 128 and saturates to 127: the one value per scale
  // that is "clipped", by exactly scale/2.
  kHalfStep,
  // TensorRT weights, ONNX Runtime, bitsandbytes: scale = absmax / 127, codes [-127, 127] (no clipping by absmax).
  kSymmetric127,
};

struct Int8Range {
  float divisor;  // absmax / divisor = scale before it is rounded to the scale dtype
  float lo;
  float hi;
};

// The divisor and code range of convention `c`.
LMKIT_HD Int8Range RangeOf(Int8Convention c) {
  return c == Int8Convention::kHalfStep ? Int8Range{127.5f, -128.0f, 127.0f} : Int8Range{127.0f, -127.0f, 127.0f};
}

// The reciprocal used for coding; 0 for a zero scale so a zero channel gives zero codes (never NaN).
LMKIT_HD float InverseScale(float scale) { return scale > 0.0f ? 1.0f / scale : 0.0f; }

// Whether codes are taken by dividing by the scale instead: a subnormal scale below 2^-128 (an absmax under ~3.7e-37)
// has an infinite reciprocal, and x * inf would saturate every non-zero value and make 0 * inf NaN.
LMKIT_HD bool DivideByScale(float inv) { return !(inv <= 3.4028234663852886e38f); }

// rint(x * inv) before clamping (rint(x / scale) where DivideByScale(inv)).
LMKIT_HD float RoundedUnclamped(float x, float scale, float inv) {
  return rintf(DivideByScale(inv) ? x / scale : x * inv);
}

// The code of x under `scale` (with inv = InverseScale(scale)) in the range [lo, hi].
LMKIT_HD int8_t QuantizeValue(float x, float scale, float inv, float lo, float hi) {
  float v = RoundedUnclamped(x, scale, inv);
  v = fminf(fmaxf(v, lo), hi);
  return static_cast<int8_t>(static_cast<int>(v));
}

// BF16 bits of a non-negative finite fp32 value (given as bits), rounded UP (toward +inf). Scales stored in 16-bit
// dtypes are rounded up from absmax/divisor so that absmax / stored_scale never exceeds the divisor: the dequantization
// error of every element stays within stored_scale / 2 (rounding to nearest could shrink the scale by 2^-9 relative in
// BF16 and push +absmax to 127.75 -> saturation error 0.75 scale).
LMKIT_HD uint16_t Bf16RoundUp(uint32_t f32_bits) {
  uint32_t hi = f32_bits >> 16;
  return static_cast<uint16_t>((f32_bits & 0xffffu) != 0 ? hi + 1 : hi);  // carries into the exponent correctly
}

}  // namespace lmkit::formats
