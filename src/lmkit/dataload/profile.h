// `lmkit dataload`'s one entry point: run the nanoGPT / CS336 batch pipeline over token files with the chosen knobs,
// time every stage, count what the storage really read, and say whether the pipeline keeps a training step fed.
//
// The pipeline per batch (batch_builder.h): sample B window starts → gather B windows of T+1 tokens (mmap / pread /
// O_DIRECT) → convert to x, y (widened to the out dtype) → stage into pinned memory → host→device copy on its own
// stream (the last two only in a CUDA build with a device). N producer threads fill up to K batch buffers ahead of a
// consumer that takes batches in order (pipeline.h). The measured run is free-running (the consumer never computes),
// which gives the loader's capacity; the verdict (judge.h) replays the measured per-batch times through one calibrated
// model at the demand's step time.
//
// Contract: RunDataload reads only the given files; `cache` modes evict (posix_fadvise DONTNEED) or read those files
// only. Errors: those of OpenTokenShards / WindowSampler / TokenReader (naming the file), kInvalidArgument for
// inconsistent options (naming request fields with Field()), kIo for a failed CUDA call. The same seed gives the same
// batches for any number of threads (RunResult::checksum, meaningful with a fixed step count). Not reentrant (it runs
// its own threads); call from one thread at a time. Text and JSON of the report: lmkit/present/dataload.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/dataload/cold_projection.h"
#include "lmkit/dataload/demand.h"
#include "lmkit/dataload/diagnosis.h"
#include "lmkit/dataload/knobs.h"
#include "lmkit/dataload/os_facts.h"
#include "lmkit/dataload/token_shards.h"
#include "lmkit/dataload/verdict.h"
#include "lmkit/io/token_dtype.h"

namespace lmkit::dataload {

struct DataloadRequest {
  std::vector<std::string> paths;
  io::TokenDtype dtype = io::TokenDtype::kAuto;
  LoaderConfig config;
  uint64_t steps = 0;  // measured batches after warm-up; 0 = run for duration_s
  double duration_s = 10;
  uint64_t warmup = 10;  // batches before the steady state
  bool cuda = false;     // staging and host→device copy on device cuda_device
  int cuda_device = 0;
  DemandSpec demand;
  std::vector<SweepAxis> sweep;
  uint64_t vocab_size = 0;  // 0 = no id check
  uint64_t seed = 0;
};

struct StageStats {
  uint64_t count = 0;
  double mean_s = 0, p50_s = 0, p90_s = 0, p99_s = 0, max_s = 0;
};
StageStats Summarize(std::vector<double> samples);  // nearest-rank percentiles

// What the vocabulary check saw: the ids of the sampled windows, never the whole file.
struct VocabResult {
  uint64_t windows_checked = 0;  // windows of the consumed batches, a window drawn twice counted twice
  uint64_t ids_checked = 0;      // windows_checked × (T+1)
  uint64_t max_id = 0;
  uint64_t out_of_range = 0;         // distinct token positions (file, index) holding an id ≥ vocab_size
  bool out_of_range_capped = false;  // more than kMaxOutOfRangePositions: out_of_range is a lower bound
  uint64_t first_bad_id = 0;
  std::string first_bad_where;  // "path token N" of the first out-of-range position met
};
inline constexpr uint64_t kMaxOutOfRangePositions = 1u << 20;

struct RunResult {
  LoaderConfig config;
  Demand demand;
  // Throughput.
  uint64_t batches = 0;  // consumed, warm-up included
  uint64_t steady_batches = 0;
  double first_batch_s = 0;  // from the start of the pipeline to the first batch in the consumer's hands
  double warmup_s = 0;       // start → end of warm-up (first batch included)
  double steady_s = 0;
  double tokens_per_s = 0;  // B×T per batch, steady state
  double batches_per_s = 0;
  // Per-batch stage times, steady state.
  StageStats sample, gather, convert, stage, h2d, produce, evict, wait;
  bool h2d_ran = false;
  std::string h2d_skipped;  // why the stage and h2d stages did not run (may name fields, see Field())
  // Storage.
  uint64_t produced_batches = 0;  // everything the producers built, also past the end of the measurement
  uint64_t useful_bytes = 0;      // produced_batches × B × (T+1) × token size
  uint64_t read_bytes = 0;        // /proc/self/io read_bytes during the run
  double read_amplification = 0;  // read_bytes ÷ useful_bytes
  uint64_t minor_faults = 0, major_faults = 0;
  std::vector<uint64_t> resident_before, resident_after;  // bytes, per shard
  bool eviction_effective = true;                         // false when a cold mode could not evict (tmpfs ...)
  VocabResult vocab;
  uint64_t checksum = 0;
  // The model every verdict below comes from (judge.h): the per-batch cost outside the timed stages that makes the
  // simulated pipeline as fast as the measured one.
  double handoff_s = 0;
  // Verdict (when a demand is given).
  ConsumerSimulation sim;
  InputBound level = InputBound::kUnknown;
  double capacity_ratio = 0;  // tokens_per_s ÷ demand tokens/s
  Diagnosis diagnosis;
  ColdProjection cold;
  InputBound cold_level = InputBound::kUnknown;
  double cold_wait_share = 0;
};

struct DataloadResult {
  std::vector<TokenShard> shards;
  std::vector<FileSystemFacts> fs;  // per shard
  StorageProbe probe;
  std::string device;  // "cpu" or "cuda:N"
  bool sweep = false;
  std::vector<std::string> sweep_axes;  // knob names swept, in order
  std::vector<RunResult> runs;
  int recommended = -1;            // index into runs (sweeps)
  std::vector<std::string> notes;  // said once by the front end (e.g. the skipped host→device stage); may name fields
};

Result<DataloadResult> RunDataload(const DataloadRequest& options, ProgressSink* progress);

// The gate of a front end's fail-on option: the verdict that decides (the recommended run of a sweep, else the only
// run).
InputBound GateLevel(const DataloadResult& report);

}  // namespace lmkit::dataload
