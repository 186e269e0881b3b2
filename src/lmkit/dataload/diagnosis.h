// Why a dataload run waits and which knob to turn, as values: the judge (judge.h) decides them from the run's one
// model, the presentation layer (lmkit/present/dataload.h) words them.
//
// Contract: plain data, no behaviour.
#pragma once

#include "lmkit/dataload/verdict.h"

namespace lmkit::dataload {

// The part of a batch's cost that dominates it.
enum class BatchPart { kSample, kGather, kConvert, kStage, kH2d, kHandoff };

enum class Why {
  kNone,            // no demand, no verdict
  kKeepsUp,         // NOT input-bound
  kSlowerThanStep,  // capacity below the demand: every step waits on average
  kSlowBatches,     // enough capacity on average, but slow batches outlast the step
};

enum class Fix {
  kNone,                   // nothing to change
  kColdPreadRandom,        // fine on a warm cache; a cold one needs pread + random advice
  kColdThreads,            // fine on a warm cache; a cold one needs more threads or faster storage
  kDeeperPrefetch,         // deeper prefetch (next_prefetch), with more threads when they are fewer than the prefetch
  kPreadRandomReadAround,  // gather reads read_ahead_kb around each window (mmap read-around)
  kPreadRandomFaults,      // gather: mmap page faults fetch one window at a time
  kThreadsOrStorage,       // gather waits on storage: more reads in flight, or the data in RAM
  kThreads,                // more producer threads (or, with no CPU left, less work per batch)
  kNarrowOutConvert,       // convert dominates: keep ids uint16, widen on the GPU
  kNarrowOutStage,         // staging dominates: 4x fewer bytes with uint16
  kPinned,                 // host→device from pageable memory
  kNarrowOutH2d,           // host→device dominates: 4x fewer bytes with uint16
};

struct Diagnosis {
  Why why = Why::kNone;
  Fix fix = Fix::kNone;
  BatchPart top = BatchPart::kGather;
  double top_share = 0;  // of batch_s
  double batch_s = 0;    // mean produce time plus the hand-off: one batch's cost to the loader
  unsigned threads = 1;
  unsigned cpus = 1;           // CPUs this process may use: more threads than this do not help
  unsigned next_prefetch = 2;  // for kDeeperPrefetch
};

}  // namespace lmkit::dataload
