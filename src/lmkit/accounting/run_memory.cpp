#include "lmkit/accounting/run_memory.h"

#include <fmt/format.h>

#include <cmath>

#include "lmkit/common/output_check.h"

namespace lmkit::accounting {

namespace {

Result<MemoryResult> RunPlainMemory(const MemoryRequest& req) {
  LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput(ModelSourceFiles(req.source, req.sweep), req.svg_path, "svg"));
  MemoryResult r;
  // NaN passes a plain `< 0` test, and llround of NaN, inf or anything past 2^63 is undefined (it printed an overhead
  // of 9,223,372,036,854,775,808 bytes and a max batch of -2^63). 1e9 GB(GiB) bounds both to the 1e18-byte range the
  // estimate itself is checked against, so every sum and the max batch stay exact.
  constexpr double kMaxGb = 1e9;
  if (!(req.overhead_gib >= 0 && req.overhead_gib <= kMaxGb))
    return Status::InvalidArgument(
        fmt::format("{} must be a number from 0 to 1e9 (got {})", Field("overhead_gib"), req.overhead_gib));
  if (!(req.capacity_gb >= 0 && req.capacity_gb <= kMaxGb))
    return Status::InvalidArgument(
        fmt::format("{} must be a number from 0 to 1e9 (got {})", Field("capacity_gb"), req.capacity_gb));
  MemoryOptions base;
  base.mode = req.mode;
  base.dtype = req.dtype;
  base.optimizer = req.optimizer.value_or(Optimizer::kAdamW);
  base.recompute = req.recompute.value_or(Recompute::kNone);
  base.activations = req.activations.value_or(ActivationModel::kKorthikanti);
  base.zero = req.zero.value_or(0);
  base.kv_dtype = req.kv_dtype;
  base.quant_scope = req.quant_scope.value_or(QuantScope::kLinear);
  base.gpus = req.gpus.value_or(1);
  base.batch = req.batch;
  base.seq_len = req.seq_len;
  base.overhead_bytes = static_cast<uint64_t>(std::llround(req.overhead_gib * 1073741824.0));
  base.capacity_bytes = req.capacity_gb * 1e9;
  // Choices of the other mode would otherwise be accepted and silently ignored, as if they had been accounted for.
  if (req.mode == Mode::kInference) {
    if (req.optimizer) r.ignored.push_back("optimizer");
    if (req.recompute) r.ignored.push_back("recompute");
    if (req.activations) r.ignored.push_back("activations");
    if (req.zero) r.ignored.push_back("zero");
  } else {
    if (req.kv_dtype) r.ignored.push_back("kv_dtype");
    if (req.quant_scope) r.ignored.push_back("quant_scope");
  }
  LMKIT_ASSIGN_OR_RETURN(r.gpu, ResolveGpu(req.gpu, req.gpu_spec));
  if (r.gpu && base.capacity_bytes == 0) base.capacity_bytes = r.gpu->memory_bytes;
  LMKIT_RETURN_IF_ERROR(CheckSweepSource(req.sweep, req.source));
  if (req.sweep.variable != "model") {
    LMKIT_ASSIGN_OR_RETURN(r.model, ResolveModelSource(req.source));
    LMKIT_ASSIGN_OR_RETURN(r.report, EstimateMemory(r.model, base));
  }
  if (req.sweep.variable.empty()) {
    if (!req.svg_path.empty()) return Status::InvalidArgument(Field("svg") + " needs " + Field("sweep"));
    return r;
  }
  r.sweep_variable = req.sweep.variable;
  for (const auto& v : req.sweep.values) {
    MemoryOptions o = base;
    ModelSpec m = r.model;
    LMKIT_RETURN_IF_ERROR(ApplySweepValue(req.sweep.variable, v, &o.seq_len, &o.batch, &m));
    LMKIT_ASSIGN_OR_RETURN(MemoryReport rep, EstimateMemory(m, o));
    if (req.sweep.variable == "model" && r.sweep.empty()) {
      r.model = m;
      r.report = rep;
    }
    r.sweep.push_back({v, std::move(rep)});
  }
  r.svg_path = req.svg_path;
  return r;
}

}  // namespace

Result<MemoryResult> RunMemory(const MemoryRequest& req) {
  if (!req.layout) return RunPlainMemory(req);
  if (req.mode != Mode::kTraining)
    return Status::InvalidArgument("the layout fields (" + Field("tp") + ", " + Field("pp") +
                                   " ...) model training; drop " + Field("mode") + " inference");
  for (auto [given, field] : {std::pair{req.kv_dtype.has_value(), "kv_dtype"},
                              {req.quant_scope.has_value(), "quant_scope"},
                              {req.activations.has_value(), "activations"},
                              {!req.sweep.variable.empty(), "sweep"}})
    if (given) return Status::InvalidArgument(Field(field) + " does not combine with a training layout");
  if (req.layout->search && !req.svg_path.empty())
    return Status::InvalidArgument(Field("svg") + " does not combine with " + Field("search"));
  TrainingRequest t = *req.layout;
  t.source = req.source;
  t.dtype = req.dtype;
  t.optimizer = req.optimizer.value_or(Optimizer::kAdamW);
  t.layout.recompute = req.recompute.value_or(Recompute::kNone);
  if (req.gpus) t.layout.gpus = *req.gpus;
  if (t.layout.micro_batch == 0) t.layout.micro_batch = req.batch;
  t.seq_len = req.seq_len;
  t.overhead_gib = req.overhead_gib;
  t.capacity_gb = req.capacity_gb;
  t.gpu = req.gpu;
  t.gpu_spec = req.gpu_spec;
  t.svg_path = req.svg_path;
  MemoryResult r;
  LMKIT_ASSIGN_OR_RETURN(r.layout, RunTraining(t));
  r.svg_path = req.svg_path;
  return r;
}

}  // namespace lmkit::accounting
