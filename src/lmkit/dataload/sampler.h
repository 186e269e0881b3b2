// Where each training window starts: the CS336 / nanoGPT sampler over one or several token shards.
//
// Contract: a shard with n tokens offers the n − T window starts [0, n − T) (CS336 §5.1: x = tokens[i : i+T],
// y = tokens[i+1 : i+T+1], so the last start still has its y inside the shard). Windows never cross shards. Across
// shards every valid window is equally likely (a global index is drawn uniformly in [0, Σ(n_i − T)) and mapped to its
// shard). Batch k's starts depend only on (seed, k): the same seed gives the same batches whichever thread builds batch
// k and however many threads there are. Create fails with kInvalidInput naming the shard when a shard has n ≤ T tokens.
// Immutable after Create; SampleBatch is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit::dataload {

struct Window {
  uint32_t shard = 0;
  uint64_t start = 0;  // token index of x[0] within the shard
};

class WindowSampler {
 public:
  // `shard_tokens[i]` is the token count of shard i, `names[i]` its path (for errors); `context` is T (≥ 1).
  static Result<WindowSampler> Create(const std::vector<uint64_t>& shard_tokens, const std::vector<std::string>& names,
                                      uint64_t context, uint64_t seed);

  uint64_t window_count() const { return total_; }  // Σ (n_i − T)
  uint64_t context() const { return context_; }
  // Writes `batch_size` windows of batch `batch_index` to `out`.
  void SampleBatch(uint64_t batch_index, size_t batch_size, Window* out) const;
  // The window with global index g in [0, window_count()).
  Window WindowAt(uint64_t g) const;

 private:
  std::vector<uint64_t> first_;  // first_[i] = global index of shard i's first window; size shards + 1
  uint64_t total_ = 0;
  uint64_t context_ = 0;
  uint64_t seed_ = 0;
};

// An unbiased draw in [0, bound) (bound ≥ 1) from a 64-bit generator state; advances the state. Lemire's
// multiply-and-reject method over splitmix64. Exposed for tests.
uint64_t UniformBelow(uint64_t& state, uint64_t bound);

}  // namespace lmkit::dataload
