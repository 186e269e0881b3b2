// `flops` and `memory` as the JSON documents --json prints (integers exact: FLOPs and bytes as uint64).
#include "lmkit/present/accounting_json.h"

#include "lmkit/common/units.h"
#include "lmkit/present/accounting.h"

namespace lmkit::present {

using namespace accounting;  // NOLINT: this file prints accounting's types and nothing else

Json ModelJson(const ModelSpec& m) {
  Json j;
  j["name"] = m.name;
  j["source"] = m.source;
  j["family"] = m.family;
  j["layers"] = m.layers;
  j["d_model"] = m.d_model;
  j["heads"] = m.heads;
  j["kv_heads"] = m.kv_heads;
  j["head_dim"] = m.head_dim;
  j["d_ff"] = m.d_ff;
  j["vocab"] = m.vocab;
  j["ffn"] = std::string(EnumNameOf(FfnNames(), m.ffn));
  j["norm"] = std::string(EnumNameOf(NormNames(), m.norm));
  j["tied"] = m.tied;
  if (!m.activation.empty()) j["activation"] = m.activation;
  if (m.norms_per_layer != 2) j["norms_per_layer"] = m.norms_per_layer;
  if (m.parallel_block) j["parallel_block"] = true;
  if (m.attn_softcap > 0) j["attn_logit_softcap"] = m.attn_softcap;
  if (m.final_softcap > 0) j["final_logit_softcap"] = m.final_softcap;
  if (m.mla) {
    j["mla"] = {{"q_lora_rank", m.mla_spec.q_lora_rank},
                {"kv_lora_rank", m.mla_spec.kv_lora_rank},
                {"qk_nope_head_dim", m.mla_spec.qk_nope_head_dim},
                {"qk_rope_head_dim", m.mla_spec.qk_rope_head_dim},
                {"v_head_dim", m.mla_spec.v_head_dim}};
  }
  if (m.is_moe()) {
    j["moe"] = {{"routed_experts", m.moe.routed_experts},
                {"top_k", m.moe.top_k},
                {"expert_d_ff", m.moe.expert_d_ff},
                {"shared_d_ff", m.moe.shared_d_ff}};
  }
  Json kinds = Json::array();
  for (const auto& k : m.kinds)
    kinds.push_back({{"name", k.name}, {"count", k.count}, {"moe", k.moe}, {"window", k.window}});
  j["layer_kinds"] = kinds;
  j["notes"] = m.notes;
  return j;
}

Json ParamsJson(const ParameterCounts& p) {
  return Json{
      {"total", p.total},   {"embedding", p.embedding}, {"lm_head", p.lm_head}, {"non_embedding", p.non_embedding},
      {"active", p.active}, {"attention", p.attention}, {"ffn", p.ffn},         {"router", p.router},
      {"norms", p.norms},   {"linear", p.linear},       {"vision", p.vision}};
}

Json GpuJson(const GpuSpec& g) {
  return Json{{"name", g.name},
              {"memory_bytes", g.memory_bytes},
              {"bandwidth_bytes_per_s", g.bandwidth_bytes_per_s},
              {"interconnect_bytes_per_s", g.interconnect_bytes_per_s},
              {"source", g.source}};
}

namespace {

Json RooflineJson(const Roofline& r) {
  Json rows = Json::array();
  for (const auto& x : r.rows) {
    rows.push_back({{"layer_kind", x.op.layer_kind},
                    {"name", x.op.name},
                    {"m", x.op.m},
                    {"k", x.op.k},
                    {"n", x.op.n},
                    {"count", x.op.count},
                    {"flops", x.op.flops},
                    {"bytes", x.bytes},
                    {"intensity", x.intensity},
                    {"time_s", x.time_s},
                    {"bound", x.compute_bound ? "compute" : "memory"}});
  }
  return Json{{"peak_flops", r.peak},
              {"bandwidth_bytes_per_s", r.bandwidth},
              {"ridge_flops_per_byte", r.ridge},
              {"attention", std::string(EnumNameOf(AttentionNames(), r.attention))},
              {"flops", r.flops},
              {"bytes", r.bytes},
              {"compute_s", r.compute_s},
              {"memory_s", r.memory_s},
              {"time_s", r.time_s},
              {"matmuls", rows}};
}

Json StepJson(const StepTime& s) {
  return Json{{"flops", s.flops},     {"hardware_flops", s.hardware_flops}, {"mfu", s.mfu}, {"hfu", s.hfu},
              {"seconds", s.seconds}, {"tokens_per_s", s.tokens_per_s}};
}

Json ComponentsJson(const uint64_t (&component)[kComponentCount]) {
  Json j;
  for (int c = 0; c < kComponentCount; ++c) j[ComponentName(static_cast<Component>(c))] = component[c];
  return j;
}

}  // namespace

Json FlopsJson(const FlopsResult& r) {
  const FlopsReport& rep = r.report;
  const FlopsOptions& o = rep.options;
  Json j;
  j["model"] = ModelJson(r.model);
  j["conventions"] = {{"flop_per_mac", 2},
                      {"causal", o.causal_half ? "half" : "full"},
                      {"lm_head_counted", o.lm_head},
                      {"embedding_lookup_counted", false},
                      {"softmax_counted", o.softmax_flops},
                      {"backward_over_forward", 2},
                      {"recompute", RecomputeName(o.recompute)},
                      {"mfu_counts", "model FLOPs (forward + backward, no recomputation)"},
                      {"palm_n", "active parameters less untied token embedding and position tables"}};
  j["batch"] = o.batch;
  j["seq_len"] = o.seq_len;
  j["tokens"] = rep.tokens;
  if (!r.sweep_variable.empty()) {
    Json pts = Json::array();
    for (const auto& p : r.sweep) {
      Json pt = {{"value", p.label},
                 {"tokens", p.report.tokens},
                 {"forward", p.report.forward},
                 {"training", p.report.training},
                 {"components", ComponentsJson(p.report.component)},
                 {"params", ParamsJson(p.report.params)}};
      if (p.step)
        pt["step_time"] = {{"seconds", p.step->seconds}, {"tokens_per_s", p.step->tokens_per_s}, {"hfu", p.step->hfu}};
      pts.push_back(pt);
    }
    j["sweep"] = {{"variable", r.sweep_variable}, {"points", pts}};
    if (!r.svg_path.empty()) j["svg"] = r.svg_path;
    return j;
  }
  Json rows = Json::array();
  for (const auto& x : rep.matmuls)
    rows.push_back({{"layer_kind", x.layer_kind},
                    {"name", x.name},
                    {"component", ComponentName(x.component)},
                    {"m", x.m},
                    {"k", x.k},
                    {"n", x.n},
                    {"count", x.count},
                    {"flops", x.flops},
                    {"share", ShareOf(x.flops, rep.forward)}});
  j["matmuls"] = rows;
  j["components"] = ComponentsJson(rep.component);
  j["totals"] = {{"forward", rep.forward},
                 {"backward", rep.backward},
                 {"recompute", rep.recompute},
                 {"model", rep.model},
                 {"training", rep.training},
                 {"six_nd", rep.six_nd},
                 {"six_nd_non_embedding", rep.six_nd_non_embedding},
                 {"palm", rep.palm}};
  j["params"] = ParamsJson(rep.params);
  if (r.gpu) {
    Json g = GpuJson(*r.gpu);
    g["dtype"] = DtypeName(r.precision.dtype);
    g["peak_flops"] = r.gpu->PeakFlops(r.precision.dtype);
    j["gpu"] = g;
    j["precision"] = {{"weights", DtypeName(r.precision.dtype)},
                      {"quant_scope", std::string(EnumNameOf(QuantScopeNames(), r.precision.scope))},
                      {"activation_bytes", r.precision.ActivationBytes()},
                      {"kv_cache", DtypeName(r.precision.kv_dtype)}};
    if (r.step) {
      Json st = StepJson(*r.step);
      st["step"] = r.training ? "training" : "forward";
      if (r.steps > 0) st["total_seconds"] = r.step->seconds * static_cast<double>(r.steps);
      j["step_time"] = st;
    }
    if (r.prefill) j["roofline"]["prefill"] = RooflineJson(*r.prefill);
    if (r.decode) j["roofline"]["decode"] = RooflineJson(*r.decode);
  }
  return j;
}

namespace {

Json MemoryReportJson(const MemoryReport& x) {
  Json j = {{"weights", x.weights},     {"gradients", x.gradients},
            {"optimizer", x.optimizer}, {"activations", x.activations},
            {"kv_cache", x.kv_cache},   {"overhead", x.overhead},
            {"total", x.total},         {"per_sequence", x.per_sequence},
            {"fixed", x.fixed},         {"kv_bytes_per_token", x.kv_bytes_per_token}};
  if (x.options.mode == Mode::kInference) {
    j["kv_bytes_per_token_gpu"] = x.kv_bytes_per_token_gpu;
    j["kv_heads_per_gpu"] = x.kv_heads_per_gpu;
  }
  if (x.capacity_known) {
    j["capacity"] = x.options.capacity_bytes;
    j["fits"] = x.fits;
    j["max_batch"] = x.max_batch;
  }
  return j;
}

}  // namespace

Json MemoryJson(const MemoryResult& r) {
  const MemoryReport& x = r.report;
  const MemoryOptions& o = x.options;
  Json j;
  j["model"] = ModelJson(r.model);
  j["options"] = {{"mode", ModeName(o.mode)},
                  {"dtype", DtypeName(o.dtype)},
                  {"optimizer", OptimizerName(o.optimizer)},
                  {"recompute", RecomputeName(o.recompute)},
                  {"activations", ActivationModelName(o.activations)},
                  {"zero", o.zero},
                  {"gpus", o.gpus},
                  {"batch", o.batch},
                  {"seq_len", o.seq_len},
                  {"overhead_bytes", o.overhead_bytes}};
  if (o.mode == Mode::kInference) {
    j["options"]["kv_dtype"] = DtypeName(x.kv_dtype);
    j["options"]["quant_scope"] = std::string(EnumNameOf(QuantScopeNames(), o.quant_scope));
  }
  if (r.gpu) j["gpu"] = {{"name", r.gpu->name}, {"memory_bytes", r.gpu->memory_bytes}, {"source", r.gpu->source}};
  j["params"] = ParamsJson(x.params);
  if (!r.sweep_variable.empty()) {
    Json pts = Json::array();
    for (const auto& p : r.sweep) pts.push_back({{"value", p.label}, {"memory", MemoryReportJson(p.report)}});
    j["sweep"] = {{"variable", r.sweep_variable}, {"points", pts}};
    if (!r.svg_path.empty()) j["svg"] = r.svg_path;
    return j;
  }
  j["bytes_per_param"] = {{"weights", x.weight_bytes_per_param},
                          {"gradients", x.grad_bytes_per_param},
                          {"optimizer", x.optimizer_bytes_per_param}};
  j["memory"] = MemoryReportJson(x);
  j["activations_counted"] = x.activations_counted;
  if (!x.weights_counted.empty()) j["weights_counted"] = x.weights_counted;
  return j;
}

}  // namespace lmkit::present
