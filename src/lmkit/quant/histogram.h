// Streaming activation histograms for calibration. Memory is fixed by the bin count, never by the number of samples.
//
// Two families, because the two reference calibrators disagree on how a histogram is built (docs/quant.md):
// - AbsHistogram ("nvidia" flavour, NVIDIA pytorch-quantization / TensorRT): ONE histogram of |x| with a fixed bin
// count
//   over [0, amax], where amax is max|x| over ALL samples (found in a first pass). Counts are sums over samples, so the
//   result does not depend on batch order or batch size. Bin of v: (int)((v / amax) * bins) in fp32, the last bin
//   closed (torch.histc's rule); values > amax are not counted.
// - OrtSignedHistogram / OrtAbsHistogram ("ort" flavour, ONNX Runtime calibrate.py): built batch by batch; when a
//   batch exceeds the current range the histogram grows keeping its bin width, so the result depends on batch order
//   (that is ORT's behaviour and what parity needs). Bin edges are fp32 and a value falls in [e_i, e_i+1), last bin
//   closed, exactly as numpy.histogram assigns them.
// All classes: not thread-safe, not even for concurrent const calls (AbsHistogram's accessors fold pending counts);
// AbsHistogram::Merge combines per-thread partials (integer counts: order-free).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "lmkit/quant/int8_format.h"  // LMKIT_HD

namespace lmkit {
class ThreadPool;
}

namespace lmkit::quant {

// min, max, min|x|, max|x| and finiteness of samples. NaN is skipped by the four extremes (+-inf is not); both clear
// `finite`. With no samples the extremes stay at their identities. Merge is order-free.
struct SampleRange {
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
  float abs_min = std::numeric_limits<float>::infinity();
  float abs_max = 0;
  bool finite = true;
  void Merge(const SampleRange& other);
};
// Folds x[0, n) into *r (vector kernels: AVX-512, AVX2 or portable, chosen at run time; all give the same result).
void ScanRange(const float* x, uint64_t n, SampleRange* r);
// The range of x[0, n), split over `pool` in fixed pieces when given (the same result for any thread count).
SampleRange ScanSamples(const float* x, uint64_t n, ThreadPool* pool = nullptr);

class AbsHistogram {
 public:
  AbsHistogram(uint32_t bins, float amax);
  // With `range`, also folds ScanRange of x into *range, from the same pass over memory where the kernel allows.
  void Add(const float* x, uint64_t n, SampleRange* range = nullptr);
  void Merge(const AbsHistogram& other);  // same bins and amax

  // The accessors first fold the pending 32-bit tables of Add into the 64-bit counts (hence `mutable` below).
  const std::vector<uint64_t>& counts() const;
  std::vector<uint64_t>& mutable_counts();
  float amax() const { return amax_; }
  uint32_t bins() const { return static_cast<uint32_t>(counts_.size()); }
  // Left edge of bin i (i == bins gives amax): float(amax * i / bins), as torch.linspace(0, amax, bins + 1).
  double Edge(uint32_t i) const;
  uint64_t total() const;

 private:
  void Flush() const;

  // Add counts into kTables interleaved 32-bit tables of at least bins + 1 slots (slot `bins` takes the values it
  // drops) so that consecutive equal bins, the common case for peaked activations, do not serialise on one counter in
  // memory; 4 x 2304 x 4 bytes for 2048 bins stays in L1. `pending_` values since the last Flush bound every slot,
  // so a Flush before it could pass 2^32 keeps the tables exact.
  mutable std::vector<uint64_t> counts_;
  mutable std::vector<uint32_t> tables_;
  mutable uint64_t pending_ = 0;
  float amax_;
};

// AbsHistogram in one pass over the data where it can be, the same counts as two. The histogram needs max|x| of ALL
// samples before the first count; this class counts each piece in pass 0 already, under the running max|x| of the
// pieces scanned before it, and keeps those counts only if that running max turns out to be the final one. Pass 1
// then counts just the pieces that were counted under a smaller running max (those before the global max, in the
// order pieces were taken), and a caller may skip reading the rest (Covered). The result is exact and does not depend
// on the thread count or timing; only the share pass 1 has to recount does: about the position of the global max in
// the stream (all of it when the max is in the last piece, none when in the first).
// Use: AddFirst for every piece of the stream (offsets are positions in the tensor's sample stream; pieces of one
// call to the owner may run concurrently on distinct workers), Compact between such parallel calls, BeginSecond once,
// AddSecond for every piece of the same stream (any split), Finish. Memory stays bounded: the record of which pieces
// were counted under which maximum is folded by Compact, and past kMaxRuns records pass 0 stops counting and pass 1
// counts everything (two passes, as without this class).
class SpeculativeAbsHistogram {
 public:
  SpeculativeAbsHistogram(uint32_t bins, unsigned workers);
  ~SpeculativeAbsHistogram();
  SpeculativeAbsHistogram(SpeculativeAbsHistogram&&) noexcept;
  SpeculativeAbsHistogram& operator=(SpeculativeAbsHistogram&&) noexcept;

  // Pass 0: x holds samples [offset, offset + n) of the stream. Folds ScanRange of x into *range (the caller merges
  // the workers' ranges). Concurrent calls need distinct `worker` < workers and disjoint pieces.
  void AddFirst(uint64_t offset, const float* x, uint64_t n, unsigned worker, SampleRange* range);
  // Between parallel batches of AddFirst (not concurrently with them): folds the workers' records.
  void Compact();
  // After pass 0, with amax = max|x| of every sample (ScanRange's abs_max over all pieces; finite).
  void BeginSecond(float amax);
  // True when pass 1 has nothing to count in [offset, offset + n).
  bool Covered(uint64_t offset, uint64_t n) const;
  // The stretches [begin, end) of [offset, offset + n) that pass 1 has to count, in order.
  std::vector<std::pair<uint64_t, uint64_t>> Recount(uint64_t offset, uint64_t n) const;
  // Pass 1: counts the part of [offset, offset + n) that pass 0 could not. Concurrent as AddFirst.
  void AddSecond(uint64_t offset, const float* x, uint64_t n, unsigned worker);
  // The histogram of |x| over [0, amax]: exactly AbsHistogram(bins, amax) fed every sample.
  AbsHistogram Finish();
  // Samples pass 1 counted (for tests and benchmarks: the share speculation did not cover).
  uint64_t recounted() const;

  static constexpr size_t kMaxRuns = 4096;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Tests only: 0 forces the portable loop of AbsHistogram::Add, HistogramUniformFast and ScanRange, 1 the AVX2 one, 2
// the AVX-512 one (ignored where the CPU lacks it), -1 restores the run-time choice. All give the same results.
void SetAbsHistogramKernelForTesting(int level);

// The bin of one value 0 <= v_abs <= amax, amax > 0 (shared definition for the CPU loop and the CUDA kernel).
LMKIT_HD uint32_t AbsBin(float v_abs, float amax, uint32_t bins) {
  float f = (v_abs / amax) * static_cast<float>(bins);
  uint32_t b = static_cast<uint32_t>(f);
  return b >= bins ? bins - 1 : b;
}

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
