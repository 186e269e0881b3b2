// The vector kernels of the INT8 quantizer (quantizer.h): one row loaded as fp32 with its absmax, one segment (a row,
// or a group of it) coded with one scale while the error metrics are summed. Three implementations, picked at run
// time: AVX-512 (16 lanes), AVX2+FMA (8 lanes, two per 16-lane chunk) and a portable baseline (GCC vector
// extensions, SSE2 on any x86-64). All three give the codes of QuantizeRowInt8Ref (format_ref.h) and the same stats bit
// for bit, because the metric sums follow one lane layout (RowAcc); tests/unit/quant/format_ref_test.cpp and
// quantizer_test.cpp hold them to both.
//
// Contract: pure functions of their arguments and the CPU (plus the testing switches of quantizer.h); thread-safe.
// `x` needs no alignment; RowAcc must be 64-byte aligned (it is, by its declaration).
#pragma once

#include <atomic>
#include <cstdint>

#include "lmkit/formats/int8.h"
#include "lmkit/io/dtype.h"
#include "lmkit/quant/metrics.h"

namespace lmkit::quant::int8_kernels {

// The error metrics of a row, kept the same way by every kernel so that their results agree bit for bit. A row is
// coded as one segment (per channel, per tensor) or as its groups, each with its own scale:
// - a segment's body (its length rounded down to 16) is cut into chunks of 16 elements; element j of a chunk is lane j;
// - per lane, fp32 partial sums of x^2, e^2 and c^2 over up to kBlockChunks chunks of the segment, each term added by
//   one FMA (e = x - fl(c * s), exact by Sterbenz; c^2 partials are exact integers);
// - the x^2 and e^2 partials are added to the row's 16 fp64 lane sums (RowAcc), block by block in row order; the c^2
//   partials give the segment's exact sum c^2, and s^2 * that is added to the row's sum xhat^2, segment by segment;
// - a segment's scalar tail adds its terms to the row's fp64 tail sums in element order;
// - at the end of the row: X = (lane sums added in lane order) + tail sum, the same for E; D = the sum xhat^2.
// The fp32 partials hold at most 16 terms: relative error ~1e-9 for sums over thousands of elements, random in sign,
// which moves a cosine near 1 by (E / X) * 1e-9 (tests compare against an fp64 reference). sum x*xhat comes from
// 2 x.xhat = X + D - E, whose first-order sensitivity to the errors of X and D cancels in the cosine. Before, four
// fp64 conversions and four fp64 FMAs per 16 elements were half of the coding loop; keeping the lane sums per row
// rather than per segment makes small groups cheap (group:128 spent as long reducing each group as coding it).
constexpr uint64_t kLanes = 16;
constexpr uint64_t kBlockChunks = 16;

struct RowAcc {
  alignas(64) double lx2[kLanes] = {};
  alignas(64) double le2[kLanes] = {};
  double tx2 = 0, te2 = 0;  // scalar tails
  double xhat2 = 0;         // sum over segments of s^2 * sum c^2
  uint64_t clip = 0;
  float em = 0;
};

// Adds a finished row of n values to *st.
void FinishRow(const RowAcc& a, uint64_t n, ErrorStats* st);

// The index of the first non-finite value of x[0, n), n when none.
uint64_t FirstNonFinite(const float* x, uint64_t n);

// ---- the kernels; callers use the dispatchers below -----------------------------------------------------------------

float AbsMaxBase(const float* x, uint64_t n, bool* finite);
__attribute__((target("avx2"))) float AbsMaxAvx2(const float* x, uint64_t n, bool* finite);
__attribute__((target("avx512f"))) float AbsMaxAvx512(const float* x, uint64_t n, bool* finite);

// Codes x[0, n) with `scale` into `codes` and adds to `acc`. Base takes every segment (subnormal scales, wide sums);
// the vector kernels need VectorCodingSafe and !WideSegment. Avx512 prefetches `next_bytes` bytes at `next` (the
// caller's next row, or none) spread over the segment, and the code lines at `next_codes` (or none) for writing.
void CodeSegmentBase(const float* x, uint64_t n, float scale, float absmax, formats::Int8Range range, int8_t* codes,
                     RowAcc& acc);
__attribute__((target("avx2,fma"))) void CodeSegmentAvx2(const float* x, uint64_t n, float scale,
                                                         formats::Int8Range range, int8_t* codes, RowAcc& acc);
__attribute__((target("avx512f,avx512dq,avx512bw,prfchw"))) void CodeSegmentAvx512(
    const float* x, uint64_t n, float scale, formats::Int8Range range, int8_t* codes, RowAcc& acc, const uint8_t* next,
    uint64_t next_bytes, int8_t* next_codes);

// BF16 / F16 rows widened to fp32 in `out`, returning the absmax bits (sign cleared; >= 0x7f800000: not finite).
uint32_t Bf16RowBase(const uint8_t* src, uint64_t n, float* out);
__attribute__((target("avx2"))) uint32_t Bf16RowAvx2(const uint8_t* src, uint64_t n, float* out);
__attribute__((target("avx512f"))) uint32_t Bf16RowAvx512(const uint8_t* src, uint64_t n, float* out);
__attribute__((target("avx512f"))) uint32_t F16RowAvx512(const uint8_t* src, uint64_t n, float* out);

// ---- run-time choice (inline: called per row and per group by the driver) -------------------------------------------

// Testing switches (quantizer.h's Force*KernelsForTesting).
inline std::atomic<bool> g_force_baseline{false};
inline std::atomic<bool> g_force_avx2{false};

inline bool HaveAvx512() {
  static const bool have =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  return have && !g_force_baseline.load(std::memory_order_relaxed) && !g_force_avx2.load(std::memory_order_relaxed);
}
inline bool HaveAvx2() {
  static const bool have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return have && !g_force_baseline.load(std::memory_order_relaxed);
}

// The vector kernels round with the float-to-int conversion (rint) and clamp in integers at the top only. That gives
// the baseline's codes and clip counts when no value can reach below the range: |x| <= absmax, so `absmax * inv <
// 0.5 - lo` makes every x * inv round to lo or above (and keeps it far inside the conversion's range). A scale from
// StoredScale always satisfies it (x * inv >= -divisor * (1 + 3 * 2^-24)); otherwise (a subnormal scale, whose
// inverse is inf) the segment goes to the baseline.
inline bool VectorCodingSafe(float absmax, float inv, formats::Int8Range range) {
  return absmax * inv < 0.5f - range.lo;
}

// The fp32 lane partials (up to 16 squares each) overflow for |x| above ~4.6e18 and lose their bits to underflow for
// values near 1e-19 and below, which made the report's SQNR NaN or meaningless for such weights. Segments whose absmax
// is beyond 2^61 or below 2^-40 (zero excepted) keep fp64 partials instead: 16 * (2^61)^2 < FLT_MAX, and below 2^-40
// the squares of the values that matter are still far above fp32's normal range.
inline bool WideSegment(float absmax) { return absmax > 0x1p61f || (absmax > 0.0f && absmax < 0x1p-40f); }

// Absmax as bits: for floats with the sign cleared, integer order is float order, and NaN/inf are exactly the bit
// patterns >= kInfBits. So one integer max per element gives both the absmax and the finiteness check.
constexpr uint32_t kInfBits = 0x7f800000;
inline float AbsMaxFromBits(uint32_t bits, bool* finite) {
  *finite = bits < kInfBits;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

// The absmax of x[0, n) and whether all of it is finite.
inline float AbsMax(const float* x, uint64_t n, bool* finite) {
  return HaveAvx512() ? AbsMaxAvx512(x, n, finite) : HaveAvx2() ? AbsMaxAvx2(x, n, finite) : AbsMaxBase(x, n, finite);
}

// Codes a segment whose values' absmax is `absmax` with `scale`; a scale the vector kernels' rounding cannot take
// (VectorCodingSafe) goes to the baseline. `next`: memory the caller reads next, prefetched by the AVX-512 path (the
// others leave it to the hardware).
inline void CodeSegment(const float* x, uint64_t n, float scale, float absmax, formats::Int8Range range, int8_t* codes,
                        RowAcc& acc, const uint8_t* next = nullptr, uint64_t next_bytes = 0,
                        int8_t* next_codes = nullptr) {
  const bool vector = VectorCodingSafe(absmax, formats::InverseScale(scale), range) && !WideSegment(absmax);
  if (vector && HaveAvx512())
    CodeSegmentAvx512(x, n, scale, range, codes, acc, next, next_bytes, next_codes);
  else if (vector && HaveAvx2())
    CodeSegmentAvx2(x, n, scale, range, codes, acc);
  else
    CodeSegmentBase(x, n, scale, absmax, range, codes, acc);
}

// A row as fp32, and (when `absmax` is not null) its absmax and whether it is all finite: F32 rows that are 4-byte
// aligned (always, in files lmkit and HF write) are used in place; others are converted into `buf` (n floats), BF16
// and F16 with the absmax found on the way.
inline const float* LoadRow(const uint8_t* src, io::DType dtype, uint64_t n, float* buf, float* absmax = nullptr,
                            bool* finite = nullptr) {
  const float* row = buf;
  uint32_t bits = 0;
  bool have_bits = false;
  if (dtype == io::DType::kF32 && reinterpret_cast<uintptr_t>(src) % alignof(float) == 0) {
    row = reinterpret_cast<const float*>(src);
  } else if (dtype == io::DType::kBF16) {
    bits = HaveAvx512() ? Bf16RowAvx512(src, n, buf) : HaveAvx2() ? Bf16RowAvx2(src, n, buf) : Bf16RowBase(src, n, buf);
    have_bits = true;
  } else if (dtype == io::DType::kF16 && HaveAvx512()) {
    bits = F16RowAvx512(src, n, buf);
    have_bits = true;
  } else {
    io::ConvertToF32(dtype, src, buf, n);
  }
  if (absmax) *absmax = have_bits ? AbsMaxFromBits(bits, finite) : AbsMax(row, n, finite);
  return row;
}

}  // namespace lmkit::quant::int8_kernels
