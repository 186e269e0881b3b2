// The batch pipeline's threads: `workers` producer threads build batches 0, 1, 2, ... into a ring of `depth` slots
// (at most `depth` batches built ahead of the consumer) and the calling thread consumes them in batch order — the
// producer → N workers → in-order consumer shape. What a batch is lives in the two callbacks, so this ring can be
// replaced by a shared ordered-pipeline helper without touching them.
//
// Contract: produce(batch, slot, worker) fills slot `slot` (in [0, depth)) with batch `batch` on worker thread `worker`
// (in [0, workers)); no two calls share a slot at a time. consume(batch, slot, wait_s) runs on the calling thread in
// batch order once that batch's produce returned OK, with wait_s the time it waited for it; it returns false to stop.
// Batches are produced up to `limit` (UINT64_MAX: until consume stops). A produce error stops the pipeline once the
// batches before it were consumed, and is returned; a thread that cannot be started is kIo. Returns after every worker
// joined, with `*produced` (if not null) the number of batches produced, consumed or not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "lmkit/common/status.h"

namespace lmkit::dataload {

using ProduceFn = std::function<Status(uint64_t batch, size_t slot, unsigned worker)>;
using ConsumeFn = std::function<bool(uint64_t batch, size_t slot, double wait_s)>;

Status RunOrderedBatches(unsigned workers, unsigned depth, uint64_t limit, const ProduceFn& produce,
                         const ConsumeFn& consume, uint64_t* produced);

}  // namespace lmkit::dataload
