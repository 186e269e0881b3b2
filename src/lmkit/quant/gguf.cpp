#include "lmkit/quant/gguf.h"

#include <cmath>
#include <cstring>

#include "lmkit/io/dtype.h"

namespace lmkit::quant::gguf {
namespace {

// GGUF value types (the spec's gguf_metadata_value_type).
constexpr uint32_t kTypeU32 = 4, kTypeF32 = 6, kTypeString = 8;

void PutU32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutString(std::string& s, std::string_view v) {
  PutU64(s, v.size());
  s.append(v);
}

uint64_t AlignUp(uint64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

// Lanes of the per-block loops: each lane keeps its own max and sums, so the compiler vectorizes the loops without
// reordering any fp operation (the result does not depend on the vector width), and the lanes are combined in a fixed
// order.
constexpr int kLanes = 8;

// ggml's roundf for |v| <= 128 as an integer: |v| rounded half away from zero, sign restored. Exact: truncation gives
// the integer part and a - t is exact below 2^23. Written with integer selects rather than floor and a branch (SSE2 has
// no floor instruction, and the branch mispredicted on every other weight) so that the block loop vectorizes.
inline int32_t RoundHalfAway(float v) {
  const float a = std::fabs(v);
  const int32_t t = static_cast<int32_t>(a);
  const int32_t r = t + static_cast<int32_t>(a - static_cast<float>(t) >= 0.5f);
  return v < 0.0f ? -r : r;
}

}  // namespace

std::string_view GgmlTypeName(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return "F32";
    case GgmlType::kF16: return "F16";
    case GgmlType::kQ8_0: return "Q8_0";
    case GgmlType::kBF16: return "BF16";
  }
  return "?";
}

uint64_t TensorBytes(GgmlType type, const std::vector<uint64_t>& ne) {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  switch (type) {
    case GgmlType::kF32: return n * 4;
    case GgmlType::kF16:
    case GgmlType::kBF16: return n * 2;
    case GgmlType::kQ8_0: return n / kQ8_0Block * kQ8_0BlockBytes;
  }
  return 0;
}

void GgufHeader::AddU32(std::string_view key, uint32_t v) {
  PutString(kv_, key);
  PutU32(kv_, kTypeU32);
  PutU32(kv_, v);
  ++kv_count_;
}

void GgufHeader::AddF32(std::string_view key, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  PutString(kv_, key);
  PutU32(kv_, kTypeF32);
  PutU32(kv_, bits);
  ++kv_count_;
}

void GgufHeader::AddString(std::string_view key, std::string_view v) {
  PutString(kv_, key);
  PutU32(kv_, kTypeString);
  PutString(kv_, v);
  ++kv_count_;
}

bool GgufHeader::AddTensor(std::string_view name, const std::vector<uint64_t>& ne, GgmlType type) {
  if (name.size() > 63) return false;
  tensors_.push_back({std::string(name), ne, type});
  return true;
}

std::string GgufHeader::Serialize() {
  std::string s = "GGUF";
  PutU32(s, 3);
  PutU64(s, tensors_.size());
  PutU64(s, kv_count_);
  s += kv_;
  offsets_.clear();
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    PutString(s, t.name);
    PutU32(s, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) PutU64(s, d);
    PutU32(s, static_cast<uint32_t>(t.type));
    PutU64(s, offset);
    offsets_.push_back(offset);
    offset = AlignUp(offset + TensorBytes(t.type, t.ne));
  }
  data_bytes_ = offset;
  s.resize(AlignUp(s.size()), '\0');
  return s;
}

uint64_t GgufHeader::PaddingAfter(size_t i) const {
  const uint64_t end = offsets_[i] + TensorBytes(tensors_[i].type, tensors_[i].ne);
  return AlignUp(end) - end;
}

bool Q8_0ScaleFits(float absmax) { return std::isfinite(io::F16ToF32(io::F32ToF16(absmax / 127.0f))); }

void QuantizeQ8_0(const float* x, uint64_t n, uint8_t* out, ErrorStats* stats) {
  double sx2[kLanes] = {}, se2[kLanes] = {}, sxh[kLanes] = {}, sh2[kLanes] = {}, emax[kLanes] = {};
  for (uint64_t b = 0; b < n; b += kQ8_0Block, out += kQ8_0BlockBytes) {
    const float* xb = x + b;
    float m[kLanes] = {};
    for (uint64_t j = 0; j < kQ8_0Block; j += kLanes)
      for (int k = 0; k < kLanes; ++k) m[k] = std::max(m[k], std::fabs(xb[j + k]));
    float amax = m[0];
    for (int k = 1; k < kLanes; ++k) amax = std::max(amax, m[k]);
    const float d = amax / 127.0f;
    // A subnormal d can make 1 / d infinite (0 * inf is NaN): such blocks divide instead.
    const float id = d > 0 ? 1.0f / d : 0.0f;
    const uint16_t dh = io::F32ToF16(d);
    const float dq = io::F16ToF32(dh);
    out[0] = static_cast<uint8_t>(dh & 0xff);
    out[1] = static_cast<uint8_t>(dh >> 8);
    int8_t q[kQ8_0Block];
    if (std::isfinite(id)) {
      for (uint64_t j = 0; j < kQ8_0Block; ++j) q[j] = static_cast<int8_t>(RoundHalfAway(xb[j] * id));
    } else {
      for (uint64_t j = 0; j < kQ8_0Block; ++j) q[j] = static_cast<int8_t>(RoundHalfAway(xb[j] / d));
    }
    std::memcpy(out + 2, q, kQ8_0Block);
    for (uint64_t j = 0; j < kQ8_0Block; j += kLanes) {
      for (int k = 0; k < kLanes; ++k) {
        const double xv = xb[j + k], xh = dq * static_cast<float>(q[j + k]), e = xv - xh;
        sx2[k] += xv * xv;
        se2[k] += e * e;
        sxh[k] += xv * xh;
        sh2[k] += xh * xh;
        emax[k] = std::max(emax[k], std::fabs(e));
      }
    }
  }
  for (int k = 0; k < kLanes; ++k) {
    stats->sum_x2 += sx2[k];
    stats->sum_err2 += se2[k];
    stats->sum_x_xhat += sxh[k];
    stats->sum_xhat2 += sh2[k];
    stats->max_abs_err = std::max(stats->max_abs_err, emax[k]);
  }
  stats->count += n;
}

void DequantizeQ8_0(const uint8_t* in, uint64_t n, float* out) {
  for (uint64_t b = 0; b < n; b += kQ8_0Block, in += kQ8_0BlockBytes) {
    const float d = io::F16ToF32(static_cast<uint16_t>(in[0] | (in[1] << 8)));
    for (uint64_t j = 0; j < kQ8_0Block; ++j) out[b + j] = d * static_cast<float>(static_cast<int8_t>(in[2 + j]));
  }
}

}  // namespace lmkit::quant::gguf
