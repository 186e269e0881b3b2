// `lmkit dataload`'s one entry point: run the nanoGPT / CS336 batch pipeline over token files with the chosen knobs,
// time every stage, count what the storage really read, and say whether the pipeline keeps a training step fed.
//
// The pipeline per batch: sample B window starts → gather B windows of T+1 tokens (mmap / pread / O_DIRECT) →
// convert to x, y (widened to --out-dtype) → stage into pinned memory → host→device copy on its own stream (the last
// two only in a CUDA build with a device). N producer threads fill up to K batch buffers ahead of a consumer that takes
// batches in order. The measured run is free-running (the consumer never computes), which gives the loader's capacity;
// the verdict replays the measured per-batch times through SimulateConsumer at the demand's step time.
//
// Contract: RunDataload reads only the given files; `cache` modes evict (posix_fadvise DONTNEED) or read those files
// only. Errors: those of OpenTokenShards / TokenReader (naming the file), kInvalidArgument for inconsistent options, kIo for a
// failed CUDA call. The same seed gives the same batches for any number of threads (RunResult::checksum, meaningful
// with a fixed step count). Not reentrant (it runs its own threads); call from one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/json.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/dataload/cold_projection.h"
#include "lmkit/dataload/convert.h"
#include "lmkit/dataload/demand.h"
#include "lmkit/dataload/os_facts.h"
#include "lmkit/dataload/token_reader.h"
#include "lmkit/dataload/token_shards.h"
#include "lmkit/dataload/verdict.h"

namespace lmkit::dataload {

enum class CacheMode { kAsIs, kWarm, kCold, kColdEach };
const char* CacheModeName(CacheMode c);

// One point of the knob space.
struct LoaderConfig {
  uint64_t batch_size = 12;  // nanoGPT's GPT-2 defaults
  uint64_t context = 1024;
  Access access = Access::kMmap;
  Advice advice = Advice::kNormal;
  CacheMode cache = CacheMode::kAsIs;
  unsigned threads = 1;
  unsigned prefetch = 2;  // batches produced ahead of the consumer (in flight or ready)
  OutDtype out = OutDtype::kInt64;
  bool pinned = true;
};

struct SweepAxis {
  std::string name;  // threads, prefetch, access, advice, cache, batch-size, context-length, out-dtype, memory
  std::vector<std::string> values;  // as typed
};

// Parses "name=v1,v2,..." (name also accepts the short flags b, t). Errors: kInvalidArgument naming the axis or value.
Result<SweepAxis> ParseSweepAxis(const std::string& text);
// "threads=2" etc.: the value of one knob in a config, as a sweep axis writes it.
std::string ConfigValue(const LoaderConfig& config, const std::string& knob);
// Applies one axis value to a config. Errors: kInvalidArgument.
Status ApplyAxisValue(const std::string& name, const std::string& value, LoaderConfig* config);

struct DataloadOptions {
  std::vector<std::string> paths;
  TokenDtype dtype = TokenDtype::kAuto;
  LoaderConfig config;
  uint64_t steps = 0;  // measured batches after warm-up; 0 = run for duration_s
  double duration_s = 10;
  uint64_t warmup = 10;  // batches before the steady state
  bool cuda = false;     // --device cuda[:N]
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
  std::string h2d_skipped;  // why the stage and h2d stages did not run
  // Storage.
  uint64_t produced_batches = 0;  // everything the producers built, also past the end of the measurement
  uint64_t useful_bytes = 0;      // produced_batches × B × (T+1) × token size
  uint64_t read_bytes = 0;        // /proc/self/io read_bytes during the run
  double read_amplification = 0;  // read_bytes ÷ useful_bytes
  uint64_t minor_faults = 0, major_faults = 0;
  std::vector<uint64_t> resident_before, resident_after;  // bytes, per shard
  bool eviction_effective = true;                         // false when a cold mode could not evict (tmpfs ...)
  VocabCheck vocab;
  std::string vocab_first_bad_where;  // "path token N" of the first id ≥ --vocab-size
  uint64_t checksum = 0;
  // Verdict (when a demand is given).
  ConsumerSimulation sim;
  InputBound level = InputBound::kUnknown;
  double capacity_ratio = 0;  // tokens_per_s ÷ demand tokens/s
  std::string reason;
  std::string knob;
  ColdProjection cold;
  InputBound cold_level = InputBound::kUnknown;
  double cold_wait_share = 0;
};

struct DataloadReport {
  std::vector<TokenShard> shards;
  std::vector<FileSystemFacts> fs;  // per shard
  StorageProbe probe;
  std::string device;  // "cpu" or "cuda:N"
  bool sweep = false;
  std::vector<std::string> sweep_axes;  // knob names swept, in order
  std::vector<RunResult> runs;
  int recommended = -1;  // index into runs (sweeps)
  std::string recommendation;
  std::vector<std::string> notes;  // said once on stderr by the command (e.g. the skipped host→device stage)
};

Result<DataloadReport> RunDataload(const DataloadOptions& options, ProgressSink* progress);

// The report as text (stdout of `lmkit dataload`) and as the versioned JSON document (schema "lmkit.dataload/1").
std::string ReportToText(const DataloadReport& report);
Json ReportToJson(const DataloadReport& report);
inline constexpr const char* kDataloadSchema = "lmkit.dataload/1";

// The gate of --fail-on: the verdict that decides (the recommended run of a sweep, else the only run).
InputBound GateLevel(const DataloadReport& report);

}  // namespace lmkit::dataload
