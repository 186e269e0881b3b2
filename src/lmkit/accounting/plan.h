// `lmkit plan`: many models on a few identical GPUs of a node — what each needs (memory by component, latency and its
// bound, the largest batch that fits, load and switch time), where each goes (the placement that holds the most
// models, tensor-parallel models across GPUs), what does not fit and why, and (what-if) the cheapest change that makes
// it fit. The plan document's schema and every default's source: docs/plan.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/memory.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/plan_packing.h"
#include "lmkit/accounting/roofline.h"
#include "lmkit/accounting/tensor_parallel.h"
#include "lmkit/common/json.h"
#include "lmkit/common/name_table.h"

namespace lmkit::accounting {

// Documented defaults (docs/plan.md gives the sources).
constexpr double kDefaultDiskBytesPerS = 2e9;           // local NVMe, sequential read, conservative
constexpr double kDefaultPciePinnedBytesPerS = 25e9;    // PCIe 4.0 x16, ~80% of 31.5 GB/s, pinned host memory
constexpr double kDefaultPciePageableBytesPerS = 10e9;  // pageable: the driver copies through a staging buffer
constexpr double kDefaultReservedGib = 1.0;             // per GPU: CUDA context + library workspaces (= `lmkit memory`)
constexpr double kDefaultFragmentation = 0.05;          // share of GPU capacity kept free for allocator fragmentation

struct HostFacts {
  double disk_bytes_per_s = kDefaultDiskBytesPerS;
  double pcie_pinned_bytes_per_s = kDefaultPciePinnedBytesPerS;
  double pcie_pageable_bytes_per_s = kDefaultPciePageableBytesPerS;
  bool pinned = true;  // weights are staged in pinned host memory
  bool disk_from_plan = false, pinned_rate_from_plan = false, pageable_rate_from_plan = false;  // else the defaults
  double allreduce_latency_s = kAllReduceLatencyS;  // per tensor-parallel all-reduce
  double pcie_bytes_per_s() const { return pinned ? pcie_pinned_bytes_per_s : pcie_pageable_bytes_per_s; }
};

// One entry of "models" (an entry with "count": N becomes N entries named name#1..name#N).
struct PlanModel {
  std::string name;         // unique label
  size_t index = 0;         // position of its entry in "models" (for messages)
  std::string model;        // preset / config path as written ("" when given by "dims")
  std::string config_file;  // the file read for it: the config path (a directory's config.json); "" for a preset
  ModelSpec spec;
  Dtype dtype = Dtype::kBf16;
  std::optional<Dtype> kv_dtype;  // nullopt = AutoKvDtype(dtype)
  QuantScope quant_scope = QuantScope::kLinear;
  int64_t batch = 1;          // sequences served together
  int64_t seq_len = 1024;     // context per sequence held in the KV cache (prompt + generated)
  int64_t output_tokens = 0;  // generated tokens per request; 0 = one forward pass over seq_len
  double requests_per_s = 0;
  int64_t tp = 1;                     // tensor-parallel degree: GPUs the model spans
  int64_t kv_tokens = 0;              // KV budget in tokens (a pool shared by the batch); 0 = batch x seq_len
  double gpu_memory_utilization = 0;  // vLLM's: the share of each GPU it takes, the KV cache getting the rest; 0 = off

  // A model given by its weights (safetensors file or folder, .onnx initializers, GGUF) rather than a config: memory is
  // its tensors' bytes plus activation_bytes per request; latency is latency_ms, else flops_per_request x batch on
  // the GPU's peak (at least the weights' read at its bandwidth).
  bool weights_only = false;
  std::string weights_format;          // "safetensors", "onnx", "gguf"
  uint64_t weight_bytes = 0;           // as served: the file's bytes, or parameters x dtype when "dtype" is given
  uint64_t weight_params = 0;          // elements of all tensors
  std::vector<uint64_t> tensor_bytes;  // each tensor as served, file order (the timeline allocates them one by one)
  std::string weights_signature;       // tensor shapes and dtypes: equal = same architecture
  double flops_per_request = 0;        // one request (one sample of the batch)
  uint64_t activation_bytes = 0;       // working set of one request
  double latency_ms = 0;               // measured latency of one batch; 0 = from flops_per_request
};

struct Plan {
  std::string path;  // the file (error subject)
  std::string gpu;   // GPU table name or alias; "" = not given
  int64_t gpus = 0;  // 0 = not given
  double reserved_bytes = kDefaultReservedGib * 1073741824.0;
  double runtime_bytes_per_model = 0;  // extra per model (its own process / workspace)
  double fragmentation = kDefaultFragmentation;
  HostFacts host;
  std::vector<PlanModel> models;
};

// Every error is one line whose subject is the plan file and whose message names the entry ("models[2] 'chat'") and
// the key: malformed JSON (with the byte offset), unknown keys, wrong types, out-of-range values, output_tokens >=
// seq_len, kv_tokens beside gpu_memory_utilization, an unknown model (kNotFound from ResolveModel, with the nearest
// preset names). `base_dir` resolves relative config paths in "model" (a path that exists there wins over a preset).
Result<Plan> ParsePlan(const Json& doc, const std::string& subject, const std::string& base_dir);
Result<Plan> LoadPlan(const std::string& path);

// The kinds of single change `--what-if` tries, cheapest first.
enum class WhatIfChange {
  kBatch,                 // fewer sequences at once: `from` -> `to`
  kGpuMemoryUtilization,  // a smaller share of each GPU: `from` -> `to` (vLLM's gpu_memory_utilization)
  kKvDtypeFp8,            // the KV cache in fp8
  kDtype,                 // 8-bit weights: `dtype`
  kTp,                    // a higher tensor-parallel degree: `from` -> `to`
  kGpus,                  // more GPUs of the plan's kind: `from` -> `to`
  kGpu,                   // a larger GPU from the table: `gpu`, on which `placed` of `models` models go
};

// A single change to one model that would let it be placed, the others staying where they are (present/ writes it:
// "batch 64 -> 25", "dtype fp8", "tp 1 -> 2", "gpu H200-SXM-141GB" and the detail after it).
struct WhatIf {
  WhatIfChange change = WhatIfChange::kBatch;
  double from = 0, to = 0;                   // kBatch, kGpuMemoryUtilization, kTp, kGpus
  Dtype dtype = Dtype::kFp8;                 // kDtype
  std::string gpu;                           // kGpu: the table's name
  uint64_t footprint = 0;                    // all but kGpu: its footprint per GPU after the change
  int64_t tp = 1;                            // all but kGpu: on this many GPUs
  int64_t placed = 0, models = 0, gpus = 0;  // kGpu: models placed, of the plan's models, on this many GPUs
};

// What bounds a phase of a model's latency.
enum class LatencyBound { kCompute, kMemory, kCommunication, kMeasured };
std::span<const EnumName<LatencyBound>> LatencyBoundNames();  // compute, memory, communication, measured

// Why a model was left out of the placement; present/ writes the sentence from these and the estimate's numbers.
enum class Unplaced {
  kNone,                // placed
  kTooFewGpus,          // its tp is more than the plan's GPUs
  kWeightsExceedGpu,    // weights and runtime alone exceed one GPU's usable memory
  kBudgetShort,         // gpu_memory_utilization's share is less than its weights, activations and runtime
  kShareExceedsUsable,  // gpu_memory_utilization x capacity is more than one GPU's usable memory
  kBatchExceedsUsable,  // the footprint of batch x seq_len is more than one GPU's usable memory
  kNoRoomBesideOthers,  // fits empty GPUs, but not beside the models placed (PlanResult::most_free_bytes)
};

struct ModelEstimate {
  PlanModel entry;
  std::string architecture;       // DescribeModel + parameter count + dtype: equal strings = same architecture
  int group = -1;                 // index into PlanResult::groups
  MemoryReport memory;            // per GPU: inference, overhead = runtime_bytes_per_model, capacity = usable per GPU
  uint64_t runtime = 0;           // runtime_bytes_per_model
  uint64_t kv_budget = 0;         // per GPU: the KV cache held (batch x seq_len, kv_tokens, or what utilisation leaves)
  uint64_t kv_budget_tokens = 0;  // tokens that budget holds
  int64_t max_sequences = 0;      // sequences of seq_len the budget holds at once
  uint64_t footprint = 0;         // per GPU: weights + KV budget + activations + runtime
  int64_t max_batch_alone = 0;    // largest batch whose footprint fits empty GPUs (usable capacity), KV at seq_len
  Roofline prefill;               // per GPU: batch x prompt tokens (or the one forward pass)
  Roofline decode;                // per GPU: one decode step at the mean context (only when output_tokens > 0)
  AllReduceCost prefill_comm, decode_comm;  // tensor-parallel all-reduces of the prefill and of one decode step
  double prefill_s = 0, decode_s = 0, latency_s = 0;    // communication included
  LatencyBound bound = LatencyBound::kCompute;          // what bounds the phase that takes longer
  LatencyBound prefill_bound = LatencyBound::kCompute;  // the prefill (or the one forward pass), all-reduces included
  std::optional<LatencyBound> decode_bound;             // a decode step's, when output_tokens > 0 (config models)
  double cold_load_s = 0;   // disk read + host->device copy of the weights (all its GPUs in parallel)
  double switch_s = 0;      // host->device copy of the weights (host copy already resident)
  double utilisation = 0;   // requests_per_s x latency_s / batch
  bool fits_alone = false;  // its pieces fit empty GPUs of the plan
  std::vector<int> gpus;    // where its pieces went; empty = not placed
  Unplaced unplaced = Unplaced::kNone;
  std::vector<WhatIf> what_if;        // with PlanRequest::what_if, for a model not placed: cheapest first
  std::vector<std::string> warnings;  // e.g. a KV budget that holds fewer sequences than the batch
};

struct ArchGroup {
  std::string architecture;
  std::vector<int> members;  // indices into models
  uint64_t weight_bytes_each = 0;
};

struct GpuUse {
  std::vector<int> models;  // indices, largest first (ties in plan order)
  uint64_t models_bytes = 0;
  double reserved = 0, margin = 0, free = 0, capacity = 0;
  double utilisation = 0;
};

struct PlanRequest {
  std::string plan_path;
  std::string gpu;              // overrides the plan's "gpu"
  std::string gpu_spec;         // a file describing the GPU instead
  int64_t gpus = 0;             // overrides the plan's "gpus" when > 0
  bool what_if = false;         // name the cheapest change that places each model left out
  std::string svg_path;         // a memory map will be written here (by the caller)
  std::string timeline_path;    // replay this day of events (plan_timeline.h)
  int64_t generate_events = 0;  // or a generated day of this many events
  uint64_t seed = 1;            // of the generated day
  std::string trace_path;       // every simulated allocator call will be written here (by the caller; needs a day)
};

struct TimelineResult;  // plan_timeline.h

struct PlanResult {
  Plan plan;
  GpuSpec gpu;
  int64_t gpus = 1;
  double usable_bytes = 0;  // per GPU: capacity x (1 - fragmentation) - reserved
  std::vector<ModelEstimate> models;
  std::vector<ArchGroup> groups;
  std::vector<GpuUse> gpu_use;
  std::string packing_method;
  bool packing_optimal = false;
  std::vector<int> unplaced;
  double most_free_bytes = 0;  // the most memory left free on one GPU after the placement
  std::string svg_path;
  std::string trace_path;                          // the allocator trace the caller writes ("" = none)
  std::shared_ptr<const TimelineResult> timeline;  // with PlanRequest::timeline_path or generate_events
};

// Evaluates every model and places as many as fit; models that cannot be placed (too large for empty GPUs, more
// tensor-parallel GPUs than the plan has, no room beside the others) are listed with the reason and the largest batch
// that would fit, and do not stop the plan. Errors: LoadPlan's; no GPU named (kInvalidArgument naming gpu); the GPU
// lookup's; reserved and fragmentation leaving no usable memory; a dtype the GPU has no peak for (kInvalidInput
// naming the entry); trace_path without timeline_path or generate_events, or a chart or trace that would replace the
// plan, the timeline or a model config the plan reads (kInvalidArgument naming the field).
Result<PlanResult> RunPlan(const PlanRequest& req);
// The same, on an already-parsed plan (tests). `gpu_spec` as PlanRequest's.
Result<PlanResult> EvaluatePlan(Plan plan, const std::string& gpu_override, int64_t gpus_override, bool what_if = false,
                                const std::string& gpu_spec = "");

}  // namespace lmkit::accounting
