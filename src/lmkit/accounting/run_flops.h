// `lmkit flops` as one core call: resolve the model and GPU, count, time, sweep, roofline.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/request.h"
#include "lmkit/accounting/roofline.h"

namespace lmkit::accounting {

struct FlopsRequest {
  ModelSource source;
  FlopsOptions options;
  bool training = false;                  // time a training step (forward + backward); else a forward pass
  std::string gpu;                        // table name; "" = none
  std::string gpu_spec;                   // a file describing the GPU instead
  std::optional<double> mfu;              // step time at this MFU (needs a GPU)
  std::optional<Dtype> dtype;             // the peak and the weights' bytes (needs a GPU); default bf16
  std::optional<Dtype> kv_dtype;          // the roofline's KV cache reads (needs a GPU); default AutoKvDtype(dtype)
  std::optional<QuantScope> quant_scope;  // which weights an 8-bit dtype applies to (needs a GPU); default linear
  std::optional<Attention> attention;     // the roofline's attention kernels (needs a GPU); default fused
  std::optional<int64_t> steps;           // total time of this many steps (needs mfu)
  Sweep sweep;
  std::string svg_path;  // a chart of the sweep will be written here (by the caller; needs a sweep)
};

struct FlopsSweepPoint {
  std::string label;
  FlopsReport report;
  std::optional<StepTime> step;  // with a GPU and mfu
};

struct FlopsResult {
  ModelSpec model;
  FlopsReport report;
  bool training = false;
  std::optional<GpuSpec> gpu;
  Precision precision;
  Attention attention = Attention::kFused;
  std::optional<StepTime> step;
  int64_t steps = 0;
  std::optional<Roofline> prefill, decode;
  std::string sweep_variable;
  std::vector<FlopsSweepPoint> sweep;
  std::string svg_path;  // the chart the caller writes ("" = none)
};

// The components with FLOPs at some point of a sweep, in report order (the columns and series a sweep shows).
std::vector<Component> SweepComponents(const std::vector<FlopsSweepPoint>& sweep);

// Errors: kInvalidArgument naming the request fields at fault (dtype/kv_dtype/quant_scope/attention/mfu without a
// GPU, steps without mfu or not positive, svg without a sweep, a model sweep beside a model, mfu outside (0, 1]),
// kNotFound / kInvalidInput from the model and GPU lookups, ComputeFlops' errors.
Result<FlopsResult> RunFlops(const FlopsRequest& req);

}  // namespace lmkit::accounting
