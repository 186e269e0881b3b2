// One batch of the dataload pipeline, built by one producer thread, each stage timed: sample B window starts →
// (cache cold-each: evict the pages each window can pull in) → (random advice: request the B windows together) →
// gather the windows → convert to x and y (checking ids against the vocabulary when asked) → (with a device: stage into
// pinned memory and copy to the device).
//
// Contract: Build writes only the given Batch and the caller's scratch; the builder is immutable after construction
// and Build is thread-safe given one scratch and one copier per thread. Errors: the reader's (naming the file) and the
// copier's. The sampler, reader and shards must outlive the builder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/cuda/dataload_h2d.h"
#include "lmkit/dataload/convert.h"
#include "lmkit/dataload/knobs.h"
#include "lmkit/dataload/sampler.h"
#include "lmkit/dataload/token_reader.h"

namespace lmkit::dataload {

struct BatchTimes {
  double sample = 0, evict = 0, gather = 0, convert = 0, stage = 0, h2d = 0;
  double Produce() const { return sample + gather + convert + stage + h2d; }  // eviction is set-up, not loading
};

// One slot of the pipeline's ring.
struct Batch {
  std::vector<uint8_t> windows;  // B × (T+1) stored tokens
  std::vector<uint8_t> xy;       // x (B×T) then y (B×T), out dtype
  std::vector<Window> starts;    // where the B windows came from
  BatchTimes times;
  VocabCheck vocab;
};

class BatchBuilder {
 public:
  // `evict_margin_bytes`: bytes around each window that cold-each evicts (what read-ahead could pull in).
  BatchBuilder(const LoaderConfig& config, const WindowSampler& sampler, const TokenReader& reader,
               unsigned token_bytes, uint64_t vocab_size, uint64_t evict_margin_bytes);

  // Bytes of one slot's buffers (windows plus x and y).
  uint64_t SlotBytes() const;
  // Sizes `batch`'s buffers (call once per slot before the run).
  void Allocate(Batch* batch) const;
  // Builds batch number `index` into `batch`; `copier` is null when there is no device stage.
  Status Build(uint64_t index, Batch* batch, ReaderScratch* scratch, cuda::HostToDevice* copier) const;
  // The consumer's "use" of a batch: folds a digest of its content (the first and last token of each row of x and y,
  // and its index) into `running`. The result depends only on the batches folded, in order.
  uint64_t FoldDigest(uint64_t running, uint64_t index, const Batch& batch) const;

 private:
  LoaderConfig c_;
  const WindowSampler& sampler_;
  const TokenReader& reader_;
  unsigned token_bytes_;
  uint64_t vocab_size_;
  uint64_t margin_;
  size_t row_bytes_;
  size_t xy_bytes_;
};

}  // namespace lmkit::dataload
