// Performance notes (perf on the shared 2-core build machine, bf16 4096x4096 rows; docs/benchmarks/quant.md):
// - BF16 rows are widened into a per-worker fp32 buffer (L1/L2-resident for hidden sizes up to ~16k) by a fused
//   vector loop; aligned F32 rows are read in place. Each row is then read twice (absmax, code+metrics) from cache, so
//   the mapped input is streamed from memory once. The generic io converter took 33% of the time; the fused one ~5%.
// - Hot loops use GCC vector extensions (8 floats per step) compiled twice, baseline (SSE2) and AVX2, picked at run
//   time: plain loops were left scalar (fp reductions and fminf need -ffast-math, which would change the format).
//   fminf/fmaxf calls were replaced by compare-selects (10x), rint by the 1.5*2^23 magic add (|v| <= 256 there).
// - Metrics: exact products summed in fp64 per lane, 2 fp64 adds per element instead of 4 (see CodeSegmentImpl).
// - Work items are blocks of rows (kRowsPerItem) so the pool's per-item overhead is negligible even for small rows.
#include "lmkit/quant/quantizer.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the unused merge source, which -Wmaybe-uninitialized
// and -Wuninitialized report at every use (a known false positive of the header, not of this code).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

namespace lmkit::quant {
namespace {

constexpr uint64_t kRowsPerItem = 8;

// GCC vector extensions: 8 floats per step. The baseline build lowers them to pairs of SSE2 ops, the AVX2 clone below
// to single ymm ops. (Plain loops were not vectorised: fp reductions need -ffast-math, which would change the format.)
// The helpers below are always inlined in this file, so the "AVX vector return changes the ABI" note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));
typedef double D4 __attribute__((vector_size(32)));
typedef int8_t C8 __attribute__((vector_size(8)));

[[gnu::always_inline]] inline F8 Load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline F8 Abs8(F8 v) { return reinterpret_cast<F8>(reinterpret_cast<I8>(v) & 0x7fffffff); }
[[gnu::always_inline]] inline float HMax(F8 v) {
  float m = 0;
  for (int j = 0; j < 8; ++j) m = m < v[j] ? v[j] : m;
  return m;
}

// absmax of x[0, n) and whether every value is finite (NaN/inf make x - x NaN, caught by the `bad` sum; the
// comparisons alone would skip NaN).
[[gnu::always_inline]] inline float AbsMaxImpl(const float* x, uint64_t n, bool* finite) {
  F8 m = {}, bad = {};
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    F8 v = Load8(x + i);
    F8 a = Abs8(v);
    m = m < a ? a : m;
    bad += v - v;
  }
  float mm = HMax(m), bb = 0;
  for (int j = 0; j < 8; ++j) bb += bad[j];
  for (; i < n; ++i) {
    float a = std::fabs(x[i]);
    mm = mm < a ? a : mm;
    bb += x[i] - x[i];
  }
  *finite = bb == 0.0f;
  return mm;
}

// Codes x[0, n) with `scale` and accumulates the metrics. The sums use exact products (x*x and x*code fit a double
// exactly; code^2 is an integer) and xhat = code * scale is applied per segment:
//   sum xhat^2 = s^2 sum c^2,  sum x xhat = s sum x c,  sum (x - xhat)^2 = sum x^2 - 2 s sum x c + s^2 sum c^2,
// so the loop needs two fp64 adds per element instead of four (the cancellation in the last line costs ~1e-9
// relative at 40 dB SQNR). max|x - xhat| is exact in fp32 (Sterbenz: xhat is within a factor 2 of x).
// Running totals of a segment (see CodeSegmentImpl).
struct CodeAcc {
  double tx2 = 0, txc = 0;
  int64_t tc2 = 0;
  uint64_t tclip = 0;
  float em = 0;
};

// One element, scalar (segment tails).
[[gnu::always_inline]] inline void CodeScalar(float xv, float inv, float scale, Int8Range range, int8_t* out,
                                              CodeAcc& a) {
  const float magic = 12582912.0f;
  float v = xv * inv;
  v = v < -256.0f ? -256.0f : v;
  v = v > 256.0f ? 256.0f : v;
  const float r = (v + magic) - magic;
  float c = r < range.lo ? range.lo : r;
  c = c > range.hi ? range.hi : c;
  a.tclip += c != r ? 1 : 0;
  *out = static_cast<int8_t>(static_cast<int32_t>(c));
  const float ae = std::fabs(xv - c * scale);
  a.em = a.em < ae ? ae : a.em;
  a.tx2 += static_cast<double>(xv) * xv;
  a.txc += static_cast<double>(xv) * c;
  a.tc2 += static_cast<int64_t>(c) * static_cast<int64_t>(c);
}

[[gnu::always_inline]] inline void CodeFinish(const CodeAcc& a, uint64_t n, float scale, ErrorStats* st) {
  const double s = scale, c2 = static_cast<double>(a.tc2);
  st->count += n;
  st->clipped += a.tclip;
  st->sum_x2 += a.tx2;
  st->sum_x_xhat += s * a.txc;
  st->sum_xhat2 += s * s * c2;
  st->sum_err2 += std::max(0.0, a.tx2 - 2.0 * s * a.txc + s * s * c2);
  st->max_abs_err = std::max(st->max_abs_err, static_cast<double>(a.em));
}

// Codes x[0, n) with `scale` and accumulates the metrics. The sums use exact products (x*x and x*code fit a double
// exactly; code^2 is an integer) and xhat = code * scale is applied per segment:
//   sum xhat^2 = s^2 sum c^2,  sum x xhat = s sum x c,  sum (x - xhat)^2 = sum x^2 - 2 s sum x c + s^2 sum c^2,
// so the loop needs two fp64 adds per element instead of four (the cancellation in the last line costs ~1e-9
// relative at 40 dB SQNR). max|x - xhat| is exact in fp32 (Sterbenz: xhat is within a factor 2 of x).
[[gnu::always_inline]] inline void CodeSegmentImpl(const float* x, uint64_t n, float scale, Int8Range range,
                                                   int8_t* codes, ErrorStats* st) {
  const float inv = InverseScale(scale);
  const float magic = 12582912.0f;  // 1.5 * 2^23: (v + magic) - magic == rint(v) for |v| < 2^22 (never folded:
                                    // no -ffast-math in this project)
  CodeAcc acc;
  constexpr uint64_t kBlock = 1 << 16;  // int32 lane sums of c^2 (<= 16384 each) cannot overflow within a block
  uint64_t i = 0;
  while (i + 8 <= n) {
    const uint64_t bend = std::min(n, i + kBlock);
    D4 sx2a = {}, sx2b = {}, sxca = {}, sxcb = {};
    I8 sc2 = {}, clip = {};
    F8 emax = {};
    const F8 vinv = F8{} + inv, vs = F8{} + scale, vmagic = F8{} + magic;
    const F8 vlo = F8{} + range.lo, vhi = F8{} + range.hi, vneg = F8{} - 256.0f, vpos = F8{} + 256.0f;
    for (; i + 8 <= bend; i += 8) {
      const F8 xv = Load8(x + i);
      F8 v = xv * vinv;
      v = v < vneg ? vneg : v;
      v = v > vpos ? vpos : v;
      const F8 r = (v + vmagic) - vmagic;
      F8 c = r < vlo ? vlo : r;
      c = c > vhi ? vhi : c;
      clip -= (c != r);  // a true comparison is -1
      const I8 ci = __builtin_convertvector(c, I8);
      const C8 c8 = __builtin_convertvector(ci, C8);
      std::memcpy(codes + i, &c8, 8);
      const F8 ae = Abs8(xv - c * vs);
      emax = emax < ae ? ae : emax;
      const D4 xl = __builtin_convertvector(__builtin_shufflevector(xv, xv, 0, 1, 2, 3), D4);
      const D4 xh = __builtin_convertvector(__builtin_shufflevector(xv, xv, 4, 5, 6, 7), D4);
      const D4 cl = __builtin_convertvector(__builtin_shufflevector(c, c, 0, 1, 2, 3), D4);
      const D4 ch = __builtin_convertvector(__builtin_shufflevector(c, c, 4, 5, 6, 7), D4);
      sx2a += xl * xl;
      sx2b += xh * xh;
      sxca += xl * cl;
      sxcb += xh * ch;
      sc2 += ci * ci;
    }
    for (int j = 0; j < 4; ++j) {
      acc.tx2 += sx2a[j] + sx2b[j];
      acc.txc += sxca[j] + sxcb[j];
    }
    for (int j = 0; j < 8; ++j) {
      acc.tc2 += sc2[j];
      acc.tclip += static_cast<uint64_t>(clip[j]);
    }
    float m = HMax(emax);
    acc.em = acc.em < m ? m : acc.em;
  }
  for (; i < n; ++i) CodeScalar(x[i], inv, scale, range, codes + i, acc);
  CodeFinish(acc, n, scale, st);
}

float AbsMaxBase(const float* x, uint64_t n, bool* finite) { return AbsMaxImpl(x, n, finite); }
void CodeSegmentBase(const float* x, uint64_t n, float scale, Int8Range range, int8_t* codes, ErrorStats* st) {
  CodeSegmentImpl(x, n, scale, range, codes, st);
}
__attribute__((target("avx2"))) float AbsMaxAvx2(const float* x, uint64_t n, bool* finite) {
  return AbsMaxImpl(x, n, finite);
}

// CodeSegmentImpl with AVX2 intrinsics. GCC scalarised two steps of the vector-extension version (int32 -> int8
// became 8 pextrd + shifts; fp32 -> fp64 went through the stack), which made this loop half of the quantize time.
// Same results bit for bit as CodeSegmentBase, NaN/inf included (for a subnormal scale 1/scale is inf):
// - max_ps(a, b) = a > b ? a : b, so max_ps(lo, v) is `v < lo ? lo : v` with the NaN passed through, as in the base;
// - int32 -> int8 keeps the low byte (a shuffle, not a saturating pack), as the base's conversion does;
// - the fp64 lanes are laid out as in the base (elements 0-3 in `a`, 4-7 in `b`);
// - no FMA: GCC contracts a * b + c in C++ even in ISO mode once the target has FMA, which changed max|x - xhat| in
//   the scalar tail (a test compares the two paths bit for bit).
__attribute__((target("avx2"))) void CodeSegmentAvx2(const float* x, uint64_t n, float scale, Int8Range range,
                                                         int8_t* codes, ErrorStats* st) {
  const uint64_t body = n / 8 * 8;
  const float inv = InverseScale(scale);
  const __m256 vinv = _mm256_set1_ps(inv), vs = _mm256_set1_ps(scale), vmagic = _mm256_set1_ps(12582912.0f);
  const __m256 vlo = _mm256_set1_ps(range.lo), vhi = _mm256_set1_ps(range.hi);
  const __m256 vneg = _mm256_set1_ps(-256.0f), vpos = _mm256_set1_ps(256.0f);
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  // Low byte of each int32 to the front of its 128-bit lane, then dwords 0 and 4 to the bottom.
  const __m256i lowbytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                            0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i gather = _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0);
  CodeAcc acc;
  constexpr uint64_t kBlock = 1 << 16;  // as in CodeSegmentImpl: the int32 lane sums cannot overflow within a block
  for (uint64_t i = 0; i < body;) {
    const uint64_t bend = std::min(body, i + kBlock);
    __m256d sx2a = _mm256_setzero_pd(), sx2b = sx2a, sxca = sx2a, sxcb = sx2a;
    __m256i sc2 = _mm256_setzero_si256(), clip = sc2;
    __m256 emax = _mm256_setzero_ps();
    for (; i < bend; i += 8) {
      const __m256 xv = _mm256_loadu_ps(x + i);
      __m256 v = _mm256_mul_ps(xv, vinv);
      v = _mm256_min_ps(vpos, _mm256_max_ps(vneg, v));
      const __m256 r = _mm256_sub_ps(_mm256_add_ps(v, vmagic), vmagic);
      const __m256 c = _mm256_min_ps(vhi, _mm256_max_ps(vlo, r));
      clip = _mm256_sub_epi32(clip, _mm256_castps_si256(_mm256_cmp_ps(c, r, _CMP_NEQ_UQ)));
      const __m256i ci = _mm256_cvttps_epi32(c);
      const __m256i b = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(ci, lowbytes), gather);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + i), _mm256_castsi256_si128(b));
      const __m256 ae = _mm256_and_ps(_mm256_sub_ps(xv, _mm256_mul_ps(c, vs)), absmask);
      emax = _mm256_max_ps(ae, emax);
      const __m256d xl = _mm256_cvtps_pd(_mm256_castps256_ps128(xv));
      const __m256d xh = _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1));
      const __m256d cl = _mm256_cvtps_pd(_mm256_castps256_ps128(c));
      const __m256d ch = _mm256_cvtps_pd(_mm256_extractf128_ps(c, 1));
      sx2a = _mm256_add_pd(sx2a, _mm256_mul_pd(xl, xl));
      sx2b = _mm256_add_pd(sx2b, _mm256_mul_pd(xh, xh));
      sxca = _mm256_add_pd(sxca, _mm256_mul_pd(xl, cl));
      sxcb = _mm256_add_pd(sxcb, _mm256_mul_pd(xh, ch));
      sc2 = _mm256_add_epi32(sc2, _mm256_mullo_epi32(ci, ci));
    }
    alignas(32) double a[4], b[4], ca[4], cb[4];
    alignas(32) int32_t q[8], k[8];
    alignas(32) float e[8];
    _mm256_store_pd(a, sx2a);
    _mm256_store_pd(b, sx2b);
    _mm256_store_pd(ca, sxca);
    _mm256_store_pd(cb, sxcb);
    _mm256_store_si256(reinterpret_cast<__m256i*>(q), sc2);
    _mm256_store_si256(reinterpret_cast<__m256i*>(k), clip);
    _mm256_store_ps(e, emax);
    for (int j = 0; j < 4; ++j) {
      acc.tx2 += a[j] + b[j];
      acc.txc += ca[j] + cb[j];
    }
    float m = 0;
    for (int j = 0; j < 8; ++j) {
      acc.tc2 += q[j];
      acc.tclip += static_cast<uint32_t>(k[j]);
      m = m < e[j] ? e[j] : m;
    }
    acc.em = acc.em < m ? m : acc.em;
  }
  for (uint64_t i = body; i < n; ++i) CodeScalar(x[i], inv, scale, range, codes + i, acc);
  CodeFinish(acc, n, scale, st);
}

// The constants of CodeSegmentAvx512.
struct Code16Consts {
  __m512 inv, s, lo, hi;
  __m512i absmask;
};

// Codes the 16 (lanes 0xffff) or first 8 (0x00ff) elements at x into codes and adds to the sums; see
// CodeSegmentAvx512.
[[gnu::always_inline]] __attribute__((target("avx512f"))) inline void Code16(const float* x, int8_t* codes,
                                                                            __mmask16 lanes, const Code16Consts& k,
                                                                            __m512d& sx2, __m512d& sxc, __m512i& sc2,
                                                                            __m512& emax, uint64_t& clip) {
  const __m512 xv = _mm512_maskz_loadu_ps(lanes, x);
  // rint by the rounding instruction, on the unclamped quotient: the base clamps to +-256 first and uses the
  // 1.5 * 2^23 add, which gives the same r for |v| <= 256; beyond, both r lie outside [lo, hi], so c and the clip
  // count agree too (a zero's sign may differ, which no code, sum or maximum below can see).
  const __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(xv, k.inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 c = _mm512_min_ps(k.hi, _mm512_max_ps(k.lo, r));
  clip += static_cast<uint64_t>(__builtin_popcount(_mm512_mask_cmp_ps_mask(lanes, c, r, _CMP_NEQ_UQ)));
  const __m512i ci = _mm512_cvttps_epi32(c);
  _mm512_mask_cvtepi32_storeu_epi8(codes, lanes, ci);
  const __m512 ae =
      _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(_mm512_sub_ps(xv, _mm512_mul_ps(c, k.s))), k.absmask));
  emax = _mm512_max_ps(ae, emax);  // masked-off lanes give |0 - 0 * s| = 0
  sc2 = _mm512_add_epi32(sc2, _mm512_mullo_epi32(ci, ci));
  const __m512d x0 = _mm512_cvtps_pd(_mm512_castps512_ps256(xv));
  const __m512d c0 = _mm512_cvtps_pd(_mm512_castps512_ps256(c));
  // fma(x, y, s) rounds x*y + s once, and x*y is exact in fp64 (two 24-bit significands): the same bits as the
  // base's separate multiply and add, in one instruction.
  sx2 = _mm512_fmadd_pd(x0, x0, sx2);
  sxc = _mm512_fmadd_pd(x0, c0, sxc);
  if (lanes == 0xffff) {
    const __m512d x1 = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(xv), 1)));
    const __m512d c1 = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(c), 1)));
    sx2 = _mm512_fmadd_pd(x1, x1, sx2);
    sxc = _mm512_fmadd_pd(x1, c1, sxc);
  }
}

// CodeSegmentAvx2 with 16 lanes (AVX-512F), the same results bit for bit: every fp32 step is the same IEEE
// operation per element; the fp64 sums keep the base's lane layout because each group of 8 elements is widened into
// one 8-double register whose lanes 0-3 and 4-7 are the base's `a` and `b` accumulators, and groups are added in
// element order (two per step, then a last one when the segment holds an odd number of 8-groups); the integer sums
// (c^2, clipped) and the max are order-free. On the build VM's Zen 5 this halves the coding time against AVX2.
// `next_bytes` bytes at `next` (the caller's next row, or none) are prefetched as it goes, one cache line per 16
// values.
__attribute__((target("avx512f"))) void CodeSegmentAvx512(const float* x, uint64_t n, float scale, Int8Range range,
                                                          int8_t* codes, ErrorStats* st, const uint8_t* next,
                                                          uint64_t next_bytes) {
  const uint64_t body = n / 8 * 8;
  const float inv = InverseScale(scale);
  const Code16Consts k = {_mm512_set1_ps(inv), _mm512_set1_ps(scale), _mm512_set1_ps(range.lo),
                          _mm512_set1_ps(range.hi), _mm512_set1_epi32(0x7fffffff)};
  CodeAcc acc;
  constexpr uint64_t kBlock = 1 << 16;  // as in CodeSegmentImpl: the int32 lane sums cannot overflow within a block
  for (uint64_t i = 0; i < body;) {
    const uint64_t bend = std::min(body, i + kBlock);
    __m512d sx2 = _mm512_setzero_pd(), sxc = sx2;
    __m512i sc2 = _mm512_setzero_si512();
    __m512 emax = _mm512_setzero_ps();
    uint64_t clip = 0;
    for (; i + 16 <= bend; i += 16) {
      if (i * 4 < next_bytes) _mm_prefetch(reinterpret_cast<const char*>(next) + i * 4, _MM_HINT_T0);
      Code16(x + i, codes + i, 0xffff, k, sx2, sxc, sc2, emax, clip);
    }
    if (i < bend) {  // one group of 8 left (bend is a multiple of 8)
      Code16(x + i, codes + i, 0x00ff, k, sx2, sxc, sc2, emax, clip);
      i += 8;
    }
    alignas(64) double a[8], b[8];
    alignas(64) int32_t q[16];
    _mm512_store_pd(a, sx2);
    _mm512_store_pd(b, sxc);
    _mm512_store_si512(q, sc2);
    for (int j = 0; j < 4; ++j) {
      acc.tx2 += a[j] + a[j + 4];
      acc.txc += b[j] + b[j + 4];
    }
    for (int j = 0; j < 16; ++j) acc.tc2 += q[j];
    acc.tclip += clip;
    const float m = _mm512_reduce_max_ps(emax);
    acc.em = acc.em < m ? m : acc.em;
  }
  for (uint64_t i = body; i < n; ++i) CodeScalar(x[i], inv, scale, range, codes + i, acc);
  CodeFinish(acc, n, scale, st);
}

__attribute__((target("avx512f"))) float AbsMaxAvx512(const float* x, uint64_t n, bool* finite) {
  // Order-free: a max, and a sum that is 0 unless some x - x is NaN.
  __m512 m = _mm512_setzero_ps(), bad = m;
  const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    m = _mm512_max_ps(_mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), absmask)), m);
    bad = _mm512_add_ps(bad, _mm512_sub_ps(v, v));
  }
  float mm = _mm512_reduce_max_ps(m), bb = _mm512_reduce_add_ps(bad);
  for (; i < n; ++i) {
    const float a = std::fabs(x[i]);
    mm = mm < a ? a : mm;
    bb += x[i] - x[i];
  }
  *finite = bb == 0.0f;
  return mm;
}

std::atomic<bool> g_force_baseline{false};
std::atomic<bool> g_force_avx2{false};

bool HaveAvx512() {
  static const bool have = __builtin_cpu_supports("avx512f");
  return have && !g_force_baseline.load(std::memory_order_relaxed) && !g_force_avx2.load(std::memory_order_relaxed);
}
bool HaveAvx2() {
  static const bool have = __builtin_cpu_supports("avx2");
  return have && !g_force_baseline.load(std::memory_order_relaxed);
}
inline float AbsMax(const float* x, uint64_t n, bool* finite) {
  return HaveAvx512() ? AbsMaxAvx512(x, n, finite) : HaveAvx2() ? AbsMaxAvx2(x, n, finite) : AbsMaxBase(x, n, finite);
}
// `next`: memory the caller reads next, prefetched by the AVX-512 path (the others leave it to the hardware).
inline void CodeSegment(const float* x, uint64_t n, float scale, Int8Range range, int8_t* codes, ErrorStats* st,
                        const uint8_t* next = nullptr, uint64_t next_bytes = 0) {
  HaveAvx512() ? CodeSegmentAvx512(x, n, scale, range, codes, st, next, next_bytes)
  : HaveAvx2() ? CodeSegmentAvx2(x, n, scale, range, codes, st)
               : CodeSegmentBase(x, n, scale, range, codes, st);
}

// BF16 -> fp32 for one row, vectorised (8 per step: widen, shift). The same exact conversion as io::Bf16ToF32, kept
// here because it is fused into the hot loop's AVX2 clone: the generic io converter was a third of the run time.
typedef uint16_t H8 __attribute__((vector_size(16)));
[[gnu::always_inline]] inline void Bf16RowImpl(const uint8_t* src, uint64_t n, float* out) {
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    H8 h;
    std::memcpy(&h, src + 2 * i, sizeof h);
    const I8 w = __builtin_convertvector(h, I8) << 16;
    std::memcpy(out + i, &w, sizeof w);
  }
  if (i < n) io::Bf16ToF32(src + 2 * i, out + i, n - i);
}
__attribute__((target("avx2"))) void Bf16RowAvx2(const uint8_t* src, uint64_t n, float* out) {
  Bf16RowImpl(src, n, out);
}
void Bf16RowBase(const uint8_t* src, uint64_t n, float* out) { Bf16RowImpl(src, n, out); }
__attribute__((target("avx512f"))) void Bf16RowAvx512(const uint8_t* src, uint64_t n, float* out) {
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i));
    _mm512_storeu_si512(out + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  if (i < n) io::Bf16ToF32(src + 2 * i, out + i, n - i);
}

// F16 -> fp32 for one row with the conversion instruction (exact for every finite value and infinity; a NaN stays a
// NaN, quieted, and is reported as non-finite either way). The generic io converter, bit manipulation in vector
// lanes that preserves NaN payloads, made F16 checkpoints ~30% slower to quantize than BF16 ones.
__attribute__((target("avx512f"))) void F16RowAvx512(const uint8_t* src, uint64_t n, float* out) {
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i))));
  if (i < n) io::ConvertToF32(io::DType::kF16, src + 2 * i, out + i, n - i);
}

// A row as fp32: F32 rows that are 4-byte aligned (always, in files lmkit and HF write) are used in place; others are
// converted into `buf`.
inline const float* LoadRow(const uint8_t* src, io::DType dtype, uint64_t n, float* buf) {
  if (dtype == io::DType::kF32 && reinterpret_cast<uintptr_t>(src) % alignof(float) == 0)
    return reinterpret_cast<const float*>(src);
  if (dtype == io::DType::kBF16) {
    HaveAvx512() ? Bf16RowAvx512(src, n, buf) : HaveAvx2() ? Bf16RowAvx2(src, n, buf) : Bf16RowBase(src, n, buf);
    return buf;
  }
  if (dtype == io::DType::kF16 && HaveAvx512()) {
    F16RowAvx512(src, n, buf);
    return buf;
  }
  io::ConvertToF32(dtype, src, buf, n);
  return buf;
}

uint64_t FirstNonFinite(const float* x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return i;
  return n;
}

}  // namespace

std::vector<uint64_t> Granularity::ScaleShape(uint64_t rows, uint64_t cols) const {
  switch (kind) {
    case Kind::kChannel: return {rows, 1};
    case Kind::kTensor: return {1};
    case Kind::kGroup: return {rows, group_size ? cols / group_size : 0};
  }
  return {};
}

uint64_t Granularity::ScaleCount(uint64_t rows, uint64_t cols) const {
  uint64_t n = 1;
  for (uint64_t d : ScaleShape(rows, cols)) n *= d;
  return n;
}

Result<Granularity> ParseGranularity(std::string_view text) {
  Granularity g;
  if (text == "channel") return g;
  if (text == "tensor") {
    g.kind = Granularity::Kind::kTensor;
    return g;
  }
  if (text.substr(0, 6) == "group:") {
    std::string_view num = text.substr(6);
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (ec == std::errc() && p == num.data() + num.size() && n >= 1) {
      g.kind = Granularity::Kind::kGroup;
      g.group_size = n;
      return g;
    }
  }
  return Status::Usage("--granularity must be channel, tensor or group:N (N >= 1), not '" + std::string(text) + "'");
}

std::string GranularityName(const Granularity& g) {
  switch (g.kind) {
    case Granularity::Kind::kChannel: return "channel";
    case Granularity::Kind::kTensor: return "tensor";
    case Granularity::Kind::kGroup: return "group:" + std::to_string(g.group_size);
  }
  return "";
}

const char* StrategyName(const Granularity& g) {
  switch (g.kind) {
    case Granularity::Kind::kChannel: return "channel";
    case Granularity::Kind::kTensor: return "tensor";
    case Granularity::Kind::kGroup: return "group";
  }
  return "";
}

float StoredScale(float absmax, Int8Convention convention, io::DType scale_dtype) {
  float s = absmax / RangeOf(convention).divisor;
  if (scale_dtype == io::DType::kBF16) {
    uint32_t bits;
    std::memcpy(&bits, &s, 4);
    return io::Bf16ToF32(Bf16RoundUp(bits));
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
    return Status::InvalidInput("", "group size " + std::to_string(g.group_size) + " does not divide the " +
                                        std::to_string(cols) + " columns");
  const Int8Range range = RangeOf(options.convention);
  const size_t esize = io::DTypeSize(dtype);
  const uint64_t row_bytes = cols * esize;
  // Streamed items are >= 128 KiB of input, so the two system calls per item stay a small share of the time; larger
  // items were slower (per-worker blocks fall out of L2: 256 KiB +15%, 1 MiB +100% on the build VM).
  const uint64_t item_rows =
      streams ? kRowsPerItem * std::max<uint64_t>(1, (128u << 10) / std::max<uint64_t>(1, kRowsPerItem * row_bytes))
              : kRowsPerItem;
  const uint64_t items = (rows + item_rows - 1) / item_rows;
  const uint64_t groups = (rows + kRowsPerItem - 1) / kRowsPerItem;
  const unsigned workers = pool ? pool->size() : 1;
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

  // Per-tensor: one absmax over everything first.
  float tensor_scale = 0;
  if (g.kind == Granularity::Kind::kTensor) {
    std::vector<float> item_max(items, 0.0f);
    run(items, [&](size_t item, unsigned w) {
      const uint64_t r0 = item * item_rows, n = std::min(rows, r0 + item_rows) - r0;
      const uint8_t* block = fetch(item, r0, n, w);
      if (!block) return;
      float* buf = buffers[w].data();
      for (uint64_t k = 0; k < n; ++k) {
        const float* row = LoadRow(block + k * row_bytes, dtype, cols, buf);
        bool finite = true;
        item_max[item] = std::max(item_max[item], AbsMax(row, cols, &finite));
        if (!finite) note_bad(r0 + k);
      }
    });
    if (failed) return stream_error;
    float m = 0;
    for (float v : item_max) m = std::max(m, v);
    tensor_scale = StoredScale(m, options.convention, options.scale_dtype);
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
        const float* row = LoadRow(block + k * row_bytes, dtype, cols, buf);
        int8_t* out = out_block + k * cols;
        ErrorStats& st = group_stats[r / kRowsPerItem];
        bool finite = true;
        // The next row of the item is prefetched while this one is coded (read in place or widened, a row is first
        // touched by this loop, and a core's hardware prefetcher alone left it waiting on memory: F32 rows 1.4x).
        const uint8_t* next = k + 1 < n ? block + (k + 1) * row_bytes : nullptr;
        const uint64_t next_bytes = next ? row_bytes : 0;
        switch (g.kind) {
          case Granularity::Kind::kTensor:
            CodeSegment(row, cols, tensor_scale, range, out, &st, next, next_bytes);
            break;
          case Granularity::Kind::kChannel: {
            float s = StoredScale(AbsMax(row, cols, &finite), options.convention, options.scale_dtype);
            if (!finite) break;
            scales[r] = s;
            CodeSegment(row, cols, s, range, out, &st, next, next_bytes);
            break;
          }
          case Granularity::Kind::kGroup: {
            const uint64_t gs = g.group_size, ng = cols / gs;
            for (uint64_t k2 = 0; k2 < ng && finite; ++k2) {
              float s = StoredScale(AbsMax(row + k2 * gs, gs, &finite), options.convention, options.scale_dtype);
              if (!finite) break;
              scales[r * ng + k2] = s;
              CodeSegment(row + k2 * gs, gs, s, range, out + k2 * gs, &st);
            }
            break;
          }
        }
        if (!finite) {
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
    return Status::InvalidInput("", "non-finite value at [" + std::to_string(r) + ", " +
                                        std::to_string(FirstNonFinite(row, cols)) + "]");
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
        case Granularity::Kind::kChannel: s = scales[r]; break;
        case Granularity::Kind::kTensor: s = scales[0]; break;
        case Granularity::Kind::kGroup: s = scales[r * (cols / granularity.group_size) + c / granularity.group_size]; break;
      }
      out[r * cols + c] = static_cast<float>(codes[r * cols + c]) * s;
    }
}

}  // namespace lmkit::quant
