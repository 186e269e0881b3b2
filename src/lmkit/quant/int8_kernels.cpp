// Performance notes (perf on the shared 2-core build machine, bf16 4096x4096 rows; docs/benchmarks/quant.md):
// - BF16/F16 rows are widened into a per-worker fp32 buffer (L1/L2-resident for hidden sizes up to ~16k) by a vector
//   loop that also finds the row's absmax; aligned F32 rows are read in place. The coding loop then reads the row
//   from cache, so the mapped input is streamed from memory once.
// - Three kernels, picked at run time: AVX-512 (16 lanes), AVX2+FMA (8 lanes, two per 16-lane chunk) and a portable
//   baseline (GCC vector extensions). All three give the codes of the scalar reference (format_ref.h) and the same
//   stats bit for bit (tests compare them), because the metric sums follow one lane layout (RowAcc).
// - The coding loop is bound by the vector ports (about one cycle per parameter and thread), so every instruction in
//   it counts: rounding by the float-to-int conversion and clamping in integers, three fp32 FMAs for the metrics
//   (fp64 conversions only once per 256 elements), an integer max for the absmax. Before, the metrics took four fp64
//   conversions and four fp64 FMAs per 16 elements, about half of the loop.
#include "lmkit/quant/int8_kernels.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the unused merge source, which -Wmaybe-uninitialized
// and -Wuninitialized report at every use (a known false positive of the header, not of this code).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace lmkit::quant::int8_kernels {
namespace {

using formats::DivideByScale;
using formats::Int8Range;
using formats::InverseScale;

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

// The exact sum of 16 fp64 lanes holding integers (the c^2 sums; any order gives the same value).
inline int64_t SumIntegerLanes(const double* l) {
  int64_t t = 0;
  for (uint64_t j = 0; j < kLanes; ++j) t += static_cast<int64_t>(l[j]);
  return t;
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

}  // namespace

void FinishRow(const RowAcc& a, uint64_t n, ErrorStats* st) {
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

uint64_t FirstNonFinite(const float* x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return i;
  return n;
}

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

}  // namespace lmkit::quant::int8_kernels
