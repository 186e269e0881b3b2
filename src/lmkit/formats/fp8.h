// FP8 E4M3 (the OCP "E4M3FN" variant: torch.float8_e4m3fn, safetensors F8_E4M3): 1 sign, 4 exponent bits (bias 7),
// 3 mantissa bits, no infinities, 0x7F / 0xFF are NaN, largest finite value 448, smallest subnormal 2^-9. Pure
// functions, host and device; the definition the FP8 quantizer (quant/fp8_quantizer.h) codes with.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "lmkit/formats/host_device.h"

namespace lmkit::formats {

constexpr float kE4M3Max = 448.0f;
constexpr uint8_t kE4M3MaxBits = 0x7e;  // 448 = 2^8 * 1.75
constexpr uint8_t kE4M3NanBits = 0x7f;

// The E4M3 bits of x rounded to nearest, ties to even, saturating: |x| >= 448 (infinity included) gives +-448, as a
// clamp to [-448, 448] followed by a cast to torch.float8_e4m3fn does; NaN gives 0x7F with x's sign. -0 keeps its
// sign. Inputs below 2^-6 land on the subnormal grid (multiples of 2^-9), whose rounding is rint(|x| * 2^9).
LMKIT_HD uint8_t E4M3FromF32(float x) {
  uint32_t bits;
  memcpy(&bits, &x, 4);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return static_cast<uint8_t>(sign | kE4M3NanBits);
  if (abs_bits >= 0x43e00000u) return static_cast<uint8_t>(sign | kE4M3MaxBits);  // |x| >= 448
  if (abs_bits < 0x3c800000u) {                                                   // |x| < 2^-6: subnormal (or 2^-6)
    float a;
    memcpy(&a, &abs_bits, 4);
    // a * 512 is exact (a power-of-two scaling of a value far from overflow); rint rounds half to even, and a result
    // of 8 is the bit pattern of 2^-6, the smallest normal.
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(rintf(a * 512.0f)));
  }
  // Normal: keep the top 3 of fp32's 23 mantissa bits, rounding half to even on the 20 dropped bits; a carry moves
  // into the exponent, and the fp32 exponent bias 127 becomes E4M3's 7 (120 << 3 in the shifted pattern).
  const uint32_t lsb = (abs_bits >> 20) & 1u;
  const uint32_t rounded = (abs_bits + 0x7ffffu + lsb) >> 20;
  uint32_t code = rounded - (120u << 3);
  if (code > kE4M3MaxBits) code = kE4M3MaxBits;  // 448 < |x| < 464 rounds to 448 already; this only guards the carry
  return static_cast<uint8_t>(sign | code);
}

// The value of E4M3 bits (exact in fp32); NaN for 0x7F / 0xFF.
LMKIT_HD float E4M3ToF32(uint8_t b) {
  const uint32_t e = (b >> 3) & 0xfu, m = b & 7u;
  float v;
  if (e == 15 && m == 7) {
    const uint32_t nan = 0x7fc00000u;
    memcpy(&v, &nan, 4);
  } else if (e == 0) {
    v = static_cast<float>(m) * (1.0f / 512.0f);
  } else {
    const uint32_t f = ((e + 120u) << 23) | (m << 20);
    memcpy(&v, &f, 4);
  }
  return (b & 0x80u) ? -v : v;
}

}  // namespace lmkit::formats
