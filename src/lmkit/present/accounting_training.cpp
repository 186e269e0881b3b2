#include "lmkit/present/accounting_training.h"

#include "lmkit/common/units.h"
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

Json LayoutJson(const ResolvedLayout& r) {
  const ParallelLayout& l = r.layout;
  return {{"tp", l.tp},
          {"pp", l.pp},
          {"vpp", l.vpp},
          {"cp", l.cp},
          {"ep", l.ep},
          {"etp", l.etp},
          {"dp", l.dp},
          {"gpus", r.world},
          {"sequence_parallel", l.sequence_parallel},
          {"micro_batch", l.micro_batch},
          {"global_batch", l.global_batch},
          {"micro_batches", r.micro_batches},
          {"zero", l.zero},
          {"recompute", RecomputeName(l.recompute)},
          {"expert_dp", r.expert_dp},
          {"seq_len", r.seq_len},
          {"chunk_layers", r.chunk_layers},
          {"description", DescribeLayout(r)}};
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

Json TrainingJson(const TrainingResult& r) {
  Json j;
  j["model"] = {{"name", r.model.name}, {"source", r.model.source}, {"description", DescribeModel(r.model)}};
  if (r.gpu) j["gpu"] = {{"name", r.gpu->name}, {"memory_bytes", r.gpu->memory_bytes}};
  if (r.search) {
    const LayoutSearchResult& s = *r.search;
    auto cand = [](const LayoutCandidate& c) {
      Json x = {{"layout", c.description},
                {"tp", c.layout.tp},
                {"pp", c.layout.pp},
                {"vpp", c.layout.vpp},
                {"cp", c.layout.cp},
                {"ep", c.layout.ep},
                {"dp", c.layout.dp},
                {"micro_batch", c.layout.micro_batch},
                {"zero", c.layout.zero},
                {"recompute", RecomputeName(c.layout.recompute)},
                {"memory_bytes", c.peak_bytes},
                {"step_s", c.step_s},
                {"mfu", c.mfu},
                {"tokens_per_s_per_gpu", c.tokens_per_s_per_gpu},
                {"bound", c.bound}};
      if (!c.change.empty())
        x["cheapest_change"] = {{"change", c.change}, {"layout", c.change_layout}, {"step_s", c.change_step_s}};
      return x;
    };
    Json best = Json::array(), near = Json::array(), why = Json::array();
    for (const auto& c : s.best) best.push_back(cand(c));
    for (const auto& c : s.near_misses) near.push_back(cand(c));
    for (const auto& [reason, count] : s.rejected) why.push_back({{"reason", reason}, {"layouts", count}});
    j["search"] = {{"gpus", s.options.gpus},
                   {"seq_len", s.options.seq_len},
                   {"global_batch", s.options.global_batch},
                   {"capacity_bytes", s.options.capacity_bytes},
                   {"evaluated", s.evaluated},
                   {"valid", s.valid},
                   {"fitting", s.fitting},
                   {"best", best},
                   {"near_misses", near},
                   {"rejected", why}};
    return j;
  }
  const TrainingMemoryReport& x = *r.memory;
  j["layout"] = LayoutJson(x.layout);
  Json stages = Json::array();
  for (const auto& s : x.stages)
    stages.push_back({{"stage", s.stage},
                      {"layers", s.layers},
                      {"embedding", s.embedding},
                      {"lm_head", s.lm_head},
                      {"params", s.params},
                      {"expert_params", s.expert_params},
                      {"weights", s.weights},
                      {"gradients", s.gradients},
                      {"optimizer", s.optimizer},
                      {"in_flight", s.in_flight},
                      {"activations", s.activations},
                      {"logits", s.logits},
                      {"overhead", s.overhead},
                      {"total", s.total}});
  const auto& top = x.stages[static_cast<size_t>(x.most_loaded)];
  j["memory"] = {{"convention", r.request.convention == MemoryConvention::kMegatron ? "megatron" : "lmkit"},
                 {"bytes_per_param",
                  {{"weights", x.weight_bytes_per_param},
                   {"gradients", x.grad_bytes_per_param},
                   {"optimizer", x.optimizer_bytes_per_param}}},
                 {"most_loaded_stage", x.most_loaded},
                 {"most_loaded_total", top.total},
                 {"stages", stages},
                 {"activation_bytes_per_layer", x.activation_bytes_per_layer},
                 {"activations_counted", x.activations_counted},
                 {"megatron",
                  {{"weight_and_optimizer", x.megatron.weight_and_optimizer},
                   {"activations", x.megatron.activations},
                   {"total", x.megatron.weight_and_optimizer + x.megatron.activations},
                   {"params_most_loaded", x.megatron.params_most_loaded},
                   {"padded_vocab", x.megatron.padded_vocab},
                   {"activation_formula", x.megatron.sp_selective_path ? "sp_selective" : "without_sp"}}}};
  if (x.capacity_known) {
    j["memory"]["capacity_bytes"] = x.options.capacity_bytes;
    j["memory"]["fits"] = x.fits;
    j["memory"]["megatron"]["fits"] =
        static_cast<double>(x.megatron.weight_and_optimizer + x.megatron.activations) <= x.options.capacity_bytes;
  }
  if (r.step) {
    const TrainingStepReport& s = *r.step;
    Json parts = Json::array();
    for (const auto& p : s.parts)
      parts.push_back({{"name", p.name},
                       {"seconds", p.seconds},
                       {"bytes", p.bytes},
                       {"link_bytes_per_s", p.link_bytes_per_s},
                       {"inter_node", p.inter_node}});
    j["step"] = {{"seconds", s.step_s},
                 {"parts", parts},
                 {"bound", s.bound},
                 {"slowest_stage", s.slowest_stage},
                 {"bubble_fraction", s.bubble_fraction},
                 {"tokens_per_s_per_gpu", s.tokens_per_s_per_gpu},
                 {"mfu", s.mfu},
                 {"model_flops", s.model_flops},
                 {"hardware_flops", s.hardware_flops},
                 {"peak_flops", s.peak},
                 {"intra_node_bytes_per_s", s.intra_node_bytes_per_s},
                 {"inter_node_bytes_per_s", s.options.inter_node_bytes_per_s}};
    if (s.options.mfu)
      j["step"]["at_mfu"] = {{"mfu", *s.options.mfu},
                             {"seconds", s.at_mfu_step_s},
                             {"tokens_per_s_per_gpu", s.at_mfu_tokens_per_s_per_gpu}};
  }
  if (!r.request.svg_path.empty()) j["svg"] = r.request.svg_path;
  return j;
}

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
