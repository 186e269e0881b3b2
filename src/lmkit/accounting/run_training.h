// `lmkit memory` and `lmkit flops` with a training layout (--tp, --pp, ...) as one core call: resolve the model and
// GPU, the per-stage memory (lmkit's model and Megatron-LM's), the step time when a GPU is known, or the layout
// search.
#pragma once

#include <optional>
#include <string>

#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/layout_search.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/parallel_layout.h"
#include "lmkit/accounting/request.h"
#include "lmkit/accounting/step_time.h"
#include "lmkit/accounting/training_memory.h"
#include "lmkit/common/name_table.h"

namespace lmkit::accounting {

// Whose accounting the memory headline follows: lmkit's own model, or Megatron-LM's theoretical_memory_usage.py.
enum class MemoryConvention { kLmkit, kMegatron };
std::span<const EnumName<MemoryConvention>> MemoryConventionNames();  // lmkit, megatron

struct TrainingRequest {
  ModelSource source;
  ParallelLayout layout;
  int64_t seq_len = 1024;
  Dtype dtype = Dtype::kBf16;
  Optimizer optimizer = Optimizer::kAdamW;
  double overhead_gib = 1.0;  // 0 .. 1e9
  double capacity_gb = 0;     // 0 = the GPU's (or unknown)
  std::string gpu, gpu_spec;  // the step time and the search need one
  std::optional<double> mfu;
  double inter_node_gb_s = 50;  // per GPU, per direction
  bool overlap = true;
  bool causal_half = false;
  bool per_stage = false;  // report every stage, not only the most loaded
  MemoryConvention convention = MemoryConvention::kLmkit;
  bool search = false;  // list the layouts of layout.gpus GPUs instead of evaluating `layout`
  int64_t top = 10;
  std::string svg_path;  // memory by stage and the step breakdown (written by the caller)
};

struct TrainingResult {
  ModelSpec model;
  std::optional<GpuSpec> gpu;
  TrainingRequest request;
  std::optional<TrainingMemoryReport> memory;  // absent for a search
  std::optional<TrainingStepReport> step;      // with a GPU
  std::optional<LayoutSearchResult> search;
};

// Errors: kInvalidArgument naming the fields (overhead_gib, capacity_gb, inter_node_gb_s out of range; search or the
// step without a GPU when it is needed; search without gpus or global_batch), ResolveLayout's, the model and GPU
// lookups' (kNotFound / kInvalidInput).
Result<TrainingResult> RunTraining(const TrainingRequest& req);

}  // namespace lmkit::accounting
