#include "lmkit/accounting/run_flops.h"

#include <cmath>

#include "lmkit/common/output_check.h"

namespace lmkit::accounting {
namespace {

// The step time of `rep`: model FLOPs at the MFU, recomputation counted in the HFU.
Result<StepTime> StepOf(const FlopsReport& rep, bool training, const GpuSpec& gpu, Dtype dtype, double mfu) {
  const double model = static_cast<double>(training ? rep.model : rep.forward);
  const double hardware = static_cast<double>(training ? rep.training : rep.forward);
  return EstimateStepTime(model, hardware, static_cast<double>(rep.tokens), gpu, dtype, mfu);
}

// What needs a GPU and was given without one; "" when all is well.
std::string NeedsGpu(const FlopsRequest& req) {
  if (req.dtype)
    return Field("dtype") + " needs " + Field("gpu") + " (it picks the GPU's peak and the roofline's bytes)";
  if (req.kv_dtype) return Field("kv_dtype") + " needs " + Field("gpu") + " (it sets the roofline's KV cache bytes)";
  if (req.quant_scope)
    return Field("quant_scope") + " needs " + Field("gpu") + " (it sets the roofline's weight bytes)";
  if (req.attention) return Field("attention") + " needs " + Field("gpu") + " (it shapes the roofline)";
  if (req.mfu) return Field("mfu") + " needs " + Field("gpu");
  return "";
}

}  // namespace

std::vector<Component> SweepComponents(const std::vector<FlopsSweepPoint>& sweep) {
  std::vector<Component> out;
  for (int c = 0; c < kComponentCount; ++c) {
    bool any = false;
    for (const auto& p : sweep) any = any || p.report.component[c] > 0;
    if (any) out.push_back(static_cast<Component>(c));
  }
  return out;
}

namespace {

Result<FlopsResult> RunPlainFlops(const FlopsRequest& req) {
  LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput(ModelSourceFiles(req.source, req.sweep), req.svg_path, "svg"));
  FlopsResult r;
  r.training = req.training;
  const bool has_gpu = !req.gpu.empty() || !req.gpu_spec.empty();
  // FLOP counts do not depend on the dtype or the kernels: without a GPU these would change nothing.
  if (!has_gpu)
    if (std::string need = NeedsGpu(req); !need.empty()) return Status::InvalidArgument(need);
  r.precision.dtype = req.dtype.value_or(Dtype::kBf16);
  r.precision.kv_dtype = req.kv_dtype.value_or(AutoKvDtype(r.precision.dtype));
  r.precision.scope = req.quant_scope.value_or(QuantScope::kLinear);
  r.attention = req.attention.value_or(Attention::kFused);
  LMKIT_RETURN_IF_ERROR(CheckSweepSource(req.sweep, req.source));
  if (req.sweep.variable != "model") {
    LMKIT_ASSIGN_OR_RETURN(r.model, ResolveModelSource(req.source));
    LMKIT_ASSIGN_OR_RETURN(r.report, ComputeFlops(r.model, req.options));
  }
  LMKIT_ASSIGN_OR_RETURN(r.gpu, ResolveGpu(req.gpu, req.gpu_spec));
  if (req.steps) {
    // A negative count used to be ignored silently, printing no total at all.
    if (*req.steps <= 0)
      return Status::InvalidArgument(Field("steps") + " must be positive (got " + std::to_string(*req.steps) + ")");
    if (!req.mfu) return Status::InvalidArgument(Field("steps") + " needs " + Field("gpu") + " and " + Field("mfu"));
    r.steps = *req.steps;
  }

  if (!req.sweep.variable.empty()) {
    r.sweep_variable = req.sweep.variable;
    for (const auto& v : req.sweep.values) {
      FlopsOptions o = req.options;
      ModelSpec m = r.model;
      LMKIT_RETURN_IF_ERROR(ApplySweepValue(req.sweep.variable, v, &o.seq_len, &o.batch, &m));
      LMKIT_ASSIGN_OR_RETURN(FlopsReport rep, ComputeFlops(m, o));
      if (req.sweep.variable == "model" && r.sweep.empty()) {
        r.model = m;
        r.report = rep;
      }
      FlopsSweepPoint point{v, std::move(rep), std::nullopt};
      if (r.gpu && req.mfu) {
        LMKIT_ASSIGN_OR_RETURN(StepTime st, StepOf(point.report, req.training, *r.gpu, r.precision.dtype, *req.mfu));
        point.step = st;
      }
      r.sweep.push_back(std::move(point));
    }
    r.svg_path = req.svg_path;
  } else if (!req.svg_path.empty()) {
    return Status::InvalidArgument(Field("svg") + " needs " + Field("sweep"));
  }

  if (r.gpu && req.mfu) {
    LMKIT_ASSIGN_OR_RETURN(StepTime st, StepOf(r.report, req.training, *r.gpu, r.precision.dtype, *req.mfu));
    r.step = st;
    // JSON has no infinity (it would print total_seconds as null): a total that overflows a double is refused.
    if (r.steps > 0 && !std::isfinite(st.seconds * static_cast<double>(r.steps)))
      return Status::InvalidArgument(Field("steps") + " " + std::to_string(r.steps) +
                                     " x the step time overflows; use fewer steps or a larger " + Field("mfu"));
  }
  if (r.gpu && req.sweep.variable.empty()) {
    LMKIT_ASSIGN_OR_RETURN(Roofline pre, ComputeRoofline(r.report.matmuls, *r.gpu, r.precision, r.attention));
    r.prefill = std::move(pre);
    LMKIT_ASSIGN_OR_RETURN(auto dec_ops, BuildDecodeMatmuls(r.model, req.options.batch, req.options.seq_len));
    LMKIT_ASSIGN_OR_RETURN(Roofline dec, ComputeRoofline(dec_ops, *r.gpu, r.precision, r.attention));
    r.decode = std::move(dec);
  }
  return r;
}

}  // namespace

Result<FlopsResult> RunFlops(const FlopsRequest& req) {
  if (!req.layout) return RunPlainFlops(req);
  // The layout's step counts what RunTraining counts; a choice of the plain count would be silently dropped.
  for (auto [given, field] : {std::pair{req.kv_dtype.has_value(), "kv_dtype"},
                              {req.quant_scope.has_value(), "quant_scope"},
                              {req.attention.has_value(), "attention"},
                              {req.steps.has_value(), "steps"},
                              {!req.sweep.variable.empty(), "sweep"},
                              {!req.options.lm_head, "no_lm_head"},
                              {req.options.softmax_flops, "softmax"},
                              {req.options.macs, "macs"}})
    if (given) return Status::InvalidArgument(Field(field) + " does not combine with a training layout");
  if (req.gpu.empty() && req.gpu_spec.empty())
    return Status::InvalidArgument("the layout's step time needs " + Field("gpu"));
  TrainingRequest t = *req.layout;
  t.source = req.source;
  t.seq_len = req.options.seq_len;
  t.causal_half = req.options.causal_half;
  t.layout.recompute = req.options.recompute;
  if (t.layout.micro_batch == 0) t.layout.micro_batch = req.options.batch;
  t.dtype = req.dtype.value_or(Dtype::kBf16);
  t.gpu = req.gpu;
  t.gpu_spec = req.gpu_spec;
  t.mfu = req.mfu;
  t.svg_path = req.svg_path;
  FlopsResult r;
  LMKIT_ASSIGN_OR_RETURN(r.layout, RunTraining(t));
  r.svg_path = req.svg_path;
  return r;
}

}  // namespace lmkit::accounting
