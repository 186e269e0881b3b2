// An ordered pipeline: the calling thread produces items and consumes them in production order while worker threads
// transform them in between (read → encode → write, sample → gather → hand over).
//
// Contract: RunOrderedPipeline keeps up to `ring` items in flight in slots 0..ring-1 (the caller owns the slots' data;
// item n lives in slot n % ring). produce(slot) fills a slot with the next item or returns false at the end of the
// input; work(slot, worker) transforms it on a worker (worker < workers); consume(slot) takes it, in production order,
// and returns false to stop early. produce and consume run on the calling thread only, and prepare_worker(w) runs there
// before worker w starts (per-worker state made on the calling thread). A slot is touched by one stage at a time.
// Workers start as items arrive, so a short input starts no more threads than it has items. A refused thread
// (thread_start.h) leaves the run to the workers already started, or to the calling thread when there is none; with
// `all_workers` it is an error (kIo) instead. The first error in item order (of produce, work or consume) ends the run
// and is returned; items produced after it are dropped. An exception from a stage is rethrown in the caller after the
// workers have stopped. workers == 0 runs every stage on the calling thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "lmkit/common/status.h"

namespace lmkit {

struct PipelineOptions {
  unsigned workers = 1;      // worker threads (clamped to kMaxThreads); 0: the calling thread does the work
  size_t ring = 0;           // items in flight; 0 means 2 * workers (1 when workers == 0)
  bool all_workers = false;  // a worker the system refuses to start is an error, not a smaller run
};

struct PipelineStages {
  std::function<Result<bool>(size_t slot)> produce;
  std::function<Status(size_t slot, unsigned worker)> work;
  std::function<Result<bool>(size_t slot)> consume;
  std::function<void(unsigned worker)> prepare_worker;  // optional
};

struct PipelineRun {
  uint64_t consumed = 0;  // items consumed
  unsigned workers = 0;   // worker threads that ran
  size_t ring = 0;        // the slot count used
};

// The slot count RunOrderedPipeline uses for `options` (size the slots' storage with it).
size_t PipelineRing(const PipelineOptions& options);

Result<PipelineRun> RunOrderedPipeline(const PipelineOptions& options, const PipelineStages& stages);

}  // namespace lmkit
