// Performance notes: AbsHistogram::Add is the hot loop of `lmkit calibrate --flavor nvidia`. A multiply by 1/amax
// would change bins relative to torch.histc's (v / amax) * bins, so the division stays, 8 lanes at a time (AVX2 clone);
// the scatter goes to two interleaved tables (2048 entries each, L1-resident) so equal consecutive bins do not
// serialise on one counter. The ORT classes follow numpy's algorithm literally
// and are not tuned: ORT parity, not speed, is their job.
#include "lmkit/quant/histogram.h"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <numeric>

namespace lmkit::quant {

AbsHistogram::AbsHistogram(uint32_t bins, float amax) : counts_(bins, 0), amax_(amax) {}

namespace {

#pragma GCC diagnostic ignored "-Wpsabi"  // vector helpers are always inlined in this file
typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));

// Bins of 8 values at a time (IEEE vector division: the same bits as AbsBin's scalar division), then scalar
// increments into two interleaved count arrays so that runs of equal bins do not serialise on one counter.
[[gnu::always_inline]] inline void AddImpl(const float* x, uint64_t n, float amax, uint32_t bins, uint64_t* c0,
                                           uint64_t* c1) {
  const F8 vamax = F8{} + amax, vbins = F8{} + static_cast<float>(bins);
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    F8 v;
    std::memcpy(&v, x + i, sizeof v);
    const F8 a = reinterpret_cast<F8>(reinterpret_cast<I8>(v) & 0x7fffffff);
    const I8 keep = a <= vamax;  // false for NaN and values above amax
    const F8 f = (a / vamax) * vbins;
    I8 b = __builtin_convertvector(keep ? f : F8{}, I8);
    b = b >= static_cast<int32_t>(bins) ? static_cast<int32_t>(bins - 1) : b;
    for (int j = 0; j < 8; j += 2) {
      c0[b[j]] += keep[j] ? 1 : 0;
      c1[b[j + 1]] += keep[j + 1] ? 1 : 0;
    }
  }
  for (; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (a <= amax) ++c0[AbsBin(a, amax, bins)];
  }
}
__attribute__((target("avx2"))) void AddAvx2(const float* x, uint64_t n, float amax, uint32_t bins, uint64_t* c0,
                                             uint64_t* c1) {
  AddImpl(x, n, amax, bins, c0, c1);
}
void AddBase(const float* x, uint64_t n, float amax, uint32_t bins, uint64_t* c0, uint64_t* c1) {
  AddImpl(x, n, amax, bins, c0, c1);
}

}  // namespace

void AbsHistogram::Add(const float* x, uint64_t n) {
  const uint32_t bins = this->bins();
  if (!(amax_ > 0)) {  // all samples zero: everything is in bin 0
    for (uint64_t i = 0; i < n; ++i) counts_[0] += std::fabs(x[i]) <= amax_;
    return;
  }
  std::vector<uint64_t> second(bins, 0);
  static const bool avx2 = __builtin_cpu_supports("avx2");
  (avx2 ? AddAvx2 : AddBase)(x, n, amax_, bins, counts_.data(), second.data());
  for (uint32_t b = 0; b < bins; ++b) counts_[b] += second[b];
}

void AbsHistogram::Merge(const AbsHistogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
}

double AbsHistogram::Edge(uint32_t i) const {
  return static_cast<float>(static_cast<double>(amax_) * i / bins());
}

uint64_t AbsHistogram::total() const { return std::accumulate(counts_.begin(), counts_.end(), uint64_t{0}); }

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
