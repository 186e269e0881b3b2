#include "lmkit/quant/format_ref.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lmkit/formats/fp8.h"

namespace lmkit::quant {

float StoredScale(float absmax, formats::Int8Convention convention, io::DType scale_dtype) {
  return StoredScale(absmax, formats::RangeOf(convention).divisor, scale_dtype);
}

float StoredScale(float absmax, float divisor, io::DType scale_dtype) {
  float s = absmax / divisor;
  // A scale below FLT_MIN is subnormal: rounded to nearest it can fall short of absmax / divisor by far more than
  // 2^-24 relative (a scale of 56 * 2^-149 by up to 1%) and push +-absmax past the range. It is rounded up instead, as
  // the 16-bit scales are (the product is exact in fp64).
  if (s < std::numeric_limits<float>::min() && static_cast<double>(s) * divisor < absmax)
    s = std::nextafter(s, std::numeric_limits<float>::infinity());
  if (scale_dtype == io::DType::kBF16) {
    uint32_t bits;
    std::memcpy(&bits, &s, 4);
    return io::Bf16ToF32(formats::Bf16RoundUp(bits));
  }
  if (scale_dtype == io::DType::kF16) {
    uint16_t h = io::F32ToF16(s);
    if (io::F16ToF32(h) < s) ++h;  // positive values: the next bit pattern is the next larger half
    return io::F16ToF32(h);
  }
  return s;
}

double DTypeMaxFinite(io::DType dtype) {
  switch (dtype) {
    case io::DType::kF16:
      return 65504.0;
    case io::DType::kBF16:
      return 0x1.fep127;
    default:
      return std::numeric_limits<float>::max();
  }
}

bool DequantizesFinite(float scale, float code_max, io::DType scale_dtype) {
  return static_cast<double>(scale) * code_max <= DTypeMaxFinite(scale_dtype);
}

void QuantizeRowInt8Ref(const float* x, uint64_t n, float scale, formats::Int8Convention convention, int8_t* codes) {
  const formats::Int8Range range = formats::RangeOf(convention);
  const float inv = formats::InverseScale(scale);
  for (uint64_t i = 0; i < n; ++i) codes[i] = formats::QuantizeValue(x[i], scale, inv, range.lo, range.hi);
}

void QuantizeMatrixInt8Ref(const float* x, uint64_t rows, uint64_t cols, const Granularity& granularity,
                           formats::Int8Convention convention, io::DType scale_dtype, int8_t* codes, float* scales) {
  auto absmax = [](const float* v, uint64_t n) {
    float m = 0;
    for (uint64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(v[i]));
    return m;
  };
  if (granularity.kind == Granularity::Kind::kTensor) {
    scales[0] = StoredScale(absmax(x, rows * cols), convention, scale_dtype);
    QuantizeRowInt8Ref(x, rows * cols, scales[0], convention, codes);
    return;
  }
  // A row is one segment (per channel) or cols / group_size groups, each with its own scale.
  const uint64_t segment = granularity.kind == Granularity::Kind::kGroup ? granularity.group_size : cols;
  for (uint64_t i = 0; i < rows * cols; i += segment) {
    const float s = StoredScale(absmax(x + i, segment), convention, scale_dtype);
    scales[i / segment] = s;
    QuantizeRowInt8Ref(x + i, segment, s, convention, codes + i);
  }
}

float Fp8Scale(float absmax, io::DType scale_dtype) {
  float s = StoredScale(absmax, formats::kE4M3Max, scale_dtype);
  // StoredScale gives the nearest F32 value in the normal range, which can leave 448 s a hair below absmax.
  if (scale_dtype == io::DType::kF32 && static_cast<double>(s) * formats::kE4M3Max < absmax)
    s = std::nextafter(s, std::numeric_limits<float>::infinity());
  return s;
}

void QuantizeRowFp8Ref(const float* x, uint64_t n, float scale, uint8_t* codes) {
  for (uint64_t i = 0; i < n; ++i) codes[i] = formats::E4M3FromF32(scale > 0.0f ? x[i] / scale : 0.0f);
}

void QuantizeBlockQ8_0Ref(const float* x, uint8_t* out) {
  constexpr int kBlock = 32;
  float amax = 0;
  for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  const uint16_t dh = io::F32ToF16(d);
  out[0] = static_cast<uint8_t>(dh & 0xff);
  out[1] = static_cast<uint8_t>(dh >> 8);
  for (int j = 0; j < kBlock; ++j) {
    const float v = std::isfinite(id) ? x[j] * id : x[j] / d;
    out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int32_t>(std::round(v))));
  }
}

}  // namespace lmkit::quant
