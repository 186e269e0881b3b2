// The |x| histogram of the "nvidia" calibration flavour (NVIDIA pytorch-quantization / TensorRT): ONE histogram of |x|
// with a fixed bin count over [0, amax], where amax is max|x| over ALL samples. Counts are sums over samples, so the
// result does not depend on batch order or batch size. Bin of v: formats::AbsBin (torch.histc's rule, the last bin
// closed); values > amax are not counted. Memory is fixed by the bin count, never by the number of samples.
// Not thread-safe, not even for concurrent const calls (AbsHistogram's accessors fold pending counts);
// AbsHistogram::Merge combines per-thread partials (integer counts: order-free).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "lmkit/quant/sample_range.h"

namespace lmkit::quant {

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

}  // namespace lmkit::quant
