// `lmkit plan`: many models on a few identical GPUs — what each needs (memory by component, latency per request and
// its bound, the largest batch that fits alone, cold-load and switch time), where each goes (a packing per GPU with
// used/free memory, the fragmentation margin and the utilisation implied by requests/s), and what does not fit, why.
//
// Contract: LoadPlan / ParsePlan read the plan document (schema in docs/plan.md); every error is one line whose subject
// is the plan file and whose message names the entry ("models[2] 'chat'") and the field: malformed JSON (with the byte
// offset), unknown keys, wrong types, non-positive batch/seq_len, output_tokens >= seq_len, unknown model (kNotFound
// from ResolveModel, with the nearest preset names). RunPlan resolves the GPU (request flags override the plan),
// estimates every model with the accounting code (EstimateMemory, BuildMatmuls/BuildDecodeMatmuls + ComputeRoofline —
// no second copy of that arithmetic), and packs the models (plan_packing.h). A model that cannot fit an empty GPU at
// its batch is an error (kInvalidInput naming it, its need, the usable capacity and the largest batch that would fit);
// models that fit alone but not together are reported in `unplaced` with the reason. An svg_path is checked not to
// name a model config the plan reads and echoed in the result; the caller draws the memory map
// (present/accounting_svg.h). Render/ToJson never fail and are deterministic. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/memory.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/plan_packing.h"
#include "lmkit/accounting/report.h"
#include "lmkit/accounting/roofline.h"
#include "lmkit/common/json.h"

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
  int64_t batch = 1;          // sequences served together
  int64_t seq_len = 1024;     // context per sequence held in the KV cache (prompt + generated)
  int64_t output_tokens = 0;  // generated tokens per request; 0 = one forward pass over seq_len
  double requests_per_s = 0;
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

// `base_dir` resolves relative config paths in "model" (a path that exists there wins over a preset name).
Result<Plan> ParsePlan(const Json& doc, const std::string& subject, const std::string& base_dir);
Result<Plan> LoadPlan(const std::string& path);

struct ModelEstimate {
  PlanModel entry;
  std::string architecture;     // DescribeModel + parameter count + dtype: equal strings = same architecture
  int group = -1;               // index into PlanResult::groups
  MemoryReport memory;          // inference, overhead 0, capacity = usable per GPU
  uint64_t runtime = 0;         // runtime_bytes_per_model
  uint64_t footprint = 0;       // weights + KV cache + activations + runtime at the planned batch
  int64_t max_batch_alone = 0;  // largest batch that fits an empty GPU (usable capacity)
  Roofline prefill;             // batch x prompt tokens (or the one forward pass)
  Roofline decode;              // one decode step at the mean context (only when output_tokens > 0)
  double prefill_s = 0, decode_s = 0, latency_s = 0;
  std::string bound;         // "compute" or "memory": the bound of the phase that takes longer
  std::string bound_detail;  // "prefill compute-bound, decode memory-bound"
  double cold_load_s = 0;    // disk read + host->device copy of the weights
  double switch_s = 0;       // host->device copy of the weights (host copy already resident)
  double utilisation = 0;    // requests_per_s x latency_s / batch
  int gpu = -1;              // assigned GPU, -1 = not placed
  std::string unplaced_reason;
};

struct ArchGroup {
  std::string architecture;
  std::vector<int> members;  // indices into models
  uint64_t weight_bytes_each = 0;
};

struct GpuUse {
  std::vector<int> models;  // indices, in placement order (largest first)
  uint64_t models_bytes = 0;
  double reserved = 0, margin = 0, free = 0, capacity = 0;
  double utilisation = 0;
};

struct PlanRequest {
  std::string plan_path;
  std::string gpu;   // overrides the plan's "gpu"
  int64_t gpus = 0;  // overrides the plan's "gpus" when > 0
  std::string svg_path;
};

struct PlanResult {
  Plan plan;
  GpuSpec gpu;
  int64_t gpus = 1;
  double usable_bytes = 0;  // per GPU: capacity x (1 - fragmentation) - reserved
  std::vector<ModelEstimate> models;
  std::vector<ArchGroup> groups;
  std::vector<GpuUse> gpu_use;
  std::string packing_method;
  std::vector<int> unplaced;
  std::string svg_path;
};

Result<PlanResult> RunPlan(const PlanRequest& req);
// The same, on an already-parsed plan (tests).
Result<PlanResult> EvaluatePlan(Plan plan, const std::string& gpu_override, int64_t gpus_override);
std::string RenderPlan(const PlanResult& r, Format f);
Json PlanToJson(const PlanResult& r);

}  // namespace lmkit::accounting
