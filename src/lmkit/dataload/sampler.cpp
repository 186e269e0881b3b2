#include "lmkit/dataload/sampler.h"

#include <algorithm>
#include <string>

namespace lmkit::dataload {
namespace {

__extension__ typedef unsigned __int128 U128;

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// n + 1 in decimal, also for n = 2^64 − 1 (a context length typed as the largest 64-bit number).
std::string PlusOne(uint64_t n) { return n == UINT64_MAX ? "18446744073709551616" : std::to_string(n + 1); }

}  // namespace

uint64_t UniformBelow(uint64_t& state, uint64_t bound) {
  // Lemire (2019): the high word of x·bound is uniform once the low word is outside the biased zone.
  uint64_t x = SplitMix64(state);
  U128 m = static_cast<U128>(x) * bound;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      x = SplitMix64(state);
      m = static_cast<U128>(x) * bound;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

Result<WindowSampler> WindowSampler::Create(const std::vector<uint64_t>& shard_tokens,
                                            const std::vector<std::string>& names, uint64_t context, uint64_t seed) {
  if (context == 0) return Status::InvalidArgument(Field("context_length") + " must be at least 1");
  if (shard_tokens.empty()) return Status::InvalidArgument("no token files given");
  WindowSampler s;
  s.context_ = context;
  s.seed_ = seed;
  s.first_.push_back(0);
  for (size_t i = 0; i < shard_tokens.size(); ++i) {
    if (shard_tokens[i] <= context) {
      return Status::InvalidInput(i < names.size() ? names[i] : "",
                                  "has " + std::to_string(shard_tokens[i]) + " tokens; a window of context length " +
                                      std::to_string(context) + " needs at least " + PlusOne(context));
    }
    s.total_ += shard_tokens[i] - context;
    s.first_.push_back(s.total_);
  }
  return s;
}

Window WindowSampler::WindowAt(uint64_t g) const {
  // first_ is sorted; the shard is the last one whose first window is ≤ g.
  auto it = std::upper_bound(first_.begin(), first_.end(), g);
  size_t shard = static_cast<size_t>(it - first_.begin()) - 1;
  return Window{static_cast<uint32_t>(shard), g - first_[shard]};
}

void WindowSampler::SampleBatch(uint64_t batch_index, size_t batch_size, Window* out) const {
  // One independent stream per batch: mix (seed, batch) so batch k never depends on how many batches came before.
  uint64_t state = seed_ ^ 0x6A09E667F3BCC909ULL;
  uint64_t mix = batch_index;
  state ^= SplitMix64(mix);
  if (first_.size() == 2) {  // one shard: skip the search
    for (size_t i = 0; i < batch_size; ++i) out[i] = Window{0, UniformBelow(state, total_)};
    return;
  }
  for (size_t i = 0; i < batch_size; ++i) out[i] = WindowAt(UniformBelow(state, total_));
}

}  // namespace lmkit::dataload
