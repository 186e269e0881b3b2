// Performance notes: AbsHistogram::Add is the hot loop of `lmkit calibrate --flavor nvidia`. The bin must be
// torch.histc's trunc((v / amax) * bins) bit for bit; the vector kernels (AVX-512 and AVX2 clones chosen at run time)
// get it from a multiply and divide only the rare vectors where that could differ (FastBinning below). Increments go
// to four interleaved 32-bit tables (histogram.h) placed a quarter page apart, from an L1 buffer of slots while the
// next values are prefetched (kSlots below). 1e8 Laplace samples on the build VM (Intel Xeon, 2 cores), the
// histogram pass alone: 0.107 s on one thread and 0.059 s on two with the division and per-lane extraction, 0.060 s
// and 0.031 s now. The ORT classes follow numpy's algorithm literally and are not tuned: ORT parity, not speed, is
// their job.
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

}  // namespace

void SetAbsHistogramKernelForTesting(int level) { g_forced_level.store(level, std::memory_order_relaxed); }

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
  const int64_t nb = static_cast<int64_t>(edges.size()) - 1;
  const float first = edges.front(), last = edges.back();
  const float denom = last - first;
  for (uint64_t i = 0; i < n; ++i) {
    float v = absolute ? std::fabs(x[i]) : x[i];
    if (!(v >= first && v <= last)) continue;
    // numpy: ((v - first) / denom * nbins) in the array's precision, truncated, then fixed up against the edges.
    float f = denom > 0 ? (v - first) / denom * static_cast<float>(nb) : 0.0f;
    // Edges near +-FLT_MAX overflow `denom` (or v - first) to inf and make f NaN, whose cast to an integer is
    // undefined (it indexed far outside `counts`); fp64 cannot overflow here and the fix-up below corrects it.
    if (!(f >= 0.0f && f < static_cast<float>(nb)))
      f = static_cast<float>((static_cast<double>(v) - first) / (static_cast<double>(last) - first) * nb);
    int64_t k = f >= 0.0f ? std::min<int64_t>(static_cast<int64_t>(std::min(f, static_cast<float>(nb))), nb - 1) : 0;
    while (k > 0 && v < edges[k]) --k;
    while (k < nb - 1 && v >= edges[k + 1]) ++k;
    ++counts[k];
  }
}

namespace {

void MinMax(const float* x, uint64_t n, float* mn, float* mx) {
  float a = n ? x[0] : 0.0f, b = a;
  for (uint64_t i = 0; i < n; ++i) {
    a = std::min(a, x[i]);
    b = std::max(b, x[i]);
  }
  *mn = a;
  *mx = b;
}

}  // namespace

bool OrtSignedHistogram::AddBatch(const float* x, uint64_t n) {
  float mn, mx;
  MinMax(x, n, &mn, &mx);
  const float t = std::max(std::fabs(mn), std::fabs(mx));
  if (counts_.empty()) {
    // np.histogram(data, num_bins, range=(-t, t)).
    edges_ = NumpyRangeEdges(-t, t, initial_bins_);
    counts_.assign(initial_bins_, 0);
    HistogramUniform(x, n, edges_, counts_, false);
    threshold_ = t;
    min_ = mn;
    max_ = mx;
    return true;
  }
  if (t <= threshold_) {
    min_ = std::min(min_, mn);
    max_ = std::max(max_, mx);
    std::vector<uint64_t> add(counts_.size(), 0);
    HistogramUniform(x, n, NumpyRangeEdges(-threshold_, threshold_, static_cast<uint32_t>(counts_.size())), add,
                     false);
    for (size_t i = 0; i < add.size(); ++i) counts_[i] += add[i];
    return true;  // ORT keeps the old edges
  }
  const uint32_t old_bins = static_cast<uint32_t>(counts_.size());
  if (threshold_ == 0) {
    min_ = std::min(min_, mn);
    max_ = std::max(max_, mx);
    edges_ = LinspaceEdges(-t, t, old_bins);
    std::vector<uint64_t> h(old_bins, 0);
    HistogramUniform(x, n, edges_, h, false);
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
  HistogramUniform(x, n, edges_, h, false);
  for (uint32_t i = 0; i < old_bins; ++i) h[half + i] += counts_[i];
  counts_ = std::move(h);
  threshold_ = new_t;
  return true;
}

bool OrtAbsHistogram::AddBatch(const float* x, uint64_t n) {
  float mn, mx;
  MinMax(x, n, &mn, &mx);
  float amin = n ? std::fabs(x[0]) : 0.0f, amax = amin;
  for (uint64_t i = 0; i < n; ++i) {
    float a = std::fabs(x[i]);
    amin = std::min(amin, a);
    amax = std::max(amax, a);
  }
  if (counts_.empty()) {
    // np.histogram(|x|, bins=num_bins): range = [min|x|, max|x|] of this batch.
    edges_ = NumpyRangeEdges(amin, amax, initial_bins_);
    counts_.assign(initial_bins_, 0);
    HistogramUniform(x, n, edges_, counts_, true);
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
  std::vector<uint64_t> h(edges_.size() - 1, 0);
  HistogramUniform(x, n, edges_, h, true);
  for (size_t i = 0; i < counts_.size(); ++i) h[i] += counts_[i];
  counts_ = std::move(h);
  return true;
}

}  // namespace lmkit::quant
