// `flops` and `memory` as the JSON documents --json prints (integers exact: FLOPs and bytes as uint64), generated
// from the field lists below (json_fields.h).
#include "lmkit/present/accounting_json.h"

#include "lmkit/common/units.h"
#include "lmkit/present/accounting.h"
#include "lmkit/present/accounting_json_fields.h"
#include "lmkit/present/accounting_training.h"

namespace lmkit::present {

using namespace accounting;  // NOLINT: this file prints accounting's types and nothing else

namespace {

// The component totals as one object keyed by component name, in the report's order.
Json ComponentsJson(const uint64_t (&component)[kComponentCount]) {
  Json out = Json::object();
  for (int c = 0; c < kComponentCount; ++c) out[ComponentName(static_cast<Component>(c))] = component[c];
  return out;
}

// A matmul row of flops' table: its share of the forward FLOPs needs the report's total.
struct MatmulRow {
  const Matmul& op;
  uint64_t forward;
};

// flops' step time: the estimate, which step it times, and the run's total when --steps is given.
struct FlopsStep {
  const StepTime& step;
  bool training;
  int64_t steps;
};

// The GPU of flops: its datasheet plus the dtype the peak is read at.
struct FlopsGpu {
  const GpuSpec& gpu;
  Dtype dtype;
};

// One MemoryReport's byte counts as `memory` prints them (also each sweep point's).
struct MemoryBytes {
  const MemoryReport& report;
};

struct FlopsSweepRow {
  const FlopsSweepPoint& point;
};

struct MemorySweepRow {
  const MemorySweepPoint& point;
};

std::vector<MatmulRow> MatmulRows(const FlopsReport& rep) {
  std::vector<MatmulRow> rows;
  for (const Matmul& m : rep.matmuls) rows.push_back({m, rep.forward});
  return rows;
}

}  // namespace

LMKIT_JSON_FIELDS(RooflineRow,  //
                  Computed("layer_kind", [](const T& x) { return x.op.layer_kind; }),
                  Computed("name", [](const T& x) { return x.op.name; }),
                  Computed("m", [](const T& x) { return x.op.m; }), Computed("k", [](const T& x) { return x.op.k; }),
                  Computed("n", [](const T& x) { return x.op.n; }),
                  Computed("count", [](const T& x) { return x.op.count; }),
                  Computed("flops", [](const T& x) { return x.op.flops; }), Field("bytes", &T::bytes),
                  Field("intensity", &T::intensity), Field("time_s", &T::time_s),
                  Computed("bound", [](const T& x) { return x.compute_bound ? "compute" : "memory"; }));

LMKIT_JSON_FIELDS(Roofline,  //
                  Field("peak_flops", &T::peak), Field("bandwidth_bytes_per_s", &T::bandwidth),
                  Field("ridge_flops_per_byte", &T::ridge), Field("attention", &T::attention),
                  Field("flops", &T::flops), Field("bytes", &T::bytes), Field("compute_s", &T::compute_s),
                  Field("memory_s", &T::memory_s), Field("time_s", &T::time_s), Field("matmuls", &T::rows));

LMKIT_JSON_FIELDS(FlopsStep,  //
                  Computed("flops", [](const T& s) { return s.step.flops; }),
                  Computed("hardware_flops", [](const T& s) { return s.step.hardware_flops; }),
                  Computed("mfu", [](const T& s) { return s.step.mfu; }),
                  Computed("hfu", [](const T& s) { return s.step.hfu; }),
                  Computed("seconds", [](const T& s) { return s.step.seconds; }),
                  Computed("tokens_per_s", [](const T& s) { return s.step.tokens_per_s; }),
                  Computed("step", [](const T& s) { return s.training ? "training" : "forward"; }),
                  If([](const T& s) { return s.steps > 0; }, Computed("total_seconds", [](const T& s) {
                       return s.step.seconds * static_cast<double>(s.steps);
                     })));

LMKIT_JSON_FIELDS(FlopsGpu,  //
                  Computed("name", [](const T& g) { return g.gpu.name; }),
                  Computed("memory_bytes", [](const T& g) { return g.gpu.memory_bytes; }),
                  Computed("bandwidth_bytes_per_s", [](const T& g) { return g.gpu.bandwidth_bytes_per_s; }),
                  Computed("interconnect_bytes_per_s", [](const T& g) { return g.gpu.interconnect_bytes_per_s; }),
                  Computed("source", [](const T& g) { return g.gpu.source; }), Field("dtype", &T::dtype),
                  Computed("peak_flops", [](const T& g) { return g.gpu.PeakFlops(g.dtype); }));

LMKIT_JSON_FIELDS(Precision,  //
                  Field("weights", &T::dtype), Field("quant_scope", &T::scope),
                  Computed("activation_bytes", [](const T& p) { return p.ActivationBytes(); }),
                  Field("kv_cache", &T::kv_dtype));

LMKIT_JSON_FIELDS(MatmulRow,  //
                  Computed("layer_kind", [](const T& x) { return x.op.layer_kind; }),
                  Computed("name", [](const T& x) { return x.op.name; }),
                  Computed("component", [](const T& x) { return x.op.component; }),
                  Computed("m", [](const T& x) { return x.op.m; }), Computed("k", [](const T& x) { return x.op.k; }),
                  Computed("n", [](const T& x) { return x.op.n; }),
                  Computed("count", [](const T& x) { return x.op.count; }),
                  Computed("flops", [](const T& x) { return x.op.flops; }),
                  Computed("share", [](const T& x) { return ShareOf(x.op.flops, x.forward); }));

LMKIT_JSON_FIELDS(FlopsSweepRow,  //
                  Computed("value", [](const T& p) { return p.point.label; }),
                  Computed("tokens", [](const T& p) { return p.point.report.tokens; }),
                  Computed("forward", [](const T& p) { return p.point.report.forward; }),
                  Computed("training", [](const T& p) { return p.point.report.training; }),
                  Computed("components", [](const T& p) { return ComponentsJson(p.point.report.component); }),
                  Computed("params", [](const T& p) { return p.point.report.params; }),
                  If([](const T& p) { return p.point.step.has_value(); },
                     Object("step_time",  //
                            Computed("seconds", [](const T& p) { return p.point.step->seconds; }),
                            Computed("tokens_per_s", [](const T& p) { return p.point.step->tokens_per_s; }),
                            Computed("hfu", [](const T& p) { return p.point.step->hfu; }))));

LMKIT_JSON_FIELDS(
    FlopsResult,  //
    Field("model", &T::model),
    Object("conventions",  //
           Computed("flop_per_mac", [](const T&) { return 2; }),
           Computed("causal", [](const T& r) { return r.report.options.causal_half ? "half" : "full"; }),
           Computed("lm_head_counted", [](const T& r) { return r.report.options.lm_head; }),
           Computed("embedding_lookup_counted", [](const T&) { return false; }),
           Computed("softmax_counted", [](const T& r) { return r.report.options.softmax_flops; }),
           Computed("backward_over_forward", [](const T&) { return 2; }),
           Computed("recompute", [](const T& r) { return r.report.options.recompute; }),
           Computed("mfu_counts", [](const T&) { return "model FLOPs (forward + backward, no recomputation)"; }),
           Computed("palm_n",
                    [](const T&) { return "active parameters less untied token embedding and position tables"; })),
    Computed("batch", [](const T& r) { return r.report.options.batch; }),
    Computed("seq_len", [](const T& r) { return r.report.options.seq_len; }),
    Computed("tokens", [](const T& r) { return r.report.tokens; }),
    // A sweep prints its points (and chart) instead of the single run's table.
    If([](const T& r) { return !r.sweep_variable.empty(); },
       Object("sweep",  //
              Field("variable", &T::sweep_variable),
              Computed("points",
                       [](const T& r) {
                         std::vector<FlopsSweepRow> rows;
                         for (const auto& p : r.sweep) rows.push_back({p});
                         return ToJsonValue(rows);
                       })),
       If([](const T& r) { return !r.svg_path.empty(); }, Field("svg", &T::svg_path))),
    If([](const T& r) { return r.sweep_variable.empty(); },
       Computed("matmuls", [](const T& r) { return ToJsonValue(MatmulRows(r.report)); }),
       Computed("components", [](const T& r) { return ComponentsJson(r.report.component); }),
       Object("totals",  //
              Computed("forward", [](const T& r) { return r.report.forward; }),
              Computed("backward", [](const T& r) { return r.report.backward; }),
              Computed("recompute", [](const T& r) { return r.report.recompute; }),
              Computed("model", [](const T& r) { return r.report.model; }),
              Computed("training", [](const T& r) { return r.report.training; }),
              Computed("six_nd", [](const T& r) { return r.report.six_nd; }),
              Computed("six_nd_non_embedding", [](const T& r) { return r.report.six_nd_non_embedding; }),
              Computed("palm", [](const T& r) { return r.report.palm; })),
       Computed("params", [](const T& r) { return r.report.params; }),
       If([](const T& r) { return r.gpu.has_value(); },
          Computed("gpu",
                   [](const T& r) {
                     return ToJson(FlopsGpu{*r.gpu, r.precision.dtype});
                   }),
          Field("precision", &T::precision),
          If([](const T& r) { return r.step.has_value(); },
             Computed("step_time",
                      [](const T& r) {
                        return ToJson(FlopsStep{*r.step, r.training, r.steps});
                      })),
          If([](const T& r) { return r.prefill || r.decode; },
             Object("roofline", Optional("prefill", &T::prefill), Optional("decode", &T::decode))))));

LMKIT_JSON_FIELDS(MemoryBytes,  //
                  Computed("weights", [](const T& x) { return x.report.weights; }),
                  Computed("gradients", [](const T& x) { return x.report.gradients; }),
                  Computed("optimizer", [](const T& x) { return x.report.optimizer; }),
                  Computed("activations", [](const T& x) { return x.report.activations; }),
                  Computed("kv_cache", [](const T& x) { return x.report.kv_cache; }),
                  Computed("overhead", [](const T& x) { return x.report.overhead; }),
                  Computed("total", [](const T& x) { return x.report.total; }),
                  Computed("per_sequence", [](const T& x) { return x.report.per_sequence; }),
                  Computed("fixed", [](const T& x) { return x.report.fixed; }),
                  Computed("kv_bytes_per_token", [](const T& x) { return x.report.kv_bytes_per_token; }),
                  If([](const T& x) { return x.report.options.mode == Mode::kInference; },
                     Computed("kv_bytes_per_token_gpu", [](const T& x) { return x.report.kv_bytes_per_token_gpu; }),
                     Computed("kv_heads_per_gpu", [](const T& x) { return x.report.kv_heads_per_gpu; })),
                  If([](const T& x) { return x.report.capacity_known; },
                     Computed("capacity", [](const T& x) { return x.report.options.capacity_bytes; }),
                     Computed("fits", [](const T& x) { return x.report.fits; }),
                     Computed("max_batch", [](const T& x) { return x.report.max_batch; })));

LMKIT_JSON_FIELDS(MemorySweepRow,  //
                  Computed("value", [](const T& p) { return p.point.label; }),
                  Computed("memory", [](const T& p) { return ToJson(MemoryBytes{p.point.report}); }));

LMKIT_JSON_FIELDS(MemoryResult,  //
                  Field("model", &T::model),
                  Object("options",  //
                         Computed("mode", [](const T& r) { return r.report.options.mode; }),
                         Computed("dtype", [](const T& r) { return r.report.options.dtype; }),
                         Computed("optimizer", [](const T& r) { return r.report.options.optimizer; }),
                         Computed("recompute", [](const T& r) { return r.report.options.recompute; }),
                         Computed("activations", [](const T& r) { return r.report.options.activations; }),
                         Computed("zero", [](const T& r) { return r.report.options.zero; }),
                         Computed("gpus", [](const T& r) { return r.report.options.gpus; }),
                         Computed("batch", [](const T& r) { return r.report.options.batch; }),
                         Computed("seq_len", [](const T& r) { return r.report.options.seq_len; }),
                         Computed("overhead_bytes", [](const T& r) { return r.report.options.overhead_bytes; }),
                         If([](const T& r) { return r.report.options.mode == Mode::kInference; },
                            Computed("kv_dtype", [](const T& r) { return r.report.kv_dtype; }),
                            Computed("quant_scope", [](const T& r) { return r.report.options.quant_scope; }))),
                  If([](const T& r) { return r.gpu.has_value(); },
                     Object("gpu",  //
                            Computed("name", [](const T& r) { return r.gpu->name; }),
                            Computed("memory_bytes", [](const T& r) { return r.gpu->memory_bytes; }),
                            Computed("source", [](const T& r) { return r.gpu->source; }))),
                  Computed("params", [](const T& r) { return r.report.params; }),
                  If([](const T& r) { return !r.sweep_variable.empty(); },
                     Object("sweep",  //
                            Field("variable", &T::sweep_variable),
                            Computed("points",
                                     [](const T& r) {
                                       std::vector<MemorySweepRow> rows;
                                       for (const auto& p : r.sweep) rows.push_back({p});
                                       return ToJsonValue(rows);
                                     })),
                     If([](const T& r) { return !r.svg_path.empty(); }, Field("svg", &T::svg_path))),
                  If([](const T& r) { return r.sweep_variable.empty(); },
                     Object("bytes_per_param",  //
                            Computed("weights", [](const T& r) { return r.report.weight_bytes_per_param; }),
                            Computed("gradients", [](const T& r) { return r.report.grad_bytes_per_param; }),
                            Computed("optimizer", [](const T& r) { return r.report.optimizer_bytes_per_param; })),
                     Computed("memory", [](const T& r) { return ToJson(MemoryBytes{r.report}); }),
                     Computed("activations_counted", [](const T& r) { return r.report.activations_counted; }),
                     If([](const T& r) { return !r.report.weights_counted.empty(); },
                        Computed("weights_counted", [](const T& r) { return r.report.weights_counted; }))));

Json ModelJson(const ModelSpec& m) { return ToJson(m); }
Json ParamsJson(const ParameterCounts& p) { return ToJson(p); }
Json GpuJson(const GpuSpec& g) { return ToJson(g); }
Json FlopsJson(const FlopsResult& r) { return r.layout ? TrainingJson(*r.layout) : ToJson(r); }
Json MemoryJson(const MemoryResult& r) { return r.layout ? TrainingJson(*r.layout) : ToJson(r); }

}  // namespace lmkit::present
