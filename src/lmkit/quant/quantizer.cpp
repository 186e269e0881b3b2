// Performance notes (perf on the shared 2-core build machine, bf16 4096x4096 rows; docs/benchmarks/quant.md):
// - BF16/F16 rows are widened into a per-worker fp32 buffer (L1/L2-resident for hidden sizes up to ~16k) by a vector
//   loop that also finds the row's absmax; aligned F32 rows are read in place. The coding loop then reads the row
//   from cache, so the mapped input is streamed from memory once.
// - Three kernels, picked at run time: AVX-512 (16 lanes), AVX2+FMA (8 lanes, two per 16-lane chunk) and a portable
//   baseline (GCC vector extensions). All three give the same codes, scales and stats bit for bit (a test compares
//   them), because the metric sums follow one lane layout (RowAcc).
// - The coding loop is bound by the vector ports (about one cycle per parameter and thread), so every instruction in
//   it counts: rounding by the float-to-int conversion and clamping in integers, three fp32 FMAs for the metrics
//   (fp64 conversions only once per 256 elements), an integer max for the absmax. Before, the metrics took four fp64
//   conversions and four fp64 FMAs per 16 elements, about half of the loop.
// - Work items are blocks of rows (kRowsPerItem) so the pool's per-item overhead is negligible even for small rows.
#include "lmkit/quant/quantizer.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the unused merge source, which -Wmaybe-uninitialized
// and -Wuninitialized report at every use (a known false positive of the header, not of this code).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <fmt/format.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>

namespace lmkit::quant {
namespace {

using formats::DivideByScale;
using formats::Int8Range;
using formats::InverseScale;

constexpr uint64_t kRowsPerItem = 8;

// GCC vector extensions: 8 lanes per step. The baseline build lowers them to pairs of SSE2 ops.
// The helpers below are always inlined in this file, so the "AVX vector return changes the ABI" note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));
typedef int8_t C8 __attribute__((vector_size(8)));

[[gnu::always_inline]] inline F8 Load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline F8 Abs8(F8 v) { return reinterpret_cast<F8>(reinterpret_cast<I8>(v) & 0x7fffffff); }

// Absmax as bits: for floats with the sign cleared, integer order is float order, and NaN/inf are exactly the bit
// patterns >= kInfBits. So one integer max per element gives both the absmax and the finiteness check.
constexpr uint32_t kInfBits = 0x7f800000;
inline float AbsMaxFromBits(uint32_t bits, bool* finite) {
  *finite = bits < kInfBits;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint32_t AbsBits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b & 0x7fffffff;
}

[[gnu::always_inline]] inline uint32_t AbsMaxBitsImpl(const float* x, uint64_t n) {
  I8 m = {};
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    I8 b;
    std::memcpy(&b, x + i, sizeof b);
    b &= 0x7fffffff;
    m = m < b ? b : m;  // signed compare is fine: the sign bit is clear
  }
  uint32_t mm = 0;
  for (int j = 0; j < 8; ++j) mm = std::max(mm, static_cast<uint32_t>(m[j]));
  for (; i < n; ++i) mm = std::max(mm, AbsBits(x[i]));
  return mm;
}

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

// One element, scalar (segment tails); c2 collects the segment's exact sum c^2.
[[gnu::always_inline]] inline void CodeScalar(float xv, float inv, float scale, Int8Range range, int8_t* out, RowAcc& a,
                                              int64_t& c2) {
  const float magic = 12582912.0f;
  float v = DivideByScale(inv) ? xv / scale : xv * inv;
  v = v < -256.0f ? -256.0f : v;
  v = v > 256.0f ? 256.0f : v;
  const float r = (v + magic) - magic;
  float c = r < range.lo ? range.lo : r;
  c = c > range.hi ? range.hi : c;
  a.clip += c != r ? 1 : 0;
  *out = static_cast<int8_t>(static_cast<int32_t>(c));
  const float e = xv - c * scale;
  const float ae = std::fabs(e);
  a.em = a.em < ae ? ae : a.em;
  a.tx2 += static_cast<double>(xv) * xv;
  a.te2 += static_cast<double>(e) * e;
  c2 += static_cast<int64_t>(c) * static_cast<int64_t>(c);
}

// The end of a segment: its exact sum c^2 (lane sums of integers, so their order does not matter) times s^2.
inline void FinishSegment(RowAcc& a, float scale, int64_t c2) {
  const double s = scale;
  a.xhat2 += s * s * static_cast<double>(c2);
}

inline void FinishRow(const RowAcc& a, uint64_t n, ErrorStats* st) {
  double x2 = 0, e2 = 0;
  for (uint64_t j = 0; j < kLanes; ++j) {
    x2 += a.lx2[j];
    e2 += a.le2[j];
  }
  x2 += a.tx2;
  e2 += a.te2;
  st->count += n;
  st->clipped += a.clip;
  st->sum_x2 += x2;
  st->sum_xhat2 += a.xhat2;
  st->sum_err2 += e2;
  st->sum_x_xhat += 0.5 * (x2 + a.xhat2 - e2);
  st->max_abs_err = std::max(st->max_abs_err, static_cast<double>(a.em));
}

// The baseline segment coder, and the definition the others follow (see RowAcc). Rounds with the 1.5 * 2^23 add after
// a clamp to +-256 (exact for any float, NaN and inf included: the add is rint for |v| < 2^22), then clamps to the
// range.
// kDivide: a scale whose reciprocal overflows (DivideByScale) divides instead of multiplying; only this loop (and
// CodeScalar) sees such scales, the vector kernels hand them here. kWide: the partial sums are fp64 instead of fp32,
// for segments whose squares would overflow or underflow fp32 (WideSegment); they too come here from every level.
template <bool kDivide, bool kWide>
[[gnu::always_inline]] inline void CodeSegmentImpl(const float* x, uint64_t n, float scale, Int8Range range,
                                                   int8_t* codes, RowAcc& a) {
  using P = std::conditional_t<kWide, double, float>;
  const float inv = InverseScale(scale);
  const F8 vinv = F8{} + inv, vs = F8{} + scale, vmagic = F8{} + 12582912.0f;  // never folded: no -ffast-math here
  const F8 vlo = F8{} + range.lo, vhi = F8{} + range.hi, vneg = F8{} - 256.0f, vpos = F8{} + 256.0f;
  I8 clip = {};
  F8 emax = {};
  int64_t c2 = 0;
  const uint64_t body = n / kLanes * kLanes;
  uint64_t i = 0;
  while (i < body) {
    const uint64_t bend = std::min(body, i + kLanes * kBlockChunks);
    P px2[kLanes] = {}, pe2[kLanes] = {}, pc2[kLanes] = {};
    for (; i < bend; i += kLanes)
      for (uint64_t h = 0; h < kLanes; h += 8) {
        const F8 xv = Load8(x + i + h);
        F8 v;
        if constexpr (kDivide)
          v = xv / vs;
        else
          v = xv * vinv;
        v = v < vneg ? vneg : v;
        v = v > vpos ? vpos : v;
        const F8 r = (v + vmagic) - vmagic;
        F8 c = r < vlo ? vlo : r;
        c = c > vhi ? vhi : c;
        clip -= (c != r);  // a true comparison is -1
        const C8 c8 = __builtin_convertvector(__builtin_convertvector(c, I8), C8);
        std::memcpy(codes + i + h, &c8, 8);
        const F8 e = xv - c * vs;
        const F8 ae = Abs8(e);
        emax = emax < ae ? ae : emax;
        for (int j = 0; j < 8; ++j) {
          px2[h + j] = std::fma(P{xv[j]}, P{xv[j]}, px2[h + j]);
          pe2[h + j] = std::fma(P{e[j]}, P{e[j]}, pe2[h + j]);
          pc2[h + j] = std::fma(P{c[j]}, P{c[j]}, pc2[h + j]);
        }
      }
    for (uint64_t j = 0; j < kLanes; ++j) {
      a.lx2[j] += px2[j];
      a.le2[j] += pe2[j];
      c2 += static_cast<int64_t>(pc2[j]);
    }
  }
  for (int j = 0; j < 8; ++j) {
    a.clip += static_cast<uint32_t>(clip[j]);
    a.em = a.em < emax[j] ? emax[j] : a.em;
  }
  for (; i < n; ++i) CodeScalar(x[i], inv, scale, range, codes + i, a, c2);
  FinishSegment(a, scale, c2);
}

// The vector kernels round with the float-to-int conversion (rint) and clamp in integers at the top only. That gives
// the baseline's codes and clip counts when no value can reach below the range: |x| <= absmax, so `absmax * inv <
// 0.5 - lo` makes every x * inv round to lo or above (and keeps it far inside the conversion's range). A scale from
// StoredScale always satisfies it (x * inv >= -divisor * (1 + 3 * 2^-24)); otherwise (a subnormal scale, whose
// inverse is inf) the segment goes to the baseline.
inline bool VectorCodingSafe(float absmax, float inv, Int8Range range) { return absmax * inv < 0.5f - range.lo; }

// The fp32 lane partials (up to 16 squares each) overflow for |x| above ~4.6e18 and lose their bits to underflow for
// values near 1e-19 and below, which made the report's SQNR NaN or meaningless for such weights. Segments whose absmax
// is beyond 2^61 or below 2^-40 (zero excepted) keep fp64 partials instead: 16 * (2^61)^2 < FLT_MAX, and below 2^-40
// the squares of the values that matter are still far above fp32's normal range.
inline bool WideSegment(float absmax) { return absmax > 0x1p61f || (absmax > 0.0f && absmax < 0x1p-40f); }

float AbsMaxBase(const float* x, uint64_t n, bool* finite) { return AbsMaxFromBits(AbsMaxBitsImpl(x, n), finite); }
void CodeSegmentBase(const float* x, uint64_t n, float scale, float absmax, Int8Range range, int8_t* codes, RowAcc& a) {
  const bool divide = DivideByScale(InverseScale(scale)), wide = WideSegment(absmax);
  if (divide)
    CodeSegmentImpl<true, true>(x, n, scale, range, codes, a);  // a scale that small is always wide
  else if (wide)
    CodeSegmentImpl<false, true>(x, n, scale, range, codes, a);
  else
    CodeSegmentImpl<false, false>(x, n, scale, range, codes, a);
}

// The exact sum of 16 fp64 lanes holding integers (the c^2 sums; any order gives the same value).
inline int64_t SumIntegerLanes(const double* l) {
  int64_t t = 0;
  for (uint64_t j = 0; j < kLanes; ++j) t += static_cast<int64_t>(l[j]);
  return t;
}
__attribute__((target("avx2"))) float AbsMaxAvx2(const float* x, uint64_t n, bool* finite) {
  return AbsMaxFromBits(AbsMaxBitsImpl(x, n), finite);
}

// CodeSegmentImpl with AVX2 + FMA: each 16-lane chunk is two 8-lane halves (lanes 0-7 and 8-15), whose fp32 partials
// and fp64 lane sums are kept in separate registers; int32 -> int8 keeps the low byte (a shuffle, as the baseline's
// conversion does). No contraction of the separate multiply and subtract of e: -ffp-contract=off (CMakeLists.txt).
// Precondition: VectorCodingSafe (CodeSegment checks it).
__attribute__((target("avx2,fma"))) void CodeSegmentAvx2(const float* x, uint64_t n, float scale, Int8Range range,
                                                         int8_t* codes, RowAcc& acc) {
  const float inv = InverseScale(scale);
  const __m256 vinv = _mm256_set1_ps(inv), vs = _mm256_set1_ps(scale);
  const __m256i vhi = _mm256_set1_epi32(static_cast<int32_t>(range.hi));
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  // Low byte of each int32 to the front of its 128-bit lane, then dwords 0 and 4 to the bottom.
  const __m256i lowbytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                            0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i gather = _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0);
  __m256d lx2[4], le2[4], lc2[4];  // fp64 lane sums, lanes 4q .. 4q + 3 (the row's, and this segment's c^2)
  for (int q = 0; q < 4; ++q) {
    lx2[q] = _mm256_load_pd(acc.lx2 + 4 * q);
    le2[q] = _mm256_load_pd(acc.le2 + 4 * q);
    lc2[q] = _mm256_setzero_pd();
  }
  __m256i clip = _mm256_setzero_si256();
  __m256 emax = _mm256_setzero_ps();
  const uint64_t body = n / kLanes * kLanes;
  uint64_t i = 0;
  while (i < body) {
    const uint64_t bend = std::min(body, i + kLanes * kBlockChunks);
    __m256 px2[2], pe2[2], pc2[2];
    for (int h = 0; h < 2; ++h) px2[h] = pe2[h] = pc2[h] = _mm256_setzero_ps();
    for (; i < bend; i += kLanes)
      for (int h = 0; h < 2; ++h) {
        const __m256 xv = _mm256_loadu_ps(x + i + 8 * h);
        const __m256i ri = _mm256_cvtps_epi32(_mm256_mul_ps(xv, vinv));
        const __m256i ci = _mm256_min_epi32(vhi, ri);
        clip = _mm256_sub_epi32(clip, _mm256_cmpgt_epi32(ri, vhi));  // a true comparison is -1
        const __m256i b = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(ci, lowbytes), gather);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + i + 8 * h), _mm256_castsi256_si128(b));
        const __m256 c = _mm256_cvtepi32_ps(ci);
        const __m256 e = _mm256_sub_ps(xv, _mm256_mul_ps(c, vs));
        emax = _mm256_max_ps(_mm256_and_ps(e, absmask), emax);
        px2[h] = _mm256_fmadd_ps(xv, xv, px2[h]);
        pe2[h] = _mm256_fmadd_ps(e, e, pe2[h]);
        pc2[h] = _mm256_fmadd_ps(c, c, pc2[h]);
      }
    for (int h = 0; h < 2; ++h) {
      lx2[2 * h] = _mm256_add_pd(lx2[2 * h], _mm256_cvtps_pd(_mm256_castps256_ps128(px2[h])));
      lx2[2 * h + 1] = _mm256_add_pd(lx2[2 * h + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(px2[h], 1)));
      le2[2 * h] = _mm256_add_pd(le2[2 * h], _mm256_cvtps_pd(_mm256_castps256_ps128(pe2[h])));
      le2[2 * h + 1] = _mm256_add_pd(le2[2 * h + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(pe2[h], 1)));
      lc2[2 * h] = _mm256_add_pd(lc2[2 * h], _mm256_cvtps_pd(_mm256_castps256_ps128(pc2[h])));
      lc2[2 * h + 1] = _mm256_add_pd(lc2[2 * h + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(pc2[h], 1)));
    }
  }
  alignas(32) double c[kLanes];
  for (int q = 0; q < 4; ++q) {
    _mm256_store_pd(acc.lx2 + 4 * q, lx2[q]);
    _mm256_store_pd(acc.le2 + 4 * q, le2[q]);
    _mm256_store_pd(c + 4 * q, lc2[q]);
  }
  int64_t c2 = SumIntegerLanes(c);
  alignas(32) int32_t k[8];
  alignas(32) float e[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(k), clip);
  _mm256_store_ps(e, emax);
  for (int j = 0; j < 8; ++j) {
    acc.clip += static_cast<uint32_t>(k[j]);
    acc.em = acc.em < e[j] ? e[j] : acc.em;
  }
  for (uint64_t j = body; j < n; ++j) CodeScalar(x[j], inv, scale, range, codes + j, acc, c2);
  FinishSegment(acc, scale, c2);
}

// The constants of CodeSegmentAvx512.
struct Code16Consts {
  __m512 inv, s;
  __m512i hi, one;
};

// Codes the 16 elements at x and adds to the fp32 partials; returns the codes as int32 lanes. See CodeSegmentAvx512.
[[gnu::always_inline]] __attribute__((target("avx512f,avx512dq"))) inline __m512i Code16(
    const float* x, const Code16Consts& k, __m512& px2, __m512& pe2, __m512& pc2, __m512& emax, __m512i& clip) {
  const __m512 xv = _mm512_loadu_ps(x);
  const __m512i ri = _mm512_cvt_roundps_epi32(_mm512_mul_ps(xv, k.inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512i ci = _mm512_min_epi32(k.hi, ri);
  clip = _mm512_mask_add_epi32(clip, _mm512_cmpgt_epi32_mask(ri, k.hi), clip, k.one);
  const __m512 c = _mm512_cvtepi32_ps(ci);
  const __m512 e = _mm512_sub_ps(xv, _mm512_mul_ps(c, k.s));
  emax = _mm512_range_ps(emax, e, 0x0b);  // max(|emax|, |e|) with the sign cleared: one instruction for abs + max
  px2 = _mm512_fmadd_ps(xv, xv, px2);
  pe2 = _mm512_fmadd_ps(e, e, pe2);
  pc2 = _mm512_fmadd_ps(c, c, pc2);
  return ci;
}

// Stores the codes of four consecutive chunks (64 int32 lanes in [-128, 127]) as 64 bytes: two saturating packs to
// int16, one to int8 (exact for values in range), then one permute, since each pack interleaves its sources per 128-bit
// lane (dword 4L + k of the result holds chunk k's lanes 4L .. 4L + 3). Four vpmovdb (two operations each) cost more.
[[gnu::always_inline]] __attribute__((target("avx512f,avx512bw"))) inline void Store64(int8_t* out, __m512i c0,
                                                                                       __m512i c1, __m512i c2,
                                                                                       __m512i c3) {
  const __m512i p = _mm512_packs_epi16(_mm512_packs_epi32(c0, c1), _mm512_packs_epi32(c2, c3));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  _mm512_storeu_si512(out, _mm512_permutexvar_epi32(order, p));
}

// fp64 lane sums of one metric: lanes 0-7 in lo, 8-15 in hi.
[[gnu::always_inline]] __attribute__((target("avx512f"))) inline void AddPartials(__m512 p, __m512d& lo, __m512d& hi) {
  lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(p)));
  hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(p), 1))));
}

// CodeSegmentImpl with 16 lanes (AVX-512F + DQ + BW), the same results bit for bit. Precondition: VectorCodingSafe
// (CodeSegment checks it). `next_bytes` bytes at `next` (the caller's next row, or none) are prefetched spread over
// the segment, and the code lines at `next_codes` (or none) for writing, one per 64 values.
__attribute__((target("avx512f,avx512dq,avx512bw,prfchw"))) void CodeSegmentAvx512(
    const float* x, uint64_t n, float scale, Int8Range range, int8_t* codes, RowAcc& acc, const uint8_t* next,
    uint64_t next_bytes, int8_t* next_codes) {
  const float inv = InverseScale(scale);
  const Code16Consts k = {_mm512_set1_ps(inv), _mm512_set1_ps(scale), _mm512_set1_epi32(static_cast<int32_t>(range.hi)),
                          _mm512_set1_epi32(1)};
  __m512d lx2a = _mm512_load_pd(acc.lx2), lx2b = _mm512_load_pd(acc.lx2 + 8);
  __m512d le2a = _mm512_load_pd(acc.le2), le2b = _mm512_load_pd(acc.le2 + 8);
  __m512d lc2a = _mm512_setzero_pd(), lc2b = lc2a;
  __m512i clip = _mm512_setzero_si512();
  __m512 emax = _mm512_setzero_ps();
  const uint64_t body = n / kLanes * kLanes;
  // The next row is prefetched evenly over this one's 64-element steps: a core has only so many line fill buffers,
  // and issuing the prefetches as fast as the loop runs left it stalled on them for half the row.
  const uint64_t steps = body / (4 * kLanes);
  const uint64_t pf_step = steps ? (next_bytes + steps * 64 - 1) / (steps * 64) * 64 : 0;
  uint64_t pf = 0;
  uint64_t i = 0;
  while (i < body) {
    const uint64_t bend = std::min(body, i + kLanes * kBlockChunks);
    __m512 px2 = _mm512_setzero_ps(), pe2 = px2, pc2 = px2;
    for (; i + 4 * kLanes <= bend; i += 4 * kLanes) {
      for (uint64_t end = std::min(next_bytes, pf + pf_step); pf < end; pf += 64)
        _mm_prefetch(reinterpret_cast<const char*>(next) + pf, _MM_HINT_T0);
      if (next_codes) __builtin_prefetch(next_codes + i, 1, 3);
      const __m512i c0 = Code16(x + i, k, px2, pe2, pc2, emax, clip);
      const __m512i c1 = Code16(x + i + 16, k, px2, pe2, pc2, emax, clip);
      const __m512i c2 = Code16(x + i + 32, k, px2, pe2, pc2, emax, clip);
      const __m512i c3 = Code16(x + i + 48, k, px2, pe2, pc2, emax, clip);
      Store64(codes + i, c0, c1, c2, c3);
    }
    for (; i < bend; i += kLanes)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + i),
                       _mm512_cvtepi32_epi8(Code16(x + i, k, px2, pe2, pc2, emax, clip)));
    AddPartials(px2, lx2a, lx2b);
    AddPartials(pe2, le2a, le2b);
    AddPartials(pc2, lc2a, lc2b);
  }
  _mm512_store_pd(acc.lx2, lx2a);
  _mm512_store_pd(acc.lx2 + 8, lx2b);
  _mm512_store_pd(acc.le2, le2a);
  _mm512_store_pd(acc.le2 + 8, le2b);
  // Integers below 2^53 in every lane: the horizontal sum is exact whatever its order.
  int64_t c2 = static_cast<int64_t>(_mm512_reduce_add_pd(_mm512_add_pd(lc2a, lc2b)));
  acc.clip += static_cast<uint64_t>(_mm512_reduce_add_epi32(clip));
  acc.em = std::max(acc.em, _mm512_reduce_max_ps(emax));
  for (uint64_t j = body; j < n; ++j) CodeScalar(x[j], inv, scale, range, codes + j, acc, c2);
  FinishSegment(acc, scale, c2);
}

__attribute__((target("avx512f"))) float AbsMaxAvx512(const float* x, uint64_t n, bool* finite) {
  __m512i m = _mm512_setzero_si512();
  const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) m = _mm512_max_epi32(m, _mm512_and_si512(_mm512_loadu_si512(x + i), absmask));
  uint32_t mm = static_cast<uint32_t>(_mm512_reduce_max_epi32(m));
  for (; i < n; ++i) mm = std::max(mm, AbsBits(x[i]));
  return AbsMaxFromBits(mm, finite);
}

std::atomic<bool> g_force_baseline{false};
std::atomic<bool> g_force_avx2{false};

bool HaveAvx512() {
  static const bool have =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  return have && !g_force_baseline.load(std::memory_order_relaxed) && !g_force_avx2.load(std::memory_order_relaxed);
}
bool HaveAvx2() {
  static const bool have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return have && !g_force_baseline.load(std::memory_order_relaxed);
}
inline float AbsMax(const float* x, uint64_t n, bool* finite) {
  return HaveAvx512() ? AbsMaxAvx512(x, n, finite) : HaveAvx2() ? AbsMaxAvx2(x, n, finite) : AbsMaxBase(x, n, finite);
}
// Codes a segment whose values' absmax is `absmax` with `scale`; a scale the vector kernels' rounding cannot take
// (VectorCodingSafe) goes to the baseline. `next`: memory the caller reads next, prefetched by the AVX-512 path (the
// others leave it to the hardware).
inline void CodeSegment(const float* x, uint64_t n, float scale, float absmax, Int8Range range, int8_t* codes,
                        RowAcc& acc, const uint8_t* next = nullptr, uint64_t next_bytes = 0,
                        int8_t* next_codes = nullptr) {
  const bool vector = VectorCodingSafe(absmax, InverseScale(scale), range) && !WideSegment(absmax);
  if (vector && HaveAvx512())
    CodeSegmentAvx512(x, n, scale, range, codes, acc, next, next_bytes, next_codes);
  else if (vector && HaveAvx2())
    CodeSegmentAvx2(x, n, scale, range, codes, acc);
  else
    CodeSegmentBase(x, n, scale, absmax, range, codes, acc);
}

// BF16 -> fp32 for one row, vectorised (8 per step: widen, shift), returning the absmax bits (AbsMaxBitsImpl). The
// same exact conversion as io::Bf16ToF32, kept here because it is fused with the absmax: the generic io converter
// was a third of the run time, and a separate absmax pass cost another load and two vector operations per 16 values.
typedef uint16_t H8 __attribute__((vector_size(16)));
[[gnu::always_inline]] inline uint32_t Bf16RowImpl(const uint8_t* src, uint64_t n, float* out) {
  I8 m = {};
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    H8 h;
    std::memcpy(&h, src + 2 * i, sizeof h);
    const I8 w = __builtin_convertvector(h, I8) << 16;
    std::memcpy(out + i, &w, sizeof w);
    const I8 a = w & 0x7fffffff;
    m = m < a ? a : m;
  }
  uint32_t mm = 0;
  for (int j = 0; j < 8; ++j) mm = std::max(mm, static_cast<uint32_t>(m[j]));
  if (i < n) io::Bf16ToF32(src + 2 * i, out + i, n - i);
  for (; i < n; ++i) mm = std::max(mm, AbsBits(out[i]));
  return mm;
}
__attribute__((target("avx2"))) uint32_t Bf16RowAvx2(const uint8_t* src, uint64_t n, float* out) {
  return Bf16RowImpl(src, n, out);
}
uint32_t Bf16RowBase(const uint8_t* src, uint64_t n, float* out) { return Bf16RowImpl(src, n, out); }
__attribute__((target("avx512f"))) uint32_t Bf16RowAvx512(const uint8_t* src, uint64_t n, float* out) {
  const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
  __m512i m = _mm512_setzero_si512();
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i));
    const __m512i w = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
    _mm512_storeu_si512(out + i, w);
    m = _mm512_max_epi32(m, _mm512_and_si512(w, absmask));
  }
  uint32_t mm = static_cast<uint32_t>(_mm512_reduce_max_epi32(m));
  if (i < n) io::Bf16ToF32(src + 2 * i, out + i, n - i);
  for (; i < n; ++i) mm = std::max(mm, AbsBits(out[i]));
  return mm;
}

// F16 -> fp32 for one row with the conversion instruction (exact for every finite value and infinity; a NaN stays a
// NaN, quieted, and is reported as non-finite either way), returning the absmax bits. The generic io converter, bit
// manipulation in vector lanes that preserves NaN payloads, made F16 checkpoints ~30% slower to quantize than BF16.
__attribute__((target("avx512f"))) uint32_t F16RowAvx512(const uint8_t* src, uint64_t n, float* out) {
  const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
  __m512i m = _mm512_setzero_si512();
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 w = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i)));
    _mm512_storeu_ps(out + i, w);
    m = _mm512_max_epi32(m, _mm512_and_si512(_mm512_castps_si512(w), absmask));
  }
  uint32_t mm = static_cast<uint32_t>(_mm512_reduce_max_epi32(m));
  if (i < n) io::ConvertToF32(io::DType::kF16, src + 2 * i, out + i, n - i);
  for (; i < n; ++i) mm = std::max(mm, AbsBits(out[i]));
  return mm;
}

// A row as fp32, and (when `absmax` is not null) its absmax and whether it is all finite: F32 rows that are 4-byte
// aligned (always, in files lmkit and HF write) are used in place; others are converted into `buf`, BF16 and F16 with
// the absmax found on the way.
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

uint64_t FirstNonFinite(const float* x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return i;
  return n;
}

}  // namespace

float StoredScale(float absmax, formats::Int8Convention convention, io::DType scale_dtype) {
  return StoredScale(absmax, formats::RangeOf(convention).divisor, scale_dtype);
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

namespace {

// QuantizeMatrix over rows in memory (`src`, codes to `codes`) or through `streams` (rows read into and codes written
// from per-worker blocks). Statistics are kept per group of kRowsPerItem rows and reduced in group order whatever the
// work-item size, so both variants give the same stats bit for bit.
Status QuantizeRows(const uint8_t* src, int8_t* codes, const RowStreams* streams, io::DType dtype, uint64_t rows,
                    uint64_t cols, const QuantizeMatrixOptions& options, ThreadPool* pool, float* scales,
                    ErrorStats* stats) {
  if (dtype != io::DType::kF32 && dtype != io::DType::kF16 && dtype != io::DType::kBF16)
    return Status::InvalidInput("", std::string("cannot quantize dtype ") + std::string(io::DTypeName(dtype)));
  const Granularity& g = options.granularity;
  if (g.kind == Granularity::Kind::kGroup && (g.group_size == 0 || cols % g.group_size != 0))
    return Status::InvalidInput(
        "", "group size " + std::to_string(g.group_size) + " does not divide the " + std::to_string(cols) + " columns");
  const Int8Range range = formats::RangeOf(options.convention);
  const size_t esize = io::DTypeSize(dtype);
  const uint64_t row_bytes = cols * esize;
  // Streamed items are >= 128 KiB of input, so the two system calls per item stay a small share of the time; larger
  // items were slower (per-worker blocks fall out of L2: 256 KiB +15%, 1 MiB +100% on the build VM). In memory, up to
  // 4 groups per item while every worker still gets >= 16 items: an item's first row is not prefetched (the coding
  // loop prefetches the next row of its own item), and 8-row items paid that stall often enough to cost 5-10%.
  const unsigned workers = pool ? pool->size() : 1;
  const uint64_t item_rows =
      streams ? kRowsPerItem * std::max<uint64_t>(1, (128u << 10) / std::max<uint64_t>(1, kRowsPerItem * row_bytes))
              : kRowsPerItem * std::clamp<uint64_t>(rows / (kRowsPerItem * workers * 16), 1, 4);
  const uint64_t items = (rows + item_rows - 1) / item_rows;
  const uint64_t groups = (rows + kRowsPerItem - 1) / kRowsPerItem;
  std::vector<std::vector<float>> buffers(workers, std::vector<float>(cols));
  // Per-worker blocks for streams; 8-aligned, so F32 rows are used in place.
  std::vector<std::vector<uint64_t>> raw(streams ? workers : 0, std::vector<uint64_t>((item_rows * row_bytes + 7) / 8));
  std::vector<std::vector<int8_t>> code_blocks(streams ? workers : 0, std::vector<int8_t>(item_rows * cols));
  std::atomic<uint64_t> bad_row{std::numeric_limits<uint64_t>::max()};
  auto note_bad = [&](uint64_t r) {
    uint64_t cur = bad_row.load();
    while (r < cur && !bad_row.compare_exchange_weak(cur, r)) {
    }
  };
  // The first stream error in item order wins, so the message does not depend on scheduling.
  std::mutex error_mu;
  uint64_t error_item = std::numeric_limits<uint64_t>::max();
  Status stream_error;
  std::atomic<bool> failed{false};
  auto fail = [&](uint64_t item, Status st) {
    std::lock_guard<std::mutex> lock(error_mu);
    if (item < error_item) {
      error_item = item;
      stream_error = std::move(st);
    }
    failed = true;
  };
  // Raw bytes of rows [r0, r0 + n), or nullptr after a stream error.
  auto fetch = [&](uint64_t item, uint64_t r0, uint64_t n, unsigned w) -> const uint8_t* {
    if (!streams) return src + r0 * row_bytes;
    if (failed.load(std::memory_order_relaxed)) return nullptr;
    auto* dst = reinterpret_cast<uint8_t*>(raw[w].data());
    Status st = streams->read(r0, n, dst);
    if (st.ok()) return dst;
    fail(item, std::move(st));
    return nullptr;
  };
  auto run = [&](uint64_t count, const std::function<void(size_t, unsigned)>& fn) {
    if (pool)
      pool->ParallelFor(count, fn);
    else
      for (uint64_t i = 0; i < count; ++i) fn(i, 0);
  };

  // The loaders dequantize code_max * scale in the scale's dtype: a row or group where that overflows is refused (as a
  // "bad" row, like a non-finite one) instead of written as a weight every loader reads as inf.
  const float code_max = -range.lo;
  // Per-tensor: one absmax over everything first.
  float tensor_scale = 0, tensor_max = 0;
  if (g.kind == Granularity::Kind::kTensor) {
    std::vector<float> item_max(items, 0.0f);
    std::vector<uint64_t> item_max_row(items, 0);
    run(items, [&](size_t item, unsigned w) {
      const uint64_t r0 = item * item_rows, n = std::min(rows, r0 + item_rows) - r0;
      const uint8_t* block = fetch(item, r0, n, w);
      if (!block) return;
      float* buf = buffers[w].data();
      for (uint64_t k = 0; k < n; ++k) {
        bool finite = true;
        float m = 0;
        LoadRow(block + k * row_bytes, dtype, cols, buf, &m, &finite);
        if (m > item_max[item]) item_max[item] = m, item_max_row[item] = r0 + k;
        if (!finite) note_bad(r0 + k);
      }
    });
    if (failed) return stream_error;
    uint64_t max_row = 0;
    for (uint64_t i = 0; i < items; ++i)
      if (item_max[i] > tensor_max) tensor_max = item_max[i], max_row = item_max_row[i];
    tensor_scale = StoredScale(tensor_max, options.convention, options.scale_dtype);
    if (!DequantizesFinite(tensor_scale, code_max, options.scale_dtype)) note_bad(max_row);
    if (bad_row.load() == std::numeric_limits<uint64_t>::max()) scales[0] = tensor_scale;
  }

  std::vector<ErrorStats> group_stats(groups);
  if (bad_row.load() == std::numeric_limits<uint64_t>::max()) {
    run(items, [&](size_t item, unsigned w) {
      const uint64_t r0 = item * item_rows, n = std::min(rows, r0 + item_rows) - r0;
      const uint8_t* block = fetch(item, r0, n, w);
      if (!block) return;
      float* buf = buffers[w].data();
      int8_t* out_block = streams ? code_blocks[w].data() : codes + r0 * cols;
      bool all_finite = true;
      for (uint64_t k = 0; k < n; ++k) {
        const uint64_t r = r0 + k;
        bool finite = true;
        float row_max = 0;
        // Per-channel rows get their absmax as they are loaded (widened rows: in the same loop).
        const float* row = LoadRow(block + k * row_bytes, dtype, cols, buf,
                                   g.kind == Granularity::Kind::kChannel ? &row_max : nullptr, &finite);
        RowAcc acc;
        int8_t* out = out_block + k * cols;
        ErrorStats& st = group_stats[r / kRowsPerItem];
        // The next row of the item is prefetched while this one is coded (read in place or widened, a row is first
        // touched by this loop, and a core's hardware prefetcher alone left it waiting on memory: F32 rows 1.4x).
        const uint8_t* next = k + 1 < n ? block + (k + 1) * row_bytes : nullptr;
        const uint64_t next_bytes = next ? row_bytes : 0;
        int8_t* next_out = next ? out + cols : nullptr;
        switch (g.kind) {
          case Granularity::Kind::kTensor:
            CodeSegment(row, cols, tensor_scale, tensor_max, range, out, acc, next, next_bytes, next_out);
            break;
          case Granularity::Kind::kChannel: {
            if (!finite) break;
            const float s = StoredScale(row_max, options.convention, options.scale_dtype);
            if (!DequantizesFinite(s, code_max, options.scale_dtype)) {
              finite = false;
              break;
            }
            scales[r] = s;
            CodeSegment(row, cols, s, row_max, range, out, acc, next, next_bytes, next_out);
            break;
          }
          case Granularity::Kind::kGroup: {
            const uint64_t gs = g.group_size, ng = cols / gs;
            for (uint64_t k2 = 0; k2 < ng && finite; ++k2) {
              const float m = AbsMax(row + k2 * gs, gs, &finite);
              if (!finite) break;
              const float s = StoredScale(m, options.convention, options.scale_dtype);
              if (!DequantizesFinite(s, code_max, options.scale_dtype)) {
                finite = false;
                break;
              }
              scales[r * ng + k2] = s;
              CodeSegment(row + k2 * gs, gs, s, m, range, out + k2 * gs, acc);
            }
            break;
          }
        }
        if (finite) {
          FinishRow(acc, cols, &st);
        } else {
          note_bad(r);
          all_finite = false;
        }
      }
      if (streams && all_finite && !failed.load(std::memory_order_relaxed)) {
        Status st = streams->write(r0, n, out_block);
        if (!st.ok()) fail(item, std::move(st));
      }
    });
    if (failed) return stream_error;
  }
  if (uint64_t r = bad_row.load(); r != std::numeric_limits<uint64_t>::max()) {
    std::vector<uint64_t> one((row_bytes + 7) / 8);
    const uint8_t* bytes = src ? src + r * row_bytes : reinterpret_cast<const uint8_t*>(one.data());
    if (!src) LMKIT_RETURN_IF_ERROR(streams->read(r, 1, reinterpret_cast<uint8_t*>(one.data())));
    std::vector<float> buf(cols);
    const float* row = LoadRow(bytes, dtype, cols, buf.data());
    if (const uint64_t c = FirstNonFinite(row, cols); c < cols)
      return Status::InvalidInput("", "non-finite value at [" + std::to_string(r) + ", " + std::to_string(c) + "]");
    uint64_t c = 0;
    for (uint64_t i = 1; i < cols; ++i)
      if (std::fabs(row[i]) > std::fabs(row[c])) c = i;
    return Status::InvalidInput("",
                                fmt::format("|w| = {:g} at [{}, {}]: the code {:g} times its scale is beyond the range "
                                            "of {}, so a loader would dequantize it to inf",
                                            std::fabs(row[c]), r, c, range.lo, io::DTypeName(options.scale_dtype)));
  }
  if (stats) {
    ErrorStats total;
    for (const ErrorStats& s : group_stats) total.Merge(s);
    *stats = total;
  }
  return Status::Ok();
}

}  // namespace

void ForceBaselineKernelsForTesting(bool on) { g_force_baseline = on; }
void ForceAvx2KernelsForTesting(bool on) { g_force_avx2 = on; }

Status QuantizeMatrix(const void* data, io::DType dtype, uint64_t rows, uint64_t cols,
                      const QuantizeMatrixOptions& options, ThreadPool* pool, int8_t* codes, float* scales,
                      ErrorStats* stats) {
  return QuantizeRows(static_cast<const uint8_t*>(data), codes, nullptr, dtype, rows, cols, options, pool, scales,
                      stats);
}

Status QuantizeMatrix(const RowStreams& streams, io::DType dtype, uint64_t rows, uint64_t cols,
                      const QuantizeMatrixOptions& options, ThreadPool* pool, float* scales, ErrorStats* stats) {
  return QuantizeRows(nullptr, nullptr, &streams, dtype, rows, cols, options, pool, scales, stats);
}

void DequantizeMatrix(const int8_t* codes, const float* scales, uint64_t rows, uint64_t cols,
                      const Granularity& granularity, float* out) {
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) {
      float s = 0;
      switch (granularity.kind) {
        case Granularity::Kind::kChannel:
          s = scales[r];
          break;
        case Granularity::Kind::kTensor:
          s = scales[0];
          break;
        case Granularity::Kind::kGroup:
          s = scales[r * (cols / granularity.group_size) + c / granularity.group_size];
          break;
      }
      out[r * cols + c] = static_cast<float>(codes[r * cols + c]) * s;
    }
}

}  // namespace lmkit::quant
