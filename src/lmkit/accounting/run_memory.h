// `lmkit memory` as one core call: resolve the model and GPU, estimate, sweep; or, given a training layout, the
// per-stage memory of that layout (or the layout search).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/memory.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/request.h"
#include "lmkit/accounting/run_training.h"

namespace lmkit::accounting {

struct MemoryRequest {
  ModelSource source;
  Mode mode = Mode::kTraining;
  Dtype dtype = Dtype::kBf16;
  // Training-only choices: given in inference mode, they are reported in MemoryResult::ignored.
  std::optional<Optimizer> optimizer;
  std::optional<Recompute> recompute;
  std::optional<ActivationModel> activations;
  std::optional<int> zero;
  // Inference-only choices: given in training mode, they are reported in MemoryResult::ignored.
  std::optional<Dtype> kv_dtype;
  std::optional<QuantScope> quant_scope;
  std::optional<int64_t> gpus;  // default 1; with a layout: the total (default tp·pp·cp·dp)
  int64_t batch = 1;
  int64_t seq_len = 1024;
  double overhead_gib = 1.0;  // 0 .. 1e9
  double capacity_gb = 0;     // 0 = the GPU's (or unknown)
  std::string gpu;            // table name; "" = none
  std::string gpu_spec;       // a file describing the GPU instead
  Sweep sweep;
  std::string svg_path;  // a chart of the sweep (or of the layout's stages) will be written here (by the caller)
  // A training layout (Megatron-style parallelism; the front ends set it when any of its fields is given, `lmkit
  // memory --search` and Python's layouts() with search): the per-stage memory of that layout answers instead
  // (RunTraining). Its own fields are the layout's (layout, inter_node_gb_s, overlap, per_stage, convention, search,
  // top); the model, mode (training only), dtype, optimizer, recompute, gpus, seq_len, overhead, capacity, GPU and
  // svg_path are this request's, and layout.micro_batch 0 takes batch.
  std::optional<TrainingRequest> layout;
};

struct MemorySweepPoint {
  std::string label;
  MemoryReport report;
};

struct MemoryResult {
  ModelSpec model;
  MemoryReport report;
  std::optional<GpuSpec> gpu;
  std::vector<std::string> ignored;  // request fields given that the mode does not use ("optimizer", "zero" ...)
  std::string sweep_variable;
  std::vector<MemorySweepPoint> sweep;
  std::string svg_path;                  // the chart the caller writes ("" = none)
  std::optional<TrainingResult> layout;  // with MemoryRequest::layout: its memory or search (the fields above unset)
};

// Errors: kInvalidArgument naming the request fields at fault (overhead_gib or capacity_gb not a number from 0 to
// 1e9, svg without a sweep, a model sweep beside a model, EstimateMemory's), kNotFound / kInvalidInput from the model
// and GPU lookups. With a layout: inference mode, the fields it does not use (kv_dtype, quant_scope, activations,
// sweep) and a chart beside search are kInvalidArgument naming them; RunTraining's errors.
Result<MemoryResult> RunMemory(const MemoryRequest& req);

}  // namespace lmkit::accounting
