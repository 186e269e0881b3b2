#include "lmkit/present/accounting_training.h"

#include "lmkit/common/units.h"
#include "lmkit/present/accounting_json_fields.h"
#include "lmkit/present/chart.h"

namespace lmkit::present {

using namespace accounting;

namespace {

std::string GB(uint64_t b) { return Human(static_cast<double>(b), "B"); }

std::string ModelLines(const TrainingResult& r, Format f) {
  std::string out = TextLine("model: " + r.model.name + " (" + r.model.source + ")", f);
  out += TextLine(DescribeModel(r.model), f);
  if (r.gpu) out += TextLine("GPU: " + r.gpu->name + ", " + Human(r.gpu->memory_bytes, "B"), f);
  return out;
}

std::string MemoryText(const TrainingResult& r, Format f) {
  const TrainingMemoryReport& x = *r.memory;
  std::string out;
  Table t;
  const bool all = r.request.per_stage;
  t.title = all ? "Memory per GPU by pipeline stage"
                : "Memory per GPU on the most loaded stage (" + std::to_string(x.most_loaded) + " of " +
                      std::to_string(x.stages.size()) + ")";
  t.header = {"stage",       "layers",    "params", "weights",  "gradients", "optimizer",
              "activations", "in flight", "logits", "overhead", "total"};
  t.numeric = {true, true, true, true, true, true, true, true, true, true, true};
  for (const auto& s : x.stages) {
    if (!all && s.stage != x.most_loaded) continue;
    std::string name = std::to_string(s.stage);
    if (s.embedding) name += " (embedding)";
    if (s.lm_head) name += " (head)";
    t.Add({name, std::to_string(s.layers), Grouped(s.params), GB(s.weights), GB(s.gradients), GB(s.optimizer),
           GB(s.activations), std::to_string(s.in_flight), GB(s.logits), GB(s.overhead), GB(s.total)});
  }
  out += BlockGap(f) + RenderTable(t, f);
  out += TextLine("bytes/param: weights " + Fixed(x.weight_bytes_per_param, 0) + ", gradients " +
                      Fixed(x.grad_bytes_per_param, 0) + ", optimizer " + Fixed(x.optimizer_bytes_per_param, 0) +
                      (x.layout.layout.zero > 0 ? " (ZeRO-" + std::to_string(x.layout.layout.zero) +
                                                      " over DP x CP; experts over their DP group of " +
                                                      std::to_string(x.layout.expert_dp) + ")"
                                                : ""),
                  f);
  out += TextLine("activations: " + x.activations_counted, f);
  const MegatronMemory& mg = x.megatron;
  const auto& top = x.stages[static_cast<size_t>(x.most_loaded)];
  const bool megatron = r.request.convention == MemoryConvention::kMegatron;
  Table c;
  c.title = megatron ? "Megatron-LM convention (theoretical_memory_usage.py), most loaded shard"
                     : "Beside Megatron-LM's estimate (--convention megatron)";
  c.header = {"", "weights + optimizer", "activations", "sum"};
  c.numeric = {false, true, true, true};
  c.Add({"megatron", Grouped(mg.weight_and_optimizer), Grouped(mg.activations),
         GB(mg.weight_and_optimizer + mg.activations)});
  const uint64_t lm_wo = top.weights + top.gradients + top.optimizer, lm_act = top.activations + top.logits;
  c.Add({"lmkit", Grouped(lm_wo), Grouped(lm_act), GB(lm_wo + lm_act)});
  // The convention asked for comes first.
  out = megatron ? BlockGap(f) + RenderTable(c, f) + out : out + BlockGap(f) + RenderTable(c, f);
  out += TextLine(std::string("Megatron: 18 B/param (bf16 weights, fp32 main gradients, fp32 Adam), 6 + 12/DP with the "
                              "distributed optimizer; vocabulary padded to ") +
                      Grouped(mg.padded_vocab) + "; activations of the first stage by its " +
                      (mg.sp_selective_path ? "SP + selective" : "without-SP") +
                      " formula (MLP taken as the dense width; no logits past PP 1). lmkit counts the gradients at "
                      "the training dtype, every stage's own layers and in-flight micro-batches, the model's "
                      "attention/MLP/expert widths, and the last stage's fp32 logits (docs/accounting.md).",
                  f);
  if (x.capacity_known) {
    const uint64_t headline = megatron ? mg.weight_and_optimizer + mg.activations : top.total;
    out += TextLine(std::string(x.fits ? "fits" : "does not fit") + " in " + Human(x.options.capacity_bytes, "B") +
                        " per GPU (lmkit's most loaded stage " + GB(top.total) +
                        (megatron ? ", Megatron's " + GB(headline) : "") + ")",
                    f);
  }
  return out;
}

std::string StepText(const TrainingResult& r, Format f) {
  const TrainingStepReport& s = *r.step;
  Table t;
  t.title = "Training step (slowest stage " + std::to_string(s.slowest_stage) + ")";
  t.header = {"part", "seconds", "share", "bytes per GPU", "link"};
  t.numeric = {false, true, true, true, false};
  for (const auto& p : s.parts) {
    if (p.seconds == 0 && p.bytes == 0) continue;  // a parallelism the layout does not use
    std::string link = p.link_bytes_per_s > 0
                           ? Human(p.link_bytes_per_s, "B") + "/s" + (p.inter_node ? " inter-node" : " intra-node")
                           : "";
    t.Add({p.name, Seconds(p.seconds), Percent(s.step_s > 0 ? p.seconds / s.step_s : 0),
           p.bytes > 0 ? Human(p.bytes, "B") : "", link});
  }
  t.Add({"step", Seconds(s.step_s), "100.00%", "", ""});
  std::string out = BlockGap(f) + RenderTable(t, f);
  out += TextLine("bound by " + s.bound + "; " + Grouped(static_cast<uint64_t>(s.tokens_per_s_per_gpu)) +
                      " tokens/s per GPU; MFU " + Percent(s.mfu) + " (compute at peak " + Human(s.peak, "FLOP/s") +
                      "; pipeline bubble (pp-1)/(vpp*m) = " + Percent(s.bubble_fraction) + ")",
                  f);
  if (s.options.mfu)
    out += TextLine("at MFU " + Percent(*s.options.mfu) + ": step " + Seconds(s.at_mfu_step_s) + ", " +
                        Grouped(static_cast<uint64_t>(s.at_mfu_tokens_per_s_per_gpu)) + " tokens/s per GPU",
                    f);
  out += TextLine("model FLOPs per step " + Human(s.model_flops, "FLOP") + " (hardware, with recomputation " +
                      Human(s.hardware_flops, "FLOP") + ")",
                  f);
  return out;
}

std::string SearchText(const TrainingResult& r, Format f) {
  const LayoutSearchResult& s = *r.search;
  std::string out = TextLine(std::to_string(s.evaluated) + " layouts of " + std::to_string(s.options.gpus) +
                                 " GPUs enumerated, " + std::to_string(s.valid) + " valid for this model, " +
                                 std::to_string(s.fitting) + " fit in " + Human(s.options.capacity_bytes, "B"),
                             f);
  Table t;
  t.title = "Layouts that fit, fastest first";
  t.header = {"#", "layout", "memory", "step", "tokens/s/GPU", "MFU", "bound"};
  t.numeric = {true, false, true, true, true, true, false};
  int i = 0;
  for (const auto& c : s.best)
    t.Add({std::to_string(++i), c.description, GB(c.peak_bytes), Seconds(c.step_s),
           Grouped(static_cast<uint64_t>(c.tokens_per_s_per_gpu)), Percent(c.mfu), c.bound});
  out += BlockGap(f) + RenderTable(t, f);
  if (!s.near_misses.empty()) {
    Table n;
    n.title = "Fastest layouts that do not fit, and the cheapest change that would";
    n.header = {"layout", "memory", "step", "change", "step after"};
    n.numeric = {false, true, true, false, true};
    for (const auto& c : s.near_misses)
      n.Add({c.description, GB(c.peak_bytes), Seconds(c.step_s), c.change.empty() ? "none found" : c.change,
             c.change.empty() ? "" : Seconds(c.change_step_s)});
    out += BlockGap(f) + RenderTable(n, f);
  }
  Table w;
  w.title = "Why layouts were rejected";
  w.header = {"layouts", "reason"};
  w.numeric = {true, false};
  for (const auto& [why, count] : s.rejected) w.Add({Grouped(static_cast<uint64_t>(count)), why});
  out += BlockGap(f) + RenderTable(w, f);
  return out;
}

}  // namespace

std::string RenderTraining(const TrainingResult& r, Format f, bool step_first) {
  std::string out = ModelLines(r, f);
  if (r.search) return out + SearchText(r, f);
  out += TextLine("layout: " + DescribeLayout(r.memory->layout) + ", seq " + std::to_string(r.request.seq_len), f);
  if (step_first && r.step) out += StepText(r, f);
  out += MemoryText(r, f);
  if (!step_first && r.step) out += StepText(r, f);
  for (const auto& n : r.model.notes) out += TextLine("note: " + n, f);
  return out;
}

namespace {

// The search's rejections as {reason, layouts} rows.
struct Rejection {
  std::string reason;
  int64_t layouts;
};

struct TrainingMemoryView {
  const TrainingResult& result;
  const TrainingMemoryReport& Report() const { return *result.memory; }
};

}  // namespace

LMKIT_JSON_FIELDS(
    ResolvedLayout,  //
    Computed("tp", [](const T& r) { return r.layout.tp; }), Computed("pp", [](const T& r) { return r.layout.pp; }),
    Computed("vpp", [](const T& r) { return r.layout.vpp; }), Computed("cp", [](const T& r) { return r.layout.cp; }),
    Computed("ep", [](const T& r) { return r.layout.ep; }), Computed("etp", [](const T& r) { return r.layout.etp; }),
    Computed("dp", [](const T& r) { return r.layout.dp; }), Field("gpus", &T::world),
    Computed("sequence_parallel", [](const T& r) { return r.layout.sequence_parallel; }),
    Computed("micro_batch", [](const T& r) { return r.layout.micro_batch; }),
    Computed("global_batch", [](const T& r) { return r.layout.global_batch; }),
    Field("micro_batches", &T::micro_batches), Computed("zero", [](const T& r) { return r.layout.zero; }),
    Computed("recompute", [](const T& r) { return r.layout.recompute; }), Field("expert_dp", &T::expert_dp),
    Field("seq_len", &T::seq_len), Field("chunk_layers", &T::chunk_layers),
    Computed("description", [](const T& r) { return DescribeLayout(r); }));

LMKIT_JSON_FIELDS(LayoutCandidate,  //
                  Field("layout", &T::description), Computed("tp", [](const T& c) { return c.layout.tp; }),
                  Computed("pp", [](const T& c) { return c.layout.pp; }),
                  Computed("vpp", [](const T& c) { return c.layout.vpp; }),
                  Computed("cp", [](const T& c) { return c.layout.cp; }),
                  Computed("ep", [](const T& c) { return c.layout.ep; }),
                  Computed("dp", [](const T& c) { return c.layout.dp; }),
                  Computed("micro_batch", [](const T& c) { return c.layout.micro_batch; }),
                  Computed("zero", [](const T& c) { return c.layout.zero; }),
                  Computed("recompute", [](const T& c) { return c.layout.recompute; }),
                  Field("memory_bytes", &T::peak_bytes), Field("step_s", &T::step_s), Field("mfu", &T::mfu),
                  Field("tokens_per_s_per_gpu", &T::tokens_per_s_per_gpu), Field("bound", &T::bound),
                  If([](const T& c) { return !c.change.empty(); },
                     Object("cheapest_change", Field("change", &T::change), Field("layout", &T::change_layout),
                            Field("step_s", &T::change_step_s))));

LMKIT_JSON_FIELDS(Rejection, Field("reason", &T::reason), Field("layouts", &T::layouts));

LMKIT_JSON_FIELDS(LayoutSearchResult,  //
                  Computed("gpus", [](const T& s) { return s.options.gpus; }),
                  Computed("seq_len", [](const T& s) { return s.options.seq_len; }),
                  Computed("global_batch", [](const T& s) { return s.options.global_batch; }),
                  Computed("capacity_bytes", [](const T& s) { return s.options.capacity_bytes; }),
                  Field("evaluated", &T::evaluated), Field("valid", &T::valid), Field("fitting", &T::fitting),
                  Field("best", &T::best), Field("near_misses", &T::near_misses), Computed("rejected", [](const T& s) {
                    std::vector<Rejection> rows;
                    for (const auto& [reason, count] : s.rejected) rows.push_back({reason, count});
                    return ToJsonValue(rows);
                  }));

LMKIT_JSON_FIELDS(StageMemory,  //
                  Field("stage", &T::stage), Field("layers", &T::layers), Field("embedding", &T::embedding),
                  Field("lm_head", &T::lm_head), Field("params", &T::params), Field("expert_params", &T::expert_params),
                  Field("weights", &T::weights), Field("gradients", &T::gradients), Field("optimizer", &T::optimizer),
                  Field("in_flight", &T::in_flight), Field("activations", &T::activations), Field("logits", &T::logits),
                  Field("overhead", &T::overhead), Field("total", &T::total));

LMKIT_JSON_FIELDS(
    TrainingMemoryView,  //
    Computed("convention",
             [](const T& v) {
               return v.result.request.convention == MemoryConvention::kMegatron ? "megatron" : "lmkit";
             }),
    Object("bytes_per_param",  //
           Computed("weights", [](const T& v) { return v.Report().weight_bytes_per_param; }),
           Computed("gradients", [](const T& v) { return v.Report().grad_bytes_per_param; }),
           Computed("optimizer", [](const T& v) { return v.Report().optimizer_bytes_per_param; })),
    Computed("most_loaded_stage", [](const T& v) { return v.Report().most_loaded; }),
    Computed("most_loaded_total",
             [](const T& v) { return v.Report().stages[static_cast<size_t>(v.Report().most_loaded)].total; }),
    Computed("stages", [](const T& v) { return ToJsonValue(v.Report().stages); }),
    Computed("activation_bytes_per_layer", [](const T& v) { return v.Report().activation_bytes_per_layer; }),
    Computed("activations_counted", [](const T& v) { return v.Report().activations_counted; }),
    Object("megatron",  //
           Computed("weight_and_optimizer", [](const T& v) { return v.Report().megatron.weight_and_optimizer; }),
           Computed("activations", [](const T& v) { return v.Report().megatron.activations; }),
           Computed("total",
                    [](const T& v) {
                      return v.Report().megatron.weight_and_optimizer + v.Report().megatron.activations;
                    }),
           Computed("params_most_loaded", [](const T& v) { return v.Report().megatron.params_most_loaded; }),
           Computed("padded_vocab", [](const T& v) { return v.Report().megatron.padded_vocab; }),
           Computed("activation_formula",
                    [](const T& v) { return v.Report().megatron.sp_selective_path ? "sp_selective" : "without_sp"; }),
           If([](const T& v) { return v.Report().capacity_known; },
              Computed("fits",
                       [](const T& v) {
                         const TrainingMemoryReport& x = v.Report();
                         return static_cast<double>(x.megatron.weight_and_optimizer + x.megatron.activations) <=
                                x.options.capacity_bytes;
                       }))),
    If([](const T& v) { return v.Report().capacity_known; },
       Computed("capacity_bytes", [](const T& v) { return v.Report().options.capacity_bytes; }),
       Computed("fits", [](const T& v) { return v.Report().fits; })));

LMKIT_JSON_FIELDS(StepPart,  //
                  Field("name", &T::name), Field("seconds", &T::seconds), Field("bytes", &T::bytes),
                  Field("link_bytes_per_s", &T::link_bytes_per_s), Field("inter_node", &T::inter_node));

LMKIT_JSON_FIELDS(TrainingStepReport,  //
                  Field("seconds", &T::step_s), Field("parts", &T::parts), Field("bound", &T::bound),
                  Field("slowest_stage", &T::slowest_stage), Field("bubble_fraction", &T::bubble_fraction),
                  Field("tokens_per_s_per_gpu", &T::tokens_per_s_per_gpu), Field("mfu", &T::mfu),
                  Field("model_flops", &T::model_flops), Field("hardware_flops", &T::hardware_flops),
                  Field("peak_flops", &T::peak), Field("intra_node_bytes_per_s", &T::intra_node_bytes_per_s),
                  Computed("inter_node_bytes_per_s", [](const T& s) { return s.options.inter_node_bytes_per_s; }),
                  If([](const T& s) { return s.options.mfu.has_value(); },
                     Object("at_mfu",  //
                            Computed("mfu", [](const T& s) { return *s.options.mfu; }),
                            Field("seconds", &T::at_mfu_step_s),
                            Field("tokens_per_s_per_gpu", &T::at_mfu_tokens_per_s_per_gpu))));

LMKIT_JSON_FIELDS(TrainingResult,  //
                  Object("model",  //
                         Computed("name", [](const T& r) { return r.model.name; }),
                         Computed("source", [](const T& r) { return r.model.source; }),
                         Computed("description", [](const T& r) { return DescribeModel(r.model); })),
                  If([](const T& r) { return r.gpu.has_value(); },
                     Object("gpu",  //
                            Computed("name", [](const T& r) { return r.gpu->name; }),
                            Computed("memory_bytes", [](const T& r) { return r.gpu->memory_bytes; }))),
                  // A search lists layouts; otherwise the one layout's memory and step.
                  Optional("search", &T::search),
                  If([](const T& r) { return !r.search; },
                     Computed("layout", [](const T& r) { return ToJson(r.memory->layout); }),
                     Computed("memory", [](const T& r) { return ToJson(TrainingMemoryView{r}); }),
                     Optional("step", &T::step),
                     If([](const T& r) { return !r.request.svg_path.empty(); },
                        Computed("svg", [](const T& r) { return r.request.svg_path; }))));

Json TrainingJson(const TrainingResult& r) { return ToJson(r); }

std::string TrainingMemorySvg(const TrainingResult& r) {
  if (!r.memory) return "";
  StackedColumns c;
  c.title = r.model.name + ": memory per GPU by pipeline stage (" + DescribeLayout(r.memory->layout) + ")";
  c.shares = false;
  c.unit = "GB";
  for (const char* s : {"weights", "gradients", "optimizer", "activations", "logits"}) c.series.push_back({s});
  c.series.push_back({"overhead", Role::kReserved});
  for (const auto& s : r.memory->stages) {
    c.columns.push_back("stage " + std::to_string(s.stage));
    c.values.push_back(
        {s.weights / 1e9, s.gradients / 1e9, s.optimizer / 1e9, s.activations / 1e9, s.logits / 1e9, s.overhead / 1e9});
  }
  return StackedColumnsSvg(c);
}

std::string TrainingStepSvg(const TrainingResult& r) {
  if (!r.step) return "";
  StackedColumns c;
  c.title = r.model.name + ": training step on " + (r.gpu ? r.gpu->name : std::string("GPU")) + " (" +
            DescribeLayout(r.step->layout) + ")";
  c.shares = false;
  c.unit = "s";
  c.columns = {"step"};
  c.values.emplace_back();
  for (const auto& p : r.step->parts) {
    c.series.push_back({p.name});
    c.values.back().push_back(p.seconds);
  }
  return StackedColumnsSvg(c);
}

}  // namespace lmkit::present
