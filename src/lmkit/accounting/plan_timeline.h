// `lmkit plan --timeline`: a day of model loads, unloads, switches and request bursts on one GPU, replayed against the
// caching-allocator simulation (cuda_allocator_sim.h) under four policies — PyTorch's default allocator,
// expandable_segments:True, one preallocated weight buffer per architecture, a pinned host pool for the hot set — with
// per event the allocator's state and whether it fails, and per load/switch its latency from disk, page cache or the
// pinned pool. The timeline format and the policies: docs/plan.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lmkit/accounting/cuda_allocator_sim.h"
#include "lmkit/accounting/plan.h"
#include "lmkit/common/json.h"
#include "lmkit/common/name_table.h"

namespace lmkit::accounting {

enum class TimelineOp { kLoad, kUnload, kSwitch, kRequest, kEmptyCache };
std::span<const EnumName<TimelineOp>> TimelineOpNames();  // load, unload, switch, request, empty_cache

struct TimelineEvent {
  double t_s = 0;
  TimelineOp op = TimelineOp::kLoad;
  int model = -1;         // index into PlanResult::models (switch: the model brought up)
  int from = -1;          // switch: the model taken down
  int64_t batch = 0;      // request: sequences in the burst (default: the model's plan batch)
  double duration_s = 0;  // request: how long the burst holds its memory (default: the model's latency)
};

struct Timeline {
  std::string source;                     // the file, or "generated: N events, seed S"
  double capacity_bytes = 0;              // what the allocator may hold: GPU capacity - reserved, or capacity_gib
  uint64_t max_split_size = kNoMaxSplit;  // max_split_size_mb for every policy
  double pinned_pool_bytes = 0;           // host pinned pool; 0 = the hot set (models loaded twice or more)
  std::vector<TimelineEvent> events;      // in time order
};

// {"capacity_gib", "max_split_size_mb", "pinned_pool_gib", "events": [{"t", "op", "model" | "from"+"to", "batch",
// "duration_s"}]}; model names are the plan's. Errors: one line naming the file, the event and the key (unknown
// op or model, times going backwards, bad values).
Result<Timeline> ParseTimeline(const Json& doc, const std::string& subject, const PlanResult& plan);
Result<Timeline> LoadTimeline(const std::string& path, const PlanResult& plan);
// A deterministic day (24 h) of `events` events over the plan's models (same seed, same day on every machine):
// requests to resident models, switches (half of them within an architecture), loads while the intended resident
// weights stay under 85% of the capacity, unloads, and an occasional empty_cache.
Timeline GenerateTimeline(const PlanResult& plan, int64_t events, uint64_t seed);

enum class Policy { kDefault, kExpandable, kArchBuffer, kPinnedPool };

struct EventState {
  uint64_t allocated = 0, reserved = 0;
  uint64_t largest_free = 0;       // CudaAllocatorSim::LargestObtainable
  uint64_t free = 0;               // capacity - allocated
  double fragmentation = 0;        // 1 - largest_free / free
  uint64_t idle_buffer_bytes = 0;  // per-architecture buffers held while no model uses them
  bool failed = false;             // an allocation ran out of memory (the load or burst did not happen)
  bool skipped = false;            // nothing to do: the model was not resident (or already was)
  double latency_s = 0;            // load / switch: bringing the weights up
  std::string source;              // "disk", "page cache", "pinned pool" (load / switch)
  uint64_t request_bytes = 0;      // bytes the event asked the allocator for
};

// One allocator call, for replaying a policy through the real allocator (scripts/gpu-check.sh).
struct AllocOp {
  int event = 0;
  char op = 'a';  // 'a' malloc, 'f' free, 'e' empty_cache
  uint64_t id = 0, bytes = 0;
  bool ok = true;
};

struct PolicyRun {
  Policy policy = Policy::kDefault;
  std::string name, description;
  std::vector<EventState> events;
  int failures = 0;
  uint64_t peak_reserved = 0, peak_allocated = 0, peak_idle_buffers = 0;
  double load_s = 0;             // all loads and switches
  double pinned_host_bytes = 0;  // host memory the policy pins
  uint64_t num_device_alloc = 0, num_alloc_retries = 0;
  std::vector<AllocOp> trace;  // with `trace`
};

struct TimelineFailure {
  size_t event = 0;
  std::vector<std::string> avoided_by;  // policies under which the event succeeds
};

struct TimelineResult {
  Timeline timeline;
  std::vector<PolicyRun> runs;  // default, expandable_segments, arch_buffer, pinned_pool
  std::vector<TimelineFailure> default_failures;
  std::vector<std::string> hot_set;  // the pinned pool's models
};

// Replays `tl` under every policy. Each model's weights are allocated tensor by tensor (the file's tensors, or the
// decoder's matrices from its parameter counts), a burst's KV cache per layer and its activations as two tensors;
// a KV budget set by kv_tokens or gpu_memory_utilization is allocated with the weights (as vLLM does).
TimelineResult SimulateTimeline(const PlanResult& plan, const Timeline& tl, bool trace = false);

// The tensors a model's load allocates, bytes each (sum = its weights per GPU, plus a preallocated KV budget).
std::vector<uint64_t> LoadTensors(const ModelEstimate& m);
// The tensors a burst of `batch` sequences allocates.
std::vector<uint64_t> BurstTensors(const ModelEstimate& m, int64_t batch);

// RunPlan + the timeline (file or generated) when the request asks for one, every allocator call kept when it names
// a trace_path. Errors: RunPlan's, timeline_path beside generate_events, LoadTimeline's.
Result<PlanResult> RunPlanWithTimeline(const PlanRequest& req);

}  // namespace lmkit::accounting
