// `lmkit flops` as one core call: resolve the model and GPU, count, time, sweep, roofline; or, given a training
// layout, the step of that layout.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/request.h"
#include "lmkit/accounting/roofline.h"
#include "lmkit/accounting/run_training.h"

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
  std::string svg_path;  // a chart of the sweep (or of the layout's step) will be written here (by the caller)
  // A training layout (Megatron-style parallelism; the front ends set it when any of its fields is given): the step
  // of that layout answers instead of the plain count (RunTraining). Its own fields are the layout's (layout,
  // inter_node_gb_s, overlap, per_stage, convention); the model, seq_len, causal_half, recompute, dtype, GPU, mfu and
  // svg_path are this request's, and layout.micro_batch 0 takes options.batch.
  std::optional<TrainingRequest> layout;
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
  std::string svg_path;                  // the chart the caller writes ("" = none)
  std::optional<TrainingResult> layout;  // with FlopsRequest::layout: its step (the fields above are then unset)
};

// The components with FLOPs at some point of a sweep, in report order (the columns and series a sweep shows).
std::vector<Component> SweepComponents(const std::vector<FlopsSweepPoint>& sweep);

// Errors: kInvalidArgument naming the request fields at fault (dtype/kv_dtype/quant_scope/attention/mfu without a
// GPU, steps without mfu or not positive, svg without a sweep, a model sweep beside a model, mfu outside (0, 1]),
// kNotFound / kInvalidInput from the model and GPU lookups, ComputeFlops' errors. With a layout: the fields it does
// not use (kv_dtype, quant_scope, attention, steps, sweep, lm_head off, softmax_flops, macs) and a missing GPU are
// kInvalidArgument naming them; RunTraining's errors.
Result<FlopsResult> RunFlops(const FlopsRequest& req);

}  // namespace lmkit::accounting
