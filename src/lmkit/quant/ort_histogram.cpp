#include "lmkit/quant/ort_histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lmkit/common/thread_pool.h"
#include "lmkit/quant/histogram_kernels.h"

namespace lmkit::quant {

void HistogramUniformFast(const float* x, uint64_t n, const std::vector<float>& edges, std::vector<uint64_t>& counts,
                          bool absolute, ThreadPool* pool, SampleRange* range) {
  if (range) *range = SampleRange{};
  if (edges.size() < 2 || n == 0) return;
  const kernels::UniformBinner b(edges);
  const uint32_t nb = static_cast<uint32_t>(b.u.nb), stride = kernels::TableStride(nb);
  const unsigned workers = pool ? pool->size() : 1;
  constexpr uint64_t kItem = kernels::kParallelItem;
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
    for (uint32_t t = 0; t < kernels::kTables; ++t)
      for (uint32_t k = 0; k < nb; ++k) w.counts[k] += w.tables[t * stride + k];
    std::fill(w.tables.begin(), w.tables.end(), 0u);
    w.pending = 0;
  };
  auto run = [&](size_t item, unsigned wi) {
    Worker& w = ws[wi];
    if (w.tables.empty()) {
      w.tables.assign(size_t{kernels::kTables} * stride, 0);
      w.counts.assign(nb, 0);
    }
    const uint64_t begin = item * kItem, m = std::min(kItem, n - begin);
    if (w.pending + m > std::numeric_limits<uint32_t>::max()) flush(w);
    kernels::CountUniform(x + begin, m, b, absolute, w.tables.data(), range ? &w.range : nullptr);
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
  const kernels::UniformEdges u(edges);
  for (uint64_t i = 0; i < n; ++i) {
    const float v = absolute ? std::fabs(x[i]) : x[i];
    if (v >= u.first && v <= u.last) ++counts[kernels::NumpyBin(v, u)];
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
    HistogramUniformFast(x, n, NumpyRangeEdges(-threshold_, threshold_, static_cast<uint32_t>(counts_.size())), counts_,
                         false, pool);
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
