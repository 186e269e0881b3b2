// `lmkit memory` as one core call: resolve the model and GPU, estimate, sweep.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/memory.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/request.h"

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
  int64_t gpus = 1;
  int64_t batch = 1;
  int64_t seq_len = 1024;
  double overhead_gib = 1.0;  // 0 .. 1e9
  double capacity_gb = 0;     // 0 = the GPU's (or unknown)
  std::string gpu;            // table name; "" = none
  std::string gpu_spec;       // a file describing the GPU instead
  Sweep sweep;
  std::string svg_path;  // a chart of the sweep will be written here (by the caller; needs a sweep)
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
  std::string svg_path;  // the chart the caller writes ("" = none)
};

// Errors: kInvalidArgument naming the request fields at fault (overhead_gib or capacity_gb not a number from 0 to
// 1e9, svg without a sweep, a model sweep beside a model, EstimateMemory's), kNotFound / kInvalidInput from the model
// and GPU lookups.
Result<MemoryResult> RunMemory(const MemoryRequest& req);

}  // namespace lmkit::accounting
