#include "lmkit/quant/gguf.h"

#include <cmath>
#include <cstring>
#include <limits>

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
    case GgmlType::kF32:
      return "F32";
    case GgmlType::kF16:
      return "F16";
    case GgmlType::kQ8_0:
      return "Q8_0";
    case GgmlType::kBF16:
      return "BF16";
  }
  return "?";
}

uint64_t TensorBytes(GgmlType type, const std::vector<uint64_t>& ne) {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  switch (type) {
    case GgmlType::kF32:
      return n * 4;
    case GgmlType::kF16:
    case GgmlType::kBF16:
      return n * 2;
    case GgmlType::kQ8_0:
      return n / kQ8_0Block * kQ8_0BlockBytes;
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

// target_clones dispatches through an ifunc resolver that the dynamic loader runs before ThreadSanitizer's runtime
// is up, and the instrumented resolver crashes there: TSan builds (scripts/tsan.sh) keep the default clone only.
#if defined(__SANITIZE_THREAD__)
#define LMKIT_Q8_0_CLONES
#else
#define LMKIT_Q8_0_CLONES __attribute__((target_clones("avx2", "default")))
#endif

// Cloned for AVX2 (chosen at run time): the lane loops then run 8 floats wide instead of SSE2's 4. The lanes fix the
// order of every operation, and AVX2 brings no FMA, so both clones give the same bytes and sums.
LMKIT_Q8_0_CLONES Q8_0Status QuantizeQ8_0(const float* x, uint64_t n, uint8_t* out, ErrorStats* stats, float* scale_min,
                                          float* scale_max) {
  double sx2 = 0, se2 = 0, sh2 = 0;
  float emax = 0, lo = *scale_min, hi = *scale_max;
  for (uint64_t b = 0; b < n; b += kQ8_0Block, out += kQ8_0BlockBytes) {
    const float* xb = x + b;
    float m[kLanes] = {};
    int32_t bad[kLanes] = {};
    for (uint64_t j = 0; j < kQ8_0Block; j += kLanes) {
      for (int k = 0; k < kLanes; ++k) {
        const float a = std::fabs(xb[j + k]);
        m[k] = std::max(m[k], a);
        bad[k] |= !(a <= std::numeric_limits<float>::max());  // NaN or inf
      }
    }
    float amax = m[0];
    int32_t any_bad = bad[0];
    for (int k = 1; k < kLanes; ++k) {
      amax = std::max(amax, m[k]);
      any_bad |= bad[k];
    }
    if (any_bad) return Q8_0Status::kNonFinite;
    const float d = amax / 127.0f;
    const uint16_t dh = io::F32ToF16(d);
    const float dq = io::F16ToF32(dh);
    if (!std::isfinite(dq)) return Q8_0Status::kScaleOverflow;
    lo = std::min(lo, dq);
    hi = std::max(hi, dq);
    out[0] = static_cast<uint8_t>(dh & 0xff);
    out[1] = static_cast<uint8_t>(dh >> 8);
    // A subnormal d can make 1 / d infinite (0 * inf is NaN): such blocks divide instead.
    const float id = d > 0 ? 1.0f / d : 0.0f;
    int32_t q[kQ8_0Block];
    if (std::isfinite(id)) {
      for (uint64_t j = 0; j < kQ8_0Block; ++j) q[j] = RoundHalfAway(xb[j] * id);
    } else {
      for (uint64_t j = 0; j < kQ8_0Block; ++j) q[j] = RoundHalfAway(xb[j] / d);
    }
    // Per-block partial sums in fp32 lanes (at most 4 terms each), then fp64 across blocks. x^ = dq * q is exact in
    // fp32 (11 + 8 significant bits), so sum x^2 = dq^2 * sum q^2 exactly, and sum x x^ follows from
    // 2 x x^ = x^2 + x^2 - e^2 without a rounding of its own.
    float px[kLanes] = {}, pe[kLanes] = {}, pm[kLanes] = {};
    int32_t pq[kLanes] = {};
    for (uint64_t j = 0; j < kQ8_0Block; j += kLanes) {
      for (int k = 0; k < kLanes; ++k) {
        const float xv = xb[j + k], e = xv - dq * static_cast<float>(q[j + k]);
        px[k] += xv * xv;
        pe[k] += e * e;
        pm[k] = std::max(pm[k], std::fabs(e));
        pq[k] += q[j + k] * q[j + k];
        out[2 + j + k] = static_cast<uint8_t>(static_cast<int8_t>(q[j + k]));
      }
    }
    float bx = 0, be = 0;
    int32_t bq = 0;
    for (int k = 0; k < kLanes; ++k) {
      bx += px[k];
      be += pe[k];
      bq += pq[k];
      emax = std::max(emax, pm[k]);
    }
    sx2 += bx;
    se2 += be;
    sh2 += static_cast<double>(dq) * dq * bq;
  }
  stats->count += n;
  stats->sum_x2 += sx2;
  stats->sum_err2 += se2;
  stats->sum_xhat2 += sh2;
  stats->sum_x_xhat += 0.5 * (sx2 + sh2 - se2);
  stats->max_abs_err = std::max(stats->max_abs_err, static_cast<double>(emax));
  *scale_min = lo;
  *scale_max = hi;
  return Q8_0Status::kOk;
}
#undef LMKIT_Q8_0_CLONES

void DequantizeQ8_0(const uint8_t* in, uint64_t n, float* out) {
  for (uint64_t b = 0; b < n; b += kQ8_0Block, in += kQ8_0BlockBytes) {
    const float d = io::F16ToF32(static_cast<uint16_t>(in[0] | (in[1] << 8)));
    for (uint64_t j = 0; j < kQ8_0Block; ++j) out[b + j] = d * static_cast<float>(static_cast<int8_t>(in[2 + j]));
  }
}

}  // namespace lmkit::quant::gguf
