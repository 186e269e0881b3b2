// `lmkit dataload trace`: is a PyTorch training loop waiting for its input, and which DataLoader knob fixes it — read
// from a torch.profiler trace of the user's own loop (trace_reader.h), the question PyTorch's deprecated TensorBoard
// plugin and TensorFlow's input-pipeline analyzer answer.
//
// Per ProfilerStep#N (the profiler's record of one training step, on the thread that called prof.step()) and overall:
//   data wait    time in enumerate(DataLoader)#...__next__ on that thread: the step blocked on its DataLoader
//   h2d host     host time of the step's own host-to-device copy calls (a copy from pageable memory blocks the host)
//   h2d gpu      GPU time of host-to-device copies during the step; gpu kernels: GPU busy time during the step
//   rest         the step minus data wait and h2d host time: the training work the input has to keep up with
// The input share is (data wait + h2d host) ÷ step time, classified with dataload's thresholds (verdict.h: < 5% NOT,
// 5–20% MODERATELY, ≥ 20% HIGHLY input-bound). A trace without GPU events (a CPU-only run, Debian's torch without
// CUDA) has no h2d or kernel figures; the verdict stands on the data wait alone.
//
// The knob, in the DataLoader's terms, with its evidence (the first rule that fits):
//   NOT input-bound                                  none
//   h2d host time above the data wait                pin_memory=True when copies come from pageable memory, else
//                                                    fewer bytes per batch
//   single-process loader (num_workers=0):
//     collate (aten::stack/cat) ≥ half the data wait batch collate cost (collate_fn)
//     otherwise                                      num_workers: __getitem__ runs in the training process; K workers
//                                                    with K = ⌈data wait ÷ rest⌉ keep up if the samples are independent
//   multi-process loader, most steps wait (≥ half)   too few workers: num_workers ≥ (rest + wait) ÷ rest × today's —
//                                                    or faster storage if the workers wait on reads
//   multi-process loader, a few steps wait           prefetch_factor (bursts outlast the prefetched batches), or
//                                                    persistent_workers=True when the burst is an epoch's start
//
// Contract: AnalyzeTrace is a pure function; errors are kInvalidInput naming `path` (no ProfilerStep events).
// RunTrace reads then analyzes. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/dataload/trace_reader.h"
#include "lmkit/dataload/verdict.h"

namespace lmkit::dataload {

struct TraceStep {
  int64_t number = 0;   // N of ProfilerStep#N
  double start_us = 0;  // on the trace's clock
  double time_us = 0;
  double data_wait_us = 0;
  double collate_us = 0;  // of the data wait: collate ops inside a single-process __next__
  double pin_us = 0;      // of the data wait: pin_memory ops inside a single-process __next__
  double h2d_host_us = 0;
  double h2d_gpu_us = 0;
  double kernel_us = 0;
  double rest_us = 0;
  double input_share = 0;  // (data wait + h2d host) ÷ time
};

enum class LoaderKind { kNone, kSingleProcess, kMultiProcess, kMixed };

enum class TraceFix {
  kNone,             // not input-bound
  kPinMemory,        // pin_memory=True (pageable host-to-device copies)
  kFewerCopyBytes,   // copies are pinned already: fewer bytes per batch (narrow dtypes, widen on the GPU)
  kCollate,          // batch collate cost
  kWorkersFromZero,  // num_workers=0: use worker processes
  kMoreWorkers,      // too few workers
  kPrefetchFactor,   // bursts: deeper prefetch (or persistent_workers at epoch starts)
};

struct TraceResult {
  std::string path;
  bool kineto = false;
  uint64_t events_read = 0;
  std::vector<std::string> gpus;
  std::string dataloader_name;  // the iterator's record_function name, "" when the trace has none
  LoaderKind loader = LoaderKind::kNone;
  bool has_gpu_events = false;  // any kernel or host-to-device copy
  uint64_t h2d_copies = 0, h2d_pageable_copies = 0, h2d_bytes = 0;
  std::vector<TraceStep> steps;  // in time order
  TraceStep total;               // sums over the steps (number: step count)
  // The verdict.
  double input_share = 0;  // (Σ data wait + Σ h2d host) ÷ Σ time
  double data_share = 0, h2d_share = 0;
  double steps_waiting_share = 0;  // steps whose input share is ≥ 5%
  InputBound level = InputBound::kUnknown;
  TraceFix fix = TraceFix::kNone;
  double collate_share = 0;     // of the data wait (single-process loaders)
  unsigned workers_needed = 0;  // kWorkersFromZero
  double workers_factor = 0;    // kMoreWorkers: times today's num_workers
  int64_t burst_step = -1;      // kPrefetchFactor: the step that waited most
  double burst_wait_us = 0;
  std::vector<std::string> notes;
};

Result<TraceResult> AnalyzeTrace(const TraceEvents& events, const std::string& path);
Result<TraceResult> RunTrace(const std::string& path);

// The DataLoader argument a fix turns: "num_workers", "pin_memory", "prefetch_factor", "collate_fn", or "" (none).
const char* TraceFixKnob(TraceFix fix);

}  // namespace lmkit::dataload
