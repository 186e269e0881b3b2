// Performance notes: AbsHistogram::Add is the hot loop of `lmkit calibrate --flavor nvidia`. The bin must be
// torch.histc's trunc((v / amax) * bins) bit for bit; the vector kernels (AVX-512 and AVX2 clones chosen at run time)
// get it from a multiply and divide only the rare vectors where that could differ (FastBinning below). Increments go
// to four interleaved 32-bit tables (histogram.h) placed a quarter page apart, from an L1 buffer of slots while the
// next values are prefetched (kSlots below). 1e8 Laplace samples on the build VM (Intel Xeon, 2 cores), the
// histogram pass alone: 0.107 s on one thread and 0.059 s on two with the division and per-lane extraction, 0.060 s
// and 0.031 s now. The ORT classes follow numpy's algorithm step by step; their binning (HistogramUniform's literal
// loop) is computed by HistogramUniformFast, which takes the same kernels' shape with a provable error margin
// (UniformBinner) and hands values near an edge to the literal rule: 1e8 values 0.25 s on one thread -> 0.024 s on two.
// The AVX2 and AVX-512 kernels of each family share the round structure line for line; it is not factored out
// because the intrinsics of a lambda or functor do not inline under the caller's target attribute in GCC 12, and an
// out-of-line call from AVX-512 code is what once lost a vzeroupper (see IncrementSlots).
#include "lmkit/quant/histogram.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_epi32() as the unused merge source, which -Wmaybe-uninitialized
// and -Wuninitialized report at every use (a known false positive of the header, not of this code).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cmath>
#include <limits>
#include <numeric>

#include "lmkit/common/thread_pool.h"

namespace lmkit::quant {

namespace {

constexpr uint32_t kTables = 4;
// Largest block one kernel call takes: with pending_ checked before each block, no 32-bit slot can overflow.
constexpr uint64_t kMaxBlock = uint64_t{1} << 30;

// Slots between the starts of two tables: at least bins + 1, and 256 more than a multiple of 1024 so that the tables
// start a quarter of a 4 KiB page apart. With stride bins + 1 = 2049, slot b of one table and slot b + 1 of the next
// shared their address bits below 4 KiB, and the CPU's store-to-load check treats such "4K aliased" accesses as
// dependent: the increments of a peaked histogram, all in a few low bins, stalled on each other across tables.
uint32_t TableStride(uint32_t bins) { return bins + 1 + ((256u - (bins + 1) % 1024u) + 1024u) % 1024u; }

// Every kernel computes, per value v: a = |v| (sign bit cleared); keep = a <= amax (false for NaN and values above
// amax); bin = min((int)((a / amax) * bins), bins - 1) in fp32 (AbsBin), or the drop slot `bins` when !keep; value i
// goes to table i % kTables. IEEE division and multiplication give the same bits in every lane width.
void AddBase(const float* x, uint64_t n, float amax, uint32_t bins, uint32_t* t) {
  const uint32_t stride = TableStride(bins);
  for (uint64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    const uint32_t b = a <= amax ? AbsBin(a, amax, bins) : bins;
    ++t[(i % kTables) * stride + b];
  }
}

// Division-free binning for the vector kernels. The bin is trunc(f), f = fl(fl(a / amax) * bins) (torch.histc's rule);
// g = fl(a * fl(bins / amax)) differs from f by under 4.1 units in the last place (four fp32 roundings), so
// trunc(fl(g * (1 - 2^-21))) <= trunc(f) <= trunc(fl(g * (1 + 2^-21))). Where the two bounds agree (all but about
// g * 1e-6 of values) that is the bin; a vector with any lane in doubt is recomputed with the division, so the counts
// stay exactly the scalar rule's. A 16-lane division costs more than the rest of the binning together, hence this.
// The bound needs a normal amax, a finite normal bins / amax and bins exact in fp32; otherwise the kernels divide.
// (Subnormal quotients and products only occur for values whose f is below 1, where both bounds truncate to 0.)
bool FastBinning(float amax, uint32_t bins) {
  const float c = static_cast<float>(bins) / amax;
  return std::isnormal(amax) && std::isnormal(c) && bins <= (1u << 24);
}
constexpr float kBelow = 1.0f - 0x1p-21f, kAbove = 1.0f + 0x1p-21f;

// The vector kernels run in rounds of kSlots values: first the bins of the round, with each value's table offset
// added, are stored to an L1 buffer with vector stores; then a scalar loop increments the slots the buffer names while
// it prefetches the next round's values, so that memory streams in during the increments instead of stalling the next
// binning. Extracting 16 lanes one by one to increment as they were computed ran at half this speed (the extracts
// competed with the vector work for the same ports, and each increment waited on them); without the prefetch the two
// phases took turns with the memory bus idle during one of them (1e8 values, one thread: 0.19 s, 0.09 s, 0.056 s).
constexpr uint32_t kSlots = 1024;
constexpr uint32_t kRound = 16;  // rounds are a multiple of 16 values: one cache line of floats per prefetch

// Inlined on purpose: GCC 12 left AddAvx512 through the return that followed an out-of-line call here without its
// vzeroupper, and the dirty upper register state then made the caller's SSE code (the entropy search) 10x slower.
// m % kRound == 0; `next` holds the next round's `next_n` values (none past the input's end are touched).
[[gnu::always_inline]] inline void IncrementSlots(const uint32_t* slots, uint64_t m, uint32_t* t, const float* next,
                                                  uint64_t next_n) {
  static_assert(kTables == 4 && kRound % kTables == 0);
  for (uint64_t j = 0; j < m; j += kRound) {
    if (j < next_n) __builtin_prefetch(next + j);
    for (uint32_t k = 0; k < kRound; k += kTables) {
      ++t[slots[j + k]];
      ++t[slots[j + k + 1]];
      ++t[slots[j + k + 2]];
      ++t[slots[j + k + 3]];
    }
  }
}

__attribute__((target("avx2"))) void AddAvx2(const float* x, uint64_t n, float amax, uint32_t bins, uint32_t* t) {
  static_assert(kTables == 4 && kSlots % kRound == 0);
  const int32_t stride = static_cast<int32_t>(TableStride(bins));
  const bool fast = FastBinning(amax, bins);
  const __m256 vamax = _mm256_set1_ps(amax), vbins = _mm256_set1_ps(static_cast<float>(bins));
  const __m256 vc = _mm256_set1_ps(static_cast<float>(bins) / amax);
  const __m256 below = _mm256_set1_ps(kBelow), above = _mm256_set1_ps(kAbove);
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256i last = _mm256_set1_epi32(static_cast<int32_t>(bins - 1));
  const __m256i drop = _mm256_set1_epi32(static_cast<int32_t>(bins));
  const __m256i table = _mm256_setr_epi32(0, stride, 2 * stride, 3 * stride, 0, stride, 2 * stride, 3 * stride);
  alignas(32) uint32_t slots[kSlots];
  uint64_t i = 0;
  while (n - i >= kRound) {
    const uint64_t m = std::min<uint64_t>(kSlots, (n - i) / kRound * kRound);
    for (uint64_t j = 0; j < m; j += 8) {
      const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + i + j), absmask);
      const __m256 keep = _mm256_cmp_ps(a, vamax, _CMP_LE_OQ);
      bool exact = !fast;
      __m256i k{};
      if (fast) {
        const __m256 g = _mm256_and_ps(keep, _mm256_mul_ps(a, vc));
        k = _mm256_cvttps_epi32(_mm256_mul_ps(g, below));
        const __m256i hi = _mm256_cvttps_epi32(_mm256_mul_ps(g, above));
        exact = _mm256_movemask_epi8(_mm256_cmpeq_epi32(k, hi)) != -1;
      }
      if (__builtin_expect(exact, 0))
        k = _mm256_cvttps_epi32(_mm256_and_ps(keep, _mm256_mul_ps(_mm256_div_ps(a, vamax), vbins)));
      k = _mm256_blendv_epi8(drop, _mm256_min_epi32(k, last), _mm256_castps_si256(keep));
      _mm256_store_si256(reinterpret_cast<__m256i*>(slots + j), _mm256_add_epi32(k, table));
    }
    IncrementSlots(slots, m, t, x + i + m, std::min<uint64_t>(kSlots, n - i - m));
    i += m;
  }
  AddBase(x + i, n - i, amax, bins, t);
}

__attribute__((target("avx512f"))) void AddAvx512(const float* x, uint64_t n, float amax, uint32_t bins, uint32_t* t) {
  static_assert(kTables == 4 && kSlots % kRound == 0);
  const int32_t stride = static_cast<int32_t>(TableStride(bins));
  const bool fast = FastBinning(amax, bins);
  const __m512 vamax = _mm512_set1_ps(amax), vbins = _mm512_set1_ps(static_cast<float>(bins));
  const __m512 vc = _mm512_set1_ps(static_cast<float>(bins) / amax);
  const __m512 below = _mm512_set1_ps(kBelow), above = _mm512_set1_ps(kAbove);
  const __m512i last = _mm512_set1_epi32(static_cast<int32_t>(bins - 1));
  const __m512i drop = _mm512_set1_epi32(static_cast<int32_t>(bins));
  const __m512i table = _mm512_setr_epi32(0, stride, 2 * stride, 3 * stride, 0, stride, 2 * stride, 3 * stride, 0,
                                          stride, 2 * stride, 3 * stride, 0, stride, 2 * stride, 3 * stride);
  alignas(64) uint32_t slots[kSlots];
  uint64_t i = 0;
  while (n - i >= kRound) {
    const uint64_t m = std::min<uint64_t>(kSlots, (n - i) / kRound * kRound);
    for (uint64_t j = 0; j < m; j += 16) {
      const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(x + i + j));
      const __mmask16 keep = _mm512_cmp_ps_mask(a, vamax, _CMP_LE_OQ);
      bool exact = !fast;
      __m512i k{};
      if (fast) {
        const __m512 g = _mm512_maskz_mul_ps(keep, a, vc);
        k = _mm512_cvttps_epi32(_mm512_mul_ps(g, below));
        exact = _mm512_cmpneq_epi32_mask(k, _mm512_cvttps_epi32(_mm512_mul_ps(g, above))) != 0;
      }
      if (__builtin_expect(exact, 0))
        k = _mm512_cvttps_epi32(_mm512_maskz_mul_ps(keep, _mm512_div_ps(a, vamax), vbins));
      k = _mm512_mask_blend_epi32(keep, drop, _mm512_min_epi32(k, last));
      _mm512_store_si512(slots + j, _mm512_add_epi32(k, table));
    }
    IncrementSlots(slots, m, t, x + i + m, std::min<uint64_t>(kSlots, n - i - m));
    i += m;
  }
  AddBase(x + i, n - i, amax, bins, t);
}

std::atomic<int> g_forced_level{-1};

int KernelLevel() {
  static const int best = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
  const int forced = g_forced_level.load(std::memory_order_relaxed);
  return forced < 0 ? best : std::min(forced, best);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // the vector helpers below are always inlined into their callers

// ScanRange: min, max, min|x|, max|x| and finiteness, L lanes at a time in two independent accumulator sets (one
// set's loop-carried min/max latency held a core to half its memory bandwidth). max|x| is max(|min|, |max|): whichever
// value has the largest magnitude is the minimum or the maximum.
template <int L>
struct FloatVec;  // GCC ignores vector_size on a type that depends on a template parameter: one per width
template <>
struct FloatVec<4> {
  typedef float Type __attribute__((vector_size(16)));
  typedef int32_t Int __attribute__((vector_size(16)));
};
template <>
struct FloatVec<8> {
  typedef float Type __attribute__((vector_size(32)));
  typedef int32_t Int __attribute__((vector_size(32)));
};
template <>
struct FloatVec<16> {
  typedef float Type __attribute__((vector_size(64)));
  typedef int32_t Int __attribute__((vector_size(64)));
};

template <int L>
[[gnu::always_inline]] inline void ScanImpl(const float* x, uint64_t n, SampleRange* r) {
  using V = typename FloatVec<L>::Type;
  using I = typename FloatVec<L>::Int;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  V mn0 = V{} + kInf, mn1 = mn0, mx0 = V{} - kInf, mx1 = mx0, amn0 = mn0, amn1 = mn0, bad0 = {}, bad1 = {};
  const I mask = I{} + 0x7fffffff;
  uint64_t i = 0;
  // Software prefetch 4 KiB ahead, one line per 16 values, running on past the end of the chunk into whatever memory
  // follows it (a prefetch never faults, and the address is formed as an integer so no pointer leaves its array).
  // Measured on an Intel VM, 2 threads, 1e8 values: 21.5-24.5 ms without, 16.7-18.7 ms with (a bare read of the same
  // memory: 16 ms); the same prefetch stopped at the chunk's end gained nothing, for reasons not pinned down.
  constexpr uint64_t kAhead = 1024 * sizeof(float);
  const uintptr_t base = reinterpret_cast<uintptr_t>(x) + kAhead;
  for (; i + 2 * L <= n; i += 2 * L) {
    __builtin_prefetch(reinterpret_cast<const void*>(base + i * sizeof(float)));
    if constexpr (L == 16) __builtin_prefetch(reinterpret_cast<const void*>(base + (i + 16) * sizeof(float)));
    V v, w;
    std::memcpy(&v, x + i, sizeof v);
    std::memcpy(&w, x + i + L, sizeof w);
    mn0 = v < mn0 ? v : mn0;
    mn1 = w < mn1 ? w : mn1;
    mx0 = v > mx0 ? v : mx0;
    mx1 = w > mx1 ? w : mx1;
    const V av = reinterpret_cast<V>(reinterpret_cast<I>(v) & mask);
    const V aw = reinterpret_cast<V>(reinterpret_cast<I>(w) & mask);
    amn0 = av < amn0 ? av : amn0;
    amn1 = aw < amn1 ? aw : amn1;
    bad0 += v - v;  // NaN for NaN and inf
    bad1 += w - w;
  }
  float lo = kInf, hi = -kInf, alo = kInf, b = 0;
  for (int j = 0; j < L; ++j) {
    lo = std::min({lo, mn0[j], mn1[j]});
    hi = std::max({hi, mx0[j], mx1[j]});
    alo = std::min({alo, amn0[j], amn1[j]});
    b += bad0[j] + bad1[j];
  }
  for (; i < n; ++i) {
    // Comparisons, not std::min/max, so that a NaN is skipped here as in the vector loop.
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
    const float a = std::fabs(x[i]);
    alo = a < alo ? a : alo;
    b += x[i] - x[i];
  }
  if (n == 0) return;
  r->min = std::min(r->min, lo);
  r->max = std::max(r->max, hi);
  r->abs_min = std::min(r->abs_min, alo);
  if (lo <= hi) r->abs_max = std::max({r->abs_max, std::fabs(lo), std::fabs(hi)});
  r->finite = r->finite && b == 0.0f;
}
__attribute__((target("avx512f"))) void ScanAvx512(const float* x, uint64_t n, SampleRange* r) {
  ScanImpl<16>(x, n, r);
}
__attribute__((target("avx2"))) void ScanAvx2(const float* x, uint64_t n, SampleRange* r) { ScanImpl<8>(x, n, r); }
void ScanBase(const float* x, uint64_t n, SampleRange* r) { ScanImpl<4>(x, n, r); }

#pragma GCC diagnostic pop

// HistogramUniform's rule for one value v in [first, last] (numpy's index from the affine map, then corrected
// against the edges). With non-decreasing edges the loops end at the one k with edges[k] <= v < edges[k + 1] (k =
// nb - 1 for v = last), whatever the first guess: the fast kernels below rely on that.
struct UniformEdges {
  const float* e;
  int64_t nb;
  float first, last, denom;
  explicit UniformEdges(const std::vector<float>& edges)
      : e(edges.data()),
        nb(static_cast<int64_t>(edges.size()) - 1),
        first(edges.front()),
        last(edges.back()),
        denom(edges.back() - edges.front()) {}
};

uint32_t NumpyBin(float v, const UniformEdges& u) {
  // numpy: ((v - first) / denom * nbins) in the array's precision, truncated, then fixed up against the edges.
  float f = u.denom > 0 ? (v - u.first) / u.denom * static_cast<float>(u.nb) : 0.0f;
  // Edges near +-FLT_MAX overflow `denom` (or v - first) to inf and make f NaN, whose cast to an integer is
  // undefined (it indexed far outside `counts`); fp64 cannot overflow here and the fix-up below corrects it.
  if (!(f >= 0.0f && f < static_cast<float>(u.nb)))
    f = static_cast<float>((static_cast<double>(v) - u.first) / (static_cast<double>(u.last) - u.first) * u.nb);
  int64_t k = f >= 0.0f ? std::min<int64_t>(static_cast<int64_t>(std::min(f, static_cast<float>(u.nb))), u.nb - 1) : 0;
  while (k > 0 && v < u.e[k]) --k;
  while (k < u.nb - 1 && v >= u.e[k + 1]) ++k;
  return static_cast<uint32_t>(k);
}

// The fast guess and when to trust it. For v in [first, last] the kernels compute f = fl(fl(v - first) * c) with c =
// fl(nb / fl(last - first)): four fp32 roundings, so |f - r| <= 4.0001 * 2^-24 * nb where r = (v - first) / (last -
// first) * nb in exact arithmetic. Edge i sits at r_i = r(edges[i]), within `dev` of i (measured from the edges in fp64
// when the binner is built: linspace edges are within 2^-24-ish of uniform, grown ones drift further). If the fraction
// of f is in (margin, 1 - margin) with margin >= err + dev, r lies strictly between r_k and r_k+1 for k = trunc(f),
// i.e. edges[k] < v < edges[k + 1]: k is NumpyBin's answer. Other values take NumpyBin. Degenerate edges (duplicates,
// overflowing ranges) give a margin that excludes everything, and every value takes NumpyBin.
struct UniformBinner {
  UniformEdges u;
  float c = 0, margin = 1;
  bool fast = false;
  explicit UniformBinner(const std::vector<float>& edges) : u(edges) {
    if (!(u.nb >= 1 && u.nb <= (int64_t{1} << 24) && std::isnormal(u.denom) && u.denom > 0)) return;
    c = static_cast<float>(u.nb) / u.denom;
    if (!std::isnormal(c)) return;
    const double span = static_cast<double>(u.last) - u.first;
    double dev = 0;
    for (int64_t i = 0; i <= u.nb; ++i)
      dev = std::max(dev, std::fabs((static_cast<double>(u.e[i]) - u.first) / span * static_cast<double>(u.nb) -
                                    static_cast<double>(i)));
    // 1e-6 bins of slack covers the fp64 rounding of `dev` itself (~1e-16 * nb), an underflowing product (2^-150) and
    // the fp32 rounding of 1 - margin in the kernels' test (<= 2^-25).
    const double m = 4.0001 * 0x1p-24 * static_cast<double>(u.nb) + dev + 1e-6;
    if (m >= 0.25) return;
    margin = static_cast<float>(m) * (1 + 0x1p-20f);  // rounded up: the test below must not be looser than m
    fast = true;
  }
};

void UniformBase(const float* x, uint64_t n, const UniformBinner& b, bool absolute, uint32_t* t) {
  const uint32_t stride = TableStride(static_cast<uint32_t>(b.u.nb)), drop = static_cast<uint32_t>(b.u.nb);
  for (uint64_t i = 0; i < n; ++i) {
    const float v = absolute ? std::fabs(x[i]) : x[i];
    const uint32_t k = v >= b.u.first && v <= b.u.last ? NumpyBin(v, b.u) : drop;
    ++t[(i % kTables) * stride + k];
  }
}

// The vector kernels' slow path: the lanes in `doubt` (bit j: value j of a group that starts at a multiple of kTables,
// so it goes to table j % kTables as in UniformBase) get NumpyBin's bin; the other lanes keep the fast one.
[[gnu::always_inline]] inline void FixDoubtful(uint32_t doubt, const float* a, const UniformBinner& b, uint32_t stride,
                                               uint32_t* slots) {
  for (; doubt != 0; doubt &= doubt - 1) {
    const int j = __builtin_ctz(doubt);
    slots[j] = NumpyBin(a[j], b.u) + static_cast<uint32_t>(j % kTables) * stride;
  }
}

__attribute__((target("avx2"))) void UniformAvx2(const float* x, uint64_t n, const UniformBinner& b, bool absolute,
                                                  uint32_t* t) {
  static_assert(kTables == 4 && kSlots % kRound == 0);
  const int32_t stride = static_cast<int32_t>(TableStride(static_cast<uint32_t>(b.u.nb)));
  const __m256 first = _mm256_set1_ps(b.u.first), last = _mm256_set1_ps(b.u.last), c = _mm256_set1_ps(b.c);
  const __m256 lo = _mm256_set1_ps(b.margin), hi = _mm256_set1_ps(1.0f - b.margin);
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(absolute ? 0x7fffffff : -1));
  const __m256i drop = _mm256_set1_epi32(static_cast<int32_t>(b.u.nb));
  const __m256i table = _mm256_setr_epi32(0, stride, 2 * stride, 3 * stride, 0, stride, 2 * stride, 3 * stride);
  alignas(32) uint32_t slots[kSlots];
  alignas(32) float a_lanes[8];
  uint64_t i = 0;
  while (n - i >= kRound) {
    const uint64_t m = std::min<uint64_t>(kSlots, (n - i) / kRound * kRound);
    for (uint64_t j = 0; j < m; j += 8) {
      const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + i + j), absmask);
      const __m256 keep = _mm256_and_ps(_mm256_cmp_ps(a, first, _CMP_GE_OQ), _mm256_cmp_ps(a, last, _CMP_LE_OQ));
      const __m256 f = _mm256_and_ps(keep, _mm256_mul_ps(_mm256_sub_ps(a, first), c));
      const __m256i k = _mm256_cvttps_epi32(f);
      const __m256 frac = _mm256_sub_ps(f, _mm256_cvtepi32_ps(k));
      const __m256 safe = _mm256_and_ps(_mm256_cmp_ps(frac, lo, _CMP_GT_OQ), _mm256_cmp_ps(frac, hi, _CMP_LT_OQ));
      const __m256i bin = _mm256_blendv_epi8(drop, k, _mm256_castps_si256(keep));
      _mm256_store_si256(reinterpret_cast<__m256i*>(slots + j), _mm256_add_epi32(bin, table));
      const uint32_t doubt = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_andnot_ps(safe, keep)));
      if (__builtin_expect(doubt != 0, 0)) {
        _mm256_store_ps(a_lanes, a);
        FixDoubtful(doubt, a_lanes, b, static_cast<uint32_t>(stride), slots + j);
      }
    }
    IncrementSlots(slots, m, t, x + i + m, std::min<uint64_t>(kSlots, n - i - m));
    i += m;
  }
  UniformBase(x + i, n - i, b, absolute, t);
}

__attribute__((target("avx512f"))) void UniformAvx512(const float* x, uint64_t n, const UniformBinner& b,
                                                      bool absolute, uint32_t* t) {
  static_assert(kTables == 4 && kSlots % kRound == 0);
  const int32_t stride = static_cast<int32_t>(TableStride(static_cast<uint32_t>(b.u.nb)));
  const __m512 first = _mm512_set1_ps(b.u.first), last = _mm512_set1_ps(b.u.last), c = _mm512_set1_ps(b.c);
  const __m512 lo = _mm512_set1_ps(b.margin), hi = _mm512_set1_ps(1.0f - b.margin);
  const __m512i absmask = _mm512_set1_epi32(absolute ? 0x7fffffff : -1);
  const __m512i drop = _mm512_set1_epi32(static_cast<int32_t>(b.u.nb));
  const __m512i table = _mm512_setr_epi32(0, stride, 2 * stride, 3 * stride, 0, stride, 2 * stride, 3 * stride, 0,
                                          stride, 2 * stride, 3 * stride, 0, stride, 2 * stride, 3 * stride);
  alignas(64) uint32_t slots[kSlots];
  alignas(64) float a_lanes[16];
  uint64_t i = 0;
  while (n - i >= kRound) {
    const uint64_t m = std::min<uint64_t>(kSlots, (n - i) / kRound * kRound);
    for (uint64_t j = 0; j < m; j += 16) {
      const __m512 a = _mm512_castsi512_ps(_mm512_and_epi32(_mm512_loadu_si512(x + i + j), absmask));
      const __mmask16 keep = _mm512_cmp_ps_mask(a, first, _CMP_GE_OQ) & _mm512_cmp_ps_mask(a, last, _CMP_LE_OQ);
      const __m512 f = _mm512_maskz_mul_ps(keep, _mm512_sub_ps(a, first), c);
      const __m512i k = _mm512_cvttps_epi32(f);
      const __m512 frac = _mm512_sub_ps(f, _mm512_cvtepi32_ps(k));
      const __mmask16 safe = _mm512_cmp_ps_mask(frac, lo, _CMP_GT_OQ) & _mm512_cmp_ps_mask(frac, hi, _CMP_LT_OQ);
      _mm512_store_si512(slots + j, _mm512_add_epi32(_mm512_mask_blend_epi32(keep, drop, k), table));
      const uint32_t doubt = keep & ~safe;
      if (__builtin_expect(doubt != 0, 0)) {
        _mm512_store_ps(a_lanes, a);
        FixDoubtful(doubt, a_lanes, b, static_cast<uint32_t>(stride), slots + j);
      }
    }
    IncrementSlots(slots, m, t, x + i + m, std::min<uint64_t>(kSlots, n - i - m));
    i += m;
  }
  UniformBase(x + i, n - i, b, absolute, t);
}

}  // namespace

void SetAbsHistogramKernelForTesting(int level) { g_forced_level.store(level, std::memory_order_relaxed); }

void SampleRange::Merge(const SampleRange& o) {
  finite = finite && o.finite;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  abs_min = std::min(abs_min, o.abs_min);
  abs_max = std::max(abs_max, o.abs_max);
}

void ScanRange(const float* x, uint64_t n, SampleRange* r) {
  const int level = KernelLevel();
  (level == 2 ? ScanAvx512 : level == 1 ? ScanAvx2 : ScanBase)(x, n, r);
}

namespace {
// Work items of the parallel scans and histograms: fixed pieces, so each worker's partial is a sum over whole items
// (integer counts and min/max: the merged result cannot depend on which worker took which item).
constexpr uint64_t kItem = uint64_t{1} << 16;
}  // namespace

SampleRange ScanSamples(const float* x, uint64_t n, ThreadPool* pool) {
  const uint64_t items = (n + kItem - 1) / kItem;
  if (!pool || pool->size() == 1 || items <= 1) {
    SampleRange r;
    ScanRange(x, n, &r);
    return r;
  }
  std::vector<SampleRange> parts(pool->size());
  pool->ParallelFor(items, [&](size_t c, unsigned w) {
    ScanRange(x + c * kItem, std::min(kItem, n - c * kItem), &parts[w]);
  });
  SampleRange r;
  for (const SampleRange& p : parts) r.Merge(p);
  return r;
}

void HistogramUniformFast(const float* x, uint64_t n, const std::vector<float>& edges, std::vector<uint64_t>& counts,
                          bool absolute, ThreadPool* pool, SampleRange* range) {
  if (range) *range = SampleRange{};
  if (edges.size() < 2 || n == 0) return;
  const UniformBinner b(edges);
  const int level = KernelLevel();
  const auto kernel = !b.fast ? UniformBase : level == 2 ? UniformAvx512 : level == 1 ? UniformAvx2 : UniformBase;
  const uint32_t nb = static_cast<uint32_t>(b.u.nb), stride = TableStride(nb);
  const unsigned workers = pool ? pool->size() : 1;
  // Per worker: kTables 32-bit tables (flushed into 64-bit partial counts before any slot could pass 2^32) and the
  // partial counts themselves.
  struct Worker {
    std::vector<uint32_t> tables;
    std::vector<uint64_t> counts;
    uint64_t pending = 0;
    SampleRange range;
  };
  std::vector<Worker> ws(workers);
  auto flush = [&](Worker& w) {
    for (uint32_t t = 0; t < kTables; ++t)
      for (uint32_t k = 0; k < nb; ++k) w.counts[k] += w.tables[t * stride + k];
    std::fill(w.tables.begin(), w.tables.end(), 0u);
    w.pending = 0;
  };
  auto run = [&](size_t item, unsigned wi) {
    Worker& w = ws[wi];
    if (w.tables.empty()) {
      w.tables.assign(size_t{kTables} * stride, 0);
      w.counts.assign(nb, 0);
    }
    const uint64_t begin = item * kItem, m = std::min(kItem, n - begin);
    if (w.pending + m > std::numeric_limits<uint32_t>::max()) flush(w);
    kernel(x + begin, m, b, absolute, w.tables.data());
    // The piece (256 KiB) is still in L2: its scan costs no second read from memory.
    if (range) ScanRange(x + begin, m, &w.range);
    w.pending += m;
  };
  const uint64_t items = (n + kItem - 1) / kItem;
  if (workers == 1 || items == 1) {
    for (uint64_t c = 0; c < items; ++c) run(c, 0);
  } else {
    pool->ParallelFor(items, run);
  }
  for (Worker& w : ws) {
    if (w.tables.empty()) continue;
    flush(w);
    for (uint32_t k = 0; k < nb; ++k) counts[k] += w.counts[k];
    if (range) range->Merge(w.range);
  }
}

AbsHistogram::AbsHistogram(uint32_t bins, float amax) : counts_(bins, 0), amax_(amax) {}

void AbsHistogram::Add(const float* x, uint64_t n) {
  const uint32_t bins = this->bins();
  if (!(amax_ > 0)) {  // all samples zero: everything is in bin 0
    for (uint64_t i = 0; i < n; ++i) counts_[0] += std::fabs(x[i]) <= amax_;
    return;
  }
  if (tables_.empty()) tables_.assign(size_t{kTables} * TableStride(bins), 0);
  const int level = KernelLevel();
  while (n > 0) {
    const uint64_t block = std::min(n, kMaxBlock);
    if (pending_ + block > std::numeric_limits<uint32_t>::max()) Flush();
    (level == 2 ? AddAvx512 : level == 1 ? AddAvx2 : AddBase)(x, block, amax_, bins, tables_.data());
    pending_ += block;
    x += block;
    n -= block;
  }
}

void AbsHistogram::Flush() const {
  if (pending_ == 0) return;
  const uint32_t bins = this->bins(), stride = TableStride(bins);
  for (uint32_t t = 0; t < kTables; ++t)
    for (uint32_t b = 0; b < bins; ++b) counts_[b] += tables_[t * stride + b];
  std::fill(tables_.begin(), tables_.end(), 0u);
  pending_ = 0;
}

const std::vector<uint64_t>& AbsHistogram::counts() const {
  Flush();
  return counts_;
}

std::vector<uint64_t>& AbsHistogram::mutable_counts() {
  Flush();
  return counts_;
}

void AbsHistogram::Merge(const AbsHistogram& other) {
  Flush();
  const std::vector<uint64_t>& c = other.counts();
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += c[i];
}

double AbsHistogram::Edge(uint32_t i) const {
  return static_cast<float>(static_cast<double>(amax_) * i / bins());
}

uint64_t AbsHistogram::total() const {
  const std::vector<uint64_t>& c = counts();
  return std::accumulate(c.begin(), c.end(), uint64_t{0});
}

std::vector<float> LinspaceEdges(float first, float last, uint32_t bins) {
  std::vector<float> e(bins + 1);
  const double a = first, b = last, step = (b - a) / bins;
  for (uint32_t i = 0; i <= bins; ++i) e[i] = static_cast<float>(i * step + a);
  e[bins] = last;
  return e;
}

namespace {

// np.histogram's edges for range (lo, hi): an empty range is widened to +-0.5 around it first.
std::vector<float> NumpyRangeEdges(float lo, float hi, uint32_t bins) {
  if (lo == hi) {
    lo -= 0.5f;
    hi += 0.5f;
  }
  return LinspaceEdges(lo, hi, bins);
}

}  // namespace

void HistogramUniform(const float* x, uint64_t n, const std::vector<float>& edges, std::vector<uint64_t>& counts,
                      bool absolute) {
  if (edges.size() < 2) return;
  const UniformEdges u(edges);
  for (uint64_t i = 0; i < n; ++i) {
    const float v = absolute ? std::fabs(x[i]) : x[i];
    if (v >= u.first && v <= u.last) ++counts[NumpyBin(v, u)];
  }
}

bool OrtSignedHistogram::AddBatch(const float* x, uint64_t n, const SampleRange& range, ThreadPool* pool) {
  // An empty batch has min = max = 0, as numpy's min/max of ORT's batch would have been replaced by.
  const float mn = n ? range.min : 0.0f, mx = n ? range.max : 0.0f;
  const float t = std::max(std::fabs(mn), std::fabs(mx));
  if (counts_.empty()) {
    // np.histogram(data, num_bins, range=(-t, t)).
    edges_ = NumpyRangeEdges(-t, t, initial_bins_);
    counts_.assign(initial_bins_, 0);
    HistogramUniformFast(x, n, edges_, counts_, false, pool);
    threshold_ = t;
    min_ = mn;
    max_ = mx;
    return true;
  }
  if (t <= threshold_) {
    min_ = std::min(min_, mn);
    max_ = std::max(max_, mx);
    HistogramUniformFast(x, n, NumpyRangeEdges(-threshold_, threshold_, static_cast<uint32_t>(counts_.size())),
                         counts_, false, pool);
    return true;  // ORT keeps the old edges
  }
  const uint32_t old_bins = static_cast<uint32_t>(counts_.size());
  if (threshold_ == 0) {
    min_ = std::min(min_, mn);
    max_ = std::max(max_, mx);
    edges_ = LinspaceEdges(-t, t, old_bins);
    std::vector<uint64_t> h(old_bins, 0);
    HistogramUniformFast(x, n, edges_, h, false, pool);
    for (size_t i = 0; i < h.size(); ++i) h[i] += counts_[i];
    counts_ = std::move(h);
    threshold_ = t;
    return true;
  }
  // fp32 arithmetic as numpy does it on float32 scalars.
  const float stride = 2.0f * threshold_ / static_cast<float>(old_bins);
  const float half_f = std::floor((t - threshold_) / stride) + 1.0f;
  // Checked before any cast: a NaN/inf or huge half_f made the casts undefined and the vector below gigantic.
  if (!(half_f >= 1.0f && static_cast<double>(old_bins) + 2.0 * half_f <= OrtMaxBins(initial_bins_))) return false;
  const uint32_t half = static_cast<uint32_t>(half_f);
  const uint32_t new_bins = old_bins + 2 * half;
  const float new_t = static_cast<float>(half) * stride + threshold_;
  if (!std::isfinite(new_t)) return false;
  min_ = std::min(min_, mn);
  max_ = std::max(max_, mx);
  edges_ = LinspaceEdges(-new_t, new_t, new_bins);
  std::vector<uint64_t> h(new_bins, 0);
  HistogramUniformFast(x, n, edges_, h, false, pool);
  for (uint32_t i = 0; i < old_bins; ++i) h[half + i] += counts_[i];
  counts_ = std::move(h);
  threshold_ = new_t;
  return true;
}

namespace {

// AddIfWithinRange's body for both ORT histograms (non-empty, n > 0): bins the batch over `edges` into a scratch copy
// while scanning it, and adds that to `counts` (and the batch's extremes to min/max) when the scan shows it fits.
template <typename Fits>
bool AddScratchIfFits(const float* x, uint64_t n, const std::vector<float>& edges, bool absolute, ThreadPool* pool,
                      SampleRange* range, Fits fits, std::vector<uint64_t>& counts, float& mn, float& mx) {
  std::vector<uint64_t> add(counts.size(), 0);
  HistogramUniformFast(x, n, edges, add, absolute, pool, range);
  if (!range->finite || !fits(*range)) return false;
  for (size_t i = 0; i < add.size(); ++i) counts[i] += add[i];
  mn = std::min(mn, range->min);
  mx = std::max(mx, range->max);
  return true;
}

}  // namespace

bool OrtSignedHistogram::AddIfWithinRange(const float* x, uint64_t n, ThreadPool* pool, SampleRange* range) {
  if (counts_.empty() || n == 0) {
    *range = ScanSamples(x, n, pool);
    return false;
  }
  // The edges and the test AddBatch uses for a batch within the range.
  return AddScratchIfFits(
      x, n, NumpyRangeEdges(-threshold_, threshold_, static_cast<uint32_t>(counts_.size())), false, pool, range,
      [&](const SampleRange& r) { return std::max(std::fabs(r.min), std::fabs(r.max)) <= threshold_; }, counts_, min_,
      max_);
}

bool OrtAbsHistogram::AddIfWithinRange(const float* x, uint64_t n, ThreadPool* pool, SampleRange* range) {
  if (counts_.empty() || n == 0) {
    *range = ScanSamples(x, n, pool);
    return false;
  }
  return AddScratchIfFits(
      x, n, edges_, true, pool, range, [&](const SampleRange& r) { return r.abs_max <= edges_.back(); }, counts_, min_,
      max_);
}

bool OrtAbsHistogram::AddBatch(const float* x, uint64_t n, const SampleRange& range, ThreadPool* pool) {
  const float mn = n ? range.min : 0.0f, mx = n ? range.max : 0.0f;
  const float amin = n ? range.abs_min : 0.0f, amax = n ? range.abs_max : 0.0f;
  if (counts_.empty()) {
    // np.histogram(|x|, bins=num_bins): range = [min|x|, max|x|] of this batch.
    edges_ = NumpyRangeEdges(amin, amax, initial_bins_);
    counts_.assign(initial_bins_, 0);
    HistogramUniformFast(x, n, edges_, counts_, true, pool);
    min_ = mn;
    max_ = mx;
    return true;
  }
  if (amax > edges_.back()) {
    // np.arange(last + width, amax + width, width) in float32: length from the fp32 difference, values
    // start + i * delta with delta = (start + width) - start (numpy's float fill).
    const float width = edges_[1] - edges_[0];
    const float start = edges_.back() + width, stop = amax + width;
    const double len_f = std::ceil(static_cast<double>((stop - start) / width));
    // Checked before the cast: inf (stop overflowed) or billions of bins for one far outlier.
    if (!(std::isfinite(start) && std::isfinite(stop) && len_f >= 0 &&
          static_cast<double>(counts_.size()) + len_f <= OrtMaxBins(initial_bins_)))
      return false;
    const uint64_t len = static_cast<uint64_t>(len_f);
    const float second = start + width;
    const float delta = second - start;
    for (uint64_t i = 0; i < len; ++i)
      edges_.push_back(i == 0 ? start : i == 1 ? second : start + static_cast<float>(i) * delta);
  }
  min_ = std::min(min_, mn);
  max_ = std::max(max_, mx);
  if (edges_.size() - 1 == counts_.size()) {
    HistogramUniformFast(x, n, edges_, counts_, true, pool);
    return true;
  }
  std::vector<uint64_t> h(edges_.size() - 1, 0);
  HistogramUniformFast(x, n, edges_, h, true, pool);
  for (size_t i = 0; i < counts_.size(); ++i) h[i] += counts_[i];
  counts_ = std::move(h);
  return true;
}

}  // namespace lmkit::quant
