// The histograms of the "ort" calibration flavour (ONNX Runtime calibrate.py HistogramCollector): built batch by
// batch; when a batch exceeds the current range the histogram grows keeping its bin width, so the result depends on
// batch order (that is ORT's behaviour and what parity needs). Bin edges are fp32 and a value falls in [e_i, e_i+1),
// last bin closed, exactly as numpy.histogram assigns them. Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "lmkit/quant/sample_range.h"

namespace lmkit::quant {

// ORT HistogramCollector.collect_value: a signed histogram over [-t, t], t = max|x| of the first batch; grown
// symmetrically by whole bins of the same width when a later batch has a larger |x|.
class OrtSignedHistogram {
 public:
  explicit OrtSignedHistogram(uint32_t bins) : initial_bins_(bins) {}
  // False (and nothing added) when the batch would grow the histogram past OrtMaxBins(bins) or to a range that
  // overflows fp32: ORT would allocate billions of bins (or divide by inf) for one far outlier. `range` is the
  // batch's ScanSamples (finite samples); binning is split over `pool` when given (the same counts for any count).
  bool AddBatch(const float* x, uint64_t n, const SampleRange& range, ThreadPool* pool = nullptr);
  bool AddBatch(const float* x, uint64_t n) { return AddBatch(x, n, ScanSamples(x, n)); }
  // One pass over the batch instead of two where it lies within the current range (after the first batch, the usual
  // case): bins it with the current edges while scanning it, and keeps the counts if the scan shows it fits (finite,
  // max |x| <= the range). Otherwise nothing is added, *range is the batch's ScanSamples and the caller goes on with
  // AddBatch. Either way the histogram ends as AddBatch alone would leave it.
  bool AddIfWithinRange(const float* x, uint64_t n, ThreadPool* pool, SampleRange* range);

  const std::vector<uint64_t>& counts() const { return counts_; }
  const std::vector<float>& edges() const { return edges_; }  // counts().size() + 1
  float min() const { return min_; }
  float max() const { return max_; }
  bool empty() const { return counts_.empty(); }

 private:
  uint32_t initial_bins_;
  std::vector<uint64_t> counts_;
  std::vector<float> edges_;
  float threshold_ = 0;
  float min_ = 0, max_ = 0;
};

// ORT HistogramCollector.collect_absolute_value (symmetric percentile): a histogram of |x| whose first batch spans
// [min|x|, max|x|] of that batch; later batches append bins of the same width (numpy.arange) when they exceed the last
// edge, and values below the first edge are dropped (as in ORT).
class OrtAbsHistogram {
 public:
  explicit OrtAbsHistogram(uint32_t bins) : initial_bins_(bins) {}
  // As OrtSignedHistogram::AddBatch.
  bool AddBatch(const float* x, uint64_t n, const SampleRange& range, ThreadPool* pool = nullptr);
  bool AddBatch(const float* x, uint64_t n) { return AddBatch(x, n, ScanSamples(x, n)); }
  // As OrtSignedHistogram::AddIfWithinRange (fits: finite and max |x| <= the last edge).
  bool AddIfWithinRange(const float* x, uint64_t n, ThreadPool* pool, SampleRange* range);

  const std::vector<uint64_t>& counts() const { return counts_; }
  const std::vector<float>& edges() const { return edges_; }
  float min() const { return min_; }
  float max() const { return max_; }
  bool empty() const { return counts_.empty(); }

 private:
  uint32_t initial_bins_;
  std::vector<uint64_t> counts_;
  std::vector<float> edges_;
  float min_ = 0, max_ = 0;
};

// The most bins a grown ORT histogram may reach: 32x the default 2048 (or the initial count when larger). The entropy
// search is quadratic in the bin count, so a histogram grown without bound by one outlier batch would hang it.
constexpr uint32_t OrtMaxBins(uint32_t initial_bins) { return initial_bins > (1u << 16) ? initial_bins : (1u << 16); }

// numpy.linspace(first, last, bins + 1) cast to float32 (computed in fp64, last edge exact).
std::vector<float> LinspaceEdges(float first, float last, uint32_t bins);
// Adds x (|x| when `absolute`) to counts over fp32 non-decreasing `edges` with numpy.histogram's assignment for
// uniform edges: index from the affine map in fp32, then moved until edges[k] <= v < edges[k + 1] (the last bin
// closed). Values outside [edges.front(), edges.back()] and NaN are ignored. This literal loop defines the counts.
void HistogramUniform(const float* x, uint64_t n, const std::vector<float>& edges, std::vector<uint64_t>& counts,
                      bool absolute);
// The same counts as HistogramUniform, fast: vector kernels take the bin from one multiply wherever the value is
// provably more than an error margin away from both of its bin's edges (the margin bounds the fp32 rounding of the
// map and how far these edges are from exact uniform spacing); the rest go through HistogramUniform's rule. Split
// over `pool` in fixed pieces with per-worker tables and an integer merge: the same counts for any thread count.
// With `range`, the samples' ScanSamples comes back too, from the same pass over memory.
void HistogramUniformFast(const float* x, uint64_t n, const std::vector<float>& edges, std::vector<uint64_t>& counts,
                          bool absolute, ThreadPool* pool = nullptr, SampleRange* range = nullptr);

}  // namespace lmkit::quant
