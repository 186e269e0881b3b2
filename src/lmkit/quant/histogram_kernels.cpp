// Performance notes: AbsHistogram::Add is the hot loop of `lmkit calibrate --flavor nvidia`. The bin must be
// torch.histc's trunc((v / amax) * bins) bit for bit; the vector kernels (AVX-512 and AVX2 clones chosen at run time)
// get it from a multiply and divide only the rare vectors where that could differ (FastBinning below). Increments go
// to four interleaved 32-bit tables (histogram_kernels.h) placed a quarter page apart: in the AVX2 kernel from an L1
// buffer of slots while the next values are prefetched (kSlots below), in the AVX-512 kernel software-pipelined, with
// pairs of small bins counted by one increment (kPairBins, kLag). 1e8 Laplace samples on the build VM (Intel Xeon, 2
// cores), the histogram pass alone: 0.107 s on one thread and 0.059 s on two with the division and per-lane extraction,
// 0.060 s and 0.031 s in rounds; on a Zen 5 VM, 2 threads: 16.1 ms in rounds, 12-13.5 ms pipelined with pairs.
// The ORT classes follow numpy's algorithm step by step; their binning (HistogramUniform's literal
// loop) is computed by HistogramUniformFast, which takes the same kernels' shape with a provable error margin
// (UniformBinner) and hands values near an edge to the literal rule: 1e8 values 0.25 s on one thread -> 0.024 s on two.
// The AVX2 kernels (AddAvx2, UniformAvx2) share the round structure, and the AVX-512 ones (AddAvx512, UniformAvx512)
// the pipeline, line for line; they are not factored out because the intrinsics of a lambda or functor do not inline
// under the caller's target attribute in GCC 12, and an out-of-line call from AVX-512 code is what once lost a
// vzeroupper (see IncrementSlots; shared AVX-512 pieces are always_inline functions with the target, as RangeLanes).
#include "lmkit/quant/histogram_kernels.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_epi32() as the unused merge source, which -Wmaybe-uninitialized
// and -Wuninitialized report at every use (a known false positive of the header, not of this code).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "lmkit/formats/histogram_bins.h"

namespace lmkit::quant::kernels {

// Slots between the starts of two tables: at least bins + 1, and 256 more than a multiple of 1024 so that the tables
// start a quarter of a 4 KiB page apart. With stride bins + 1 = 2049, slot b of one table and slot b + 1 of the next
// shared their address bits below 4 KiB, and the CPU's store-to-load check treats such "4K aliased" accesses as
// dependent: the increments of a peaked histogram, all in a few low bins, stalled on each other across tables.
uint32_t TableStride(uint32_t bins) { return bins + 1 + ((256u - (bins + 1) % 1024u) + 1024u) % 1024u; }

uint32_t PairBase(uint32_t bins) { return kTables * TableStride(bins); }
size_t TableSlots(uint32_t bins) { return size_t{PairBase(bins)} + size_t{kPairBins} * kPairBins; }

namespace {

std::atomic<int> g_forced_level{-1};

// Every kernel computes, per value v: a = |v| (sign bit cleared); keep = a <= amax (false for NaN and values above
// amax); bin = min((int)((a / amax) * bins), bins - 1) in fp32 (AbsBin), or the drop slot `bins` when !keep; value i
// goes to table i % kTables. IEEE division and multiplication give the same bits in every lane width.
void AddBase(const float* x, uint64_t n, float amax, uint32_t bins, uint32_t* t) {
  const uint32_t stride = TableStride(bins);
  for (uint64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    const uint32_t b = a <= amax ? formats::AbsBin(a, amax, bins) : bins;
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

// The AVX2 kernels (and both uniform ones) run in rounds of kSlots values: first the bins of the round, with each
// value's table offset added, are stored to an L1 buffer with vector stores; then a scalar loop increments the slots
// the buffer names while it prefetches the next round's values, so that memory streams in during the increments
// instead of stalling the next binning. Extracting 16 lanes one by one to increment as they were computed ran at half
// this speed (the extracts competed with the vector work for the same ports, and each increment waited on them);
// without the prefetch the two phases took turns with the memory bus idle during one of them (1e8 values, one thread:
// 0.19 s, 0.09 s, 0.056 s).
constexpr uint32_t kSlots = 1024;
constexpr uint32_t kRound = 16;  // rounds are a multiple of 16 values: one cache line of floats per prefetch

// Inlined on purpose: when the AVX-512 kernel still ran in rounds and called this out of line, GCC 12 left it through
// the return that followed without its vzeroupper, and the dirty upper register state then made the caller's SSE
// code (the entropy search) 10x slower.
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

// The AVX-512 kernel is software-pipelined: each step bins 16 values and increments the slots that were binned
// kLag steps earlier (a ring of slot vectors in L1), so the vector binning and the scalar increments run side by side
// instead of in turns as in AddAvx2's rounds (1e8 values, 2 threads, on a Zen 5 VM: 16.1 ms in rounds, 12.2 ms
// pipelined, 11.9 ms pipelined with pairs; the stores and loads a step needs are well inside one core's limits).
// Even lane 2i of a step holds value 2i's slot, or the pair slot of values 2i and 2i + 1 when both are small; odd lane
// 2i + 1 holds value 2i + 1's slot. Each step also stores its odd lanes to its own row of `wide` (the small pairs'
// odd lanes there name the drop slot, which Flush never reads) and sets its bit in `wide_steps` if any pair was not
// small; every kWideSteps steps the flagged rows are incremented. (Appending only the flagged rows at a running
// position cost 10% more: the position depends on the step's own comparison, so the store's address came late and
// the loads behind it waited on it.)
constexpr uint32_t kLag = 8, kRing = 2 * kLag, kWideSteps = 64;

// The range scan the AVX-512 kernels fold into their pass (kScan): ScanImpl's rule on 16 lanes (min/max skip NaN, as
// vminps returns its second operand for one; v - v flags NaN and inf), then folded with the tail's ScanRange.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // always inlined into AVX-512 code: no call passes these registers
struct RangeLanes {
  __m512 lo, hi, abs_lo, bad;
};
__attribute__((target("avx512f"), always_inline)) inline RangeLanes RangeLanesStart() {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  return {_mm512_set1_ps(kInf), _mm512_set1_ps(-kInf), _mm512_set1_ps(kInf), _mm512_setzero_ps()};
}
__attribute__((target("avx512f"), always_inline)) inline void RangeLanesAdd(RangeLanes& r, __m512 v) {
  r.lo = _mm512_min_ps(v, r.lo);
  r.hi = _mm512_max_ps(v, r.hi);
  r.abs_lo = _mm512_min_ps(_mm512_abs_ps(v), r.abs_lo);
  r.bad = _mm512_add_ps(r.bad, _mm512_sub_ps(v, v));
}
// Folds the lanes (when `steps` vectors went through them) and ScanRange of the tail x[0, tail) into *out.
__attribute__((target("avx512f"), always_inline)) inline void RangeLanesFinish(const RangeLanes& l, uint64_t steps,
                                                                               const float* x, uint64_t tail,
                                                                               SampleRange* out) {
  if (steps > 0) {
    SampleRange r;
    r.min = _mm512_reduce_min_ps(l.lo);
    r.max = _mm512_reduce_max_ps(l.hi);
    r.abs_min = _mm512_reduce_min_ps(l.abs_lo);
    if (r.min <= r.max) r.abs_max = std::max(std::fabs(r.min), std::fabs(r.max));
    r.finite = _mm512_reduce_add_ps(l.bad) == 0.0f;
    out->Merge(r);
  }
  ScanRange(x, tail, out);
}
#pragma GCC diagnostic pop

// With kScan the same pass folds x's SampleRange into *range (what ScanRange gives: RangeLanes).
template <bool kScan>
__attribute__((target("avx512f"))) void AddAvx512(const float* x, uint64_t n, float amax, uint32_t bins, uint32_t* t,
                                                  SampleRange* range) {
  static_assert(kTables == 4 && kPairBins == 64);  // the pair slot is first * 64 + second: a shift by 6
  const int32_t s = static_cast<int32_t>(TableStride(bins)), p = static_cast<int32_t>(PairBase(bins));
  const bool fast = FastBinning(amax, bins);
  const __m512 vamax = _mm512_set1_ps(amax), vbins = _mm512_set1_ps(static_cast<float>(bins));
  const __m512 vc = _mm512_set1_ps(static_cast<float>(bins) / amax);
  const __m512 below = _mm512_set1_ps(kBelow), above = _mm512_set1_ps(kAbove);
  const __m512i last = _mm512_set1_epi32(static_cast<int32_t>(bins - 1));
  const __m512i drop = _mm512_set1_epi32(static_cast<int32_t>(bins));
  // Pair i's first value goes to table i % 4, its second to table (i + 2) % 4; pair slots are below both bins' limit,
  // min(kPairBins, bins), so that the drop slot `bins` never enters a pair.
  const __m512i table =
      _mm512_setr_epi32(0, 2 * s, s, 3 * s, 2 * s, 0, 3 * s, s, 0, 2 * s, s, 3 * s, 2 * s, 0, 3 * s, s);
  const __m512i pair_base = _mm512_setr_epi32(p, 0, p, 0, p, 0, p, 0, p, 0, p, 0, p, 0, p, 0);
  const __m512i dropped = _mm512_add_epi32(table, drop);
  const __m512i small = _mm512_set1_epi32(static_cast<int32_t>(std::min(kPairBins, bins)));
  alignas(64) uint32_t ring[kRing * 16];
  alignas(64) uint32_t wide[kWideSteps * 16];
  for (uint32_t r = 0; r < kRing; ++r) _mm512_store_si512(ring + r * 16, dropped);  // the first kLag steps' "earlier"
  uint64_t wide_steps = 0;
  static_assert(kWideSteps == 64);  // one bit per step in wide_steps
  auto drain_wide = [&] {
    for (; wide_steps != 0; wide_steps &= wide_steps - 1) {
      const uint32_t* row = wide + __builtin_ctzll(wide_steps) * 16;
      for (uint32_t q = 1; q < 16; q += 2) ++t[row[q]];
    }
  };
  // One cache line ahead per step, 4 KiB ahead (as ScanImpl: an integer address, past the end harmlessly).
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(x) + 1024 * sizeof(float);
  const uint64_t steps = n / 16;
  RangeLanes lanes = RangeLanesStart();
  for (uint64_t j = 0; j < steps; ++j) {
    __builtin_prefetch(reinterpret_cast<const void*>(ahead + j * 16 * sizeof(float)));
    const __m512 v = _mm512_loadu_ps(x + j * 16);
    const __m512 a = _mm512_abs_ps(v);
    if constexpr (kScan) RangeLanesAdd(lanes, v);
    const __mmask16 keep = _mm512_cmp_ps_mask(a, vamax, _CMP_LE_OQ);
    bool exact = !fast;
    __m512i k{};
    if (fast) {
      const __m512 g = _mm512_maskz_mul_ps(keep, a, vc);
      k = _mm512_cvttps_epi32(_mm512_mul_ps(g, below));
      exact = _mm512_cmpneq_epi32_mask(k, _mm512_cvttps_epi32(_mm512_mul_ps(g, above))) != 0;
    }
    if (__builtin_expect(exact, 0)) k = _mm512_cvttps_epi32(_mm512_maskz_mul_ps(keep, _mm512_div_ps(a, vamax), vbins));
    k = _mm512_mask_blend_epi32(keep, drop, _mm512_min_epi32(k, last));
    const __m512i second = _mm512_srli_epi64(k, 32);  // even lanes: the pair's second bin
    const __mmask16 pairs = _mm512_mask_cmplt_epu32_mask(0x5555, _mm512_or_si512(k, second), small);
    const __m512i one = _mm512_add_epi32(k, table);
    const __m512i both = _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(k, 6), second), pair_base);
    const uint32_t* earlier = ring + ((j + kLag) % kRing) * 16;
    ++t[earlier[0]];
    ++t[earlier[2]];
    ++t[earlier[4]];
    ++t[earlier[6]];
    ++t[earlier[8]];
    ++t[earlier[10]];
    ++t[earlier[12]];
    ++t[earlier[14]];
    _mm512_store_si512(ring + (j % kRing) * 16, _mm512_mask_blend_epi32(pairs, one, both));
    const __mmask16 paired = pairs | static_cast<__mmask16>(pairs << 1);
    _mm512_store_si512(wide + (j % kWideSteps) * 16, _mm512_mask_blend_epi32(paired, one, dropped));
    wide_steps |= static_cast<uint64_t>(pairs != 0x5555) << (j % kWideSteps);
    if (j % kWideSteps == kWideSteps - 1) {
      drain_wide();
    }
  }
  drain_wide();
  for (uint64_t j = steps; j < steps + kLag; ++j)
    for (uint32_t q = 0; q < 16; q += 2) ++t[ring[((j + kLag) % kRing) * 16 + q]];
  AddBase(x + steps * 16, n - steps * 16, amax, bins, t);
  if constexpr (kScan) RangeLanesFinish(lanes, steps, x + steps * 16, n - steps * 16, range);
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

// Software-pipelined as AddAvx512 (each step increments the slots binned kLag steps earlier), without pairs: a signed
// histogram's busy bins sit around its middle, and the ORT path is not the one the pairs were measured for. With
// kScan the step also folds x's SampleRange into *range (the same pass over memory).
template <bool kScan>
__attribute__((target("avx512f"))) void UniformAvx512(const float* x, uint64_t n, const UniformBinner& b, bool absolute,
                                                      uint32_t* t, SampleRange* range) {
  static_assert(kTables == 4);
  const int32_t stride = static_cast<int32_t>(TableStride(static_cast<uint32_t>(b.u.nb)));
  const __m512 first = _mm512_set1_ps(b.u.first), last = _mm512_set1_ps(b.u.last), c = _mm512_set1_ps(b.c);
  const __m512 lo = _mm512_set1_ps(b.margin), hi = _mm512_set1_ps(1.0f - b.margin);
  const __m512i absmask = _mm512_set1_epi32(absolute ? 0x7fffffff : -1);
  const __m512i drop = _mm512_set1_epi32(static_cast<int32_t>(b.u.nb));
  const __m512i table = _mm512_setr_epi32(0, stride, 2 * stride, 3 * stride, 0, stride, 2 * stride, 3 * stride, 0,
                                          stride, 2 * stride, 3 * stride, 0, stride, 2 * stride, 3 * stride);
  alignas(64) uint32_t ring[kRing * 16];
  alignas(64) float a_lanes[16];
  for (uint32_t r = 0; r < kRing; ++r) _mm512_store_si512(ring + r * 16, _mm512_add_epi32(table, drop));
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(x) + 1024 * sizeof(float);  // as AddAvx512
  RangeLanes lanes = RangeLanesStart();
  const uint64_t steps = n / 16;
  for (uint64_t j = 0; j < steps; ++j) {
    __builtin_prefetch(reinterpret_cast<const void*>(ahead + j * 16 * sizeof(float)));
    const __m512 v = _mm512_loadu_ps(x + j * 16);
    if constexpr (kScan) RangeLanesAdd(lanes, v);
    const __m512 a = _mm512_castsi512_ps(_mm512_and_epi32(_mm512_castps_si512(v), absmask));
    const __mmask16 keep = _mm512_cmp_ps_mask(a, first, _CMP_GE_OQ) & _mm512_cmp_ps_mask(a, last, _CMP_LE_OQ);
    const __m512 f = _mm512_maskz_mul_ps(keep, _mm512_sub_ps(a, first), c);
    const __m512i k = _mm512_cvttps_epi32(f);
    const __m512 frac = _mm512_sub_ps(f, _mm512_cvtepi32_ps(k));
    const __mmask16 safe = _mm512_cmp_ps_mask(frac, lo, _CMP_GT_OQ) & _mm512_cmp_ps_mask(frac, hi, _CMP_LT_OQ);
    const uint32_t* earlier = ring + ((j + kLag) % kRing) * 16;
    for (uint32_t q = 0; q < 16; q += 4) {
      ++t[earlier[q]];
      ++t[earlier[q + 1]];
      ++t[earlier[q + 2]];
      ++t[earlier[q + 3]];
    }
    uint32_t* now = ring + (j % kRing) * 16;
    _mm512_store_si512(now, _mm512_add_epi32(_mm512_mask_blend_epi32(keep, drop, k), table));
    const uint32_t doubt = keep & ~safe;
    if (__builtin_expect(doubt != 0, 0)) {
      _mm512_store_ps(a_lanes, a);
      FixDoubtful(doubt, a_lanes, b, static_cast<uint32_t>(stride), now);
    }
  }
  for (uint64_t j = steps; j < steps + kLag; ++j)
    for (uint32_t q = 0; q < 16; ++q) ++t[ring[((j + kLag) % kRing) * 16 + q]];
  UniformBase(x + steps * 16, n - steps * 16, b, absolute, t);
  if constexpr (kScan) RangeLanesFinish(lanes, steps, x + steps * 16, n - steps * 16, range);
}
}  // namespace

int KernelLevel() {
  static const int best = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
  const int forced = g_forced_level.load(std::memory_order_relaxed);
  return forced < 0 ? best : std::min(forced, best);
}

void SetAbsHistogramKernelForTesting(int level) { g_forced_level.store(level, std::memory_order_relaxed); }

void CountAbs(const float* x, uint64_t n, float amax, uint32_t bins, uint32_t* tables, SampleRange* range) {
  const int level = KernelLevel();
  if (level == 2 && range) {
    AddAvx512<true>(x, n, amax, bins, tables, range);
  } else if (level == 2) {
    AddAvx512<false>(x, n, amax, bins, tables, nullptr);
  } else {
    (level == 1 ? AddAvx2 : AddBase)(x, n, amax, bins, tables);
    if (range) ScanRange(x, n, range);  // from cache, right after the count
  }
}

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

UniformBinner::UniformBinner(const std::vector<float>& edges) : u(edges) {
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

void CountUniform(const float* x, uint64_t n, const UniformBinner& b, bool absolute, uint32_t* tables,
                  SampleRange* range) {
  const int level = KernelLevel();
  if (b.fast && level == 2 && range) {
    UniformAvx512<true>(x, n, b, absolute, tables, range);
  } else if (b.fast && level == 2) {
    UniformAvx512<false>(x, n, b, absolute, tables, nullptr);
  } else {
    (b.fast && level == 1 ? UniformAvx2 : UniformBase)(x, n, b, absolute, tables);
    // The piece is still in cache: its scan costs no second read from memory.
    if (range) ScanRange(x, n, range);
  }
}

}  // namespace lmkit::quant::kernels

namespace lmkit::quant {

void ScanRange(const float* x, uint64_t n, SampleRange* r) {
  const int level = kernels::KernelLevel();
  (level == 2 ? kernels::ScanAvx512 : level == 1 ? kernels::ScanAvx2 : kernels::ScanBase)(x, n, r);
}

}  // namespace lmkit::quant
