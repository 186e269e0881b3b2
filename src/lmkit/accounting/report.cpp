#include "lmkit/accounting/report.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "lmkit/accounting/table.h"

namespace lmkit::accounting {
namespace {

TableStyle StyleOf(Format f) {
  return f == Format::kCsv ? TableStyle::kCsv : f == Format::kMd ? TableStyle::kMd : TableStyle::kText;
}

// A free-text line: plain in text, a comment in CSV, a paragraph in Markdown.
std::string Line(const std::string& s, Format f) {
  if (f == Format::kCsv) return "# " + s + "\n";
  return s + "\n";
}

std::string Sep(Format f) { return f == Format::kCsv ? "" : "\n"; }

Result<int64_t> ParsePositive(const std::string& s, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  // ERANGE: strtoll clamps an out-of-range number to LLONG_MAX, which would pass as a valid (huge) value.
  if (s.empty() || end == nullptr || *end != '\0' || v <= 0 || errno == ERANGE)
    return Status::InvalidArgument("--sweep " + what + ": '" + s + "' is not a positive integer");
  return static_cast<int64_t>(v);
}

// Applies one --sweep value to a copy of the options and model: seq-len and batch change the options, model replaces
// the model. Shared by the flops and memory sweeps.
template <typename Options>
Status ApplySweepValue(const std::string& variable, const std::string& value, Options* o, ModelSpec* m) {
  if (variable == "seq-len") {
    LMKIT_ASSIGN_OR_RETURN(o->seq_len, ParsePositive(value, "seq-len"));
  } else if (variable == "batch") {
    LMKIT_ASSIGN_OR_RETURN(o->batch, ParsePositive(value, "batch"));
  } else {
    LMKIT_ASSIGN_OR_RETURN(*m, ResolveModel(value));
  }
  return Status::Ok();
}

double Share(uint64_t part, uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0;
}

std::string ConventionsLine(const FlopsOptions& o) {
  std::string s = "conventions: FLOP = 2 x MAC";
  s += o.macs ? " (rows show MACs)" : "";
  s += o.causal_half ? "; causal attention halved" : "; causal attention counted in full (--causal-half halves it)";
  s += "; embedding lookup free";
  s += o.lm_head ? ", LM head counted" : ", LM head not counted";
  s += o.softmax_flops ? "; softmax 3 FLOPs per score" : "; softmax/norms/elementwise not counted";
  s += "; backward = 2 x forward";
  if (o.recompute == Recompute::kFull) s += "; full recomputation adds a forward";
  return s;
}

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
  j["ffn"] = m.ffn == FfnKind::kSwiGlu ? "swiglu" : "gelu";
  j["norm"] = m.norm == NormKind::kRmsNorm ? "rmsnorm" : "layernorm";
  j["tied"] = m.tied;
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
      {"norms", p.norms}};
}

Table ParamsTable(const ParameterCounts& p, bool moe) {
  Table t;
  t.title = "Parameters";
  t.header = {"", "count"};
  t.numeric = {false, true};
  t.Add({"total", Grouped(static_cast<uint64_t>(p.total))});
  t.Add({"embedding (token + position tables)", Grouped(static_cast<uint64_t>(p.embedding))});
  t.Add({"LM head (untied; 0 when tied)", Grouped(static_cast<uint64_t>(p.lm_head))});
  t.Add({"non-embedding (total - embedding - LM head)", Grouped(static_cast<uint64_t>(p.non_embedding))});
  t.Add({moe ? "active per token (top-k + shared experts)" : "active per token (= total, dense)",
         Grouped(static_cast<uint64_t>(p.active))});
  return t;
}

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
              {"flops", r.flops},
              {"bytes", r.bytes},
              {"compute_s", r.compute_s},
              {"memory_s", r.memory_s},
              {"time_s", r.time_s},
              {"matmuls", rows}};
}

Table RooflineTable(const Roofline& r, const std::string& title) {
  Table t;
  t.title = title;
  t.header = {"layer", "matmul", "M", "K", "N", "count", "FLOPs", "bytes", "FLOP/B", "time", "bound"};
  t.numeric = {false, false, true, true, true, true, true, true, true, true, false};
  for (const auto& x : r.rows) {
    t.Add({x.op.layer_kind, x.op.name, std::to_string(x.op.m), std::to_string(x.op.k), std::to_string(x.op.n),
           std::to_string(x.op.count), Human(static_cast<double>(x.op.flops), "FLOP"), Human(x.bytes, "B"),
           Fixed(x.intensity, 1), Seconds(x.time_s), x.compute_bound ? "compute" : "memory"});
  }
  t.Add({"total", "", "", "", "", "", Human(r.flops, "FLOP"), Human(r.bytes, "B"),
         Fixed(r.bytes > 0 ? r.flops / r.bytes : 0, 1), Seconds(r.time_s),
         r.compute_s >= r.memory_s ? "compute" : "memory"});
  return t;
}

}  // namespace

Result<Format> ParseFormat(const std::string& s) {
  if (s == "table" || s == "text") return Format::kTable;
  if (s == "json") return Format::kJson;
  if (s == "csv") return Format::kCsv;
  if (s == "md" || s == "markdown") return Format::kMd;
  return Status::InvalidArgument("--format must be table, json, csv or md (got '" + s + "')");
}

Result<Sweep> ParseSweep(const std::string& spec) {
  Sweep s;
  if (spec.empty()) return s;
  auto eq = spec.find('=');
  if (eq == std::string::npos) return Status::InvalidArgument("--sweep takes VAR=v1,v2,... (VAR: seq-len, batch, model)");
  s.variable = spec.substr(0, eq);
  if (s.variable == "seq_len" || s.variable == "seq") s.variable = "seq-len";
  if (s.variable != "seq-len" && s.variable != "batch" && s.variable != "model")
    return Status::InvalidArgument("--sweep variable must be seq-len, batch or model (got '" + s.variable + "')");
  std::string rest = spec.substr(eq + 1);
  if (rest.empty()) return Status::InvalidArgument("--sweep " + s.variable + " has no values");
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    std::string v = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    // An empty value ("1,,2", "1,") is a typo, not something to skip: the table would silently lack a point.
    if (v.empty()) return Status::InvalidArgument("--sweep " + s.variable + ": empty value in '" + rest + "'");
    s.values.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (s.values.empty()) return Status::InvalidArgument("--sweep " + s.variable + " has no values");
  if (s.variable != "model")
    for (const auto& v : s.values) LMKIT_RETURN_IF_ERROR(ParsePositive(v, s.variable).status());
  return s;
}

Result<ModelSpec> ResolveModelSource(const ModelSource& src) {
  if (!src.model.empty() && src.has_dims)
    return Status::InvalidArgument("give either MODEL or explicit dimensions (--layers ...), not both");
  if (!src.model.empty()) return ResolveModel(src.model);
  if (src.has_dims) return FromDimensions(src.dims);
  return Status::InvalidArgument("no model: give a config.json path, a preset name, or --layers/--d-model/--heads/--vocab");
}

// ---------------------------------------------------------------------------------------------------------- flops --

Result<FlopsResult> RunFlops(const FlopsRequest& req) {
  FlopsResult r;
  r.training = req.training;
  r.dtype = req.dtype;
  r.steps = req.steps;
  if (req.sweep.variable == "model") {
    if (!req.source.model.empty() || req.source.has_dims)
      return Status::InvalidArgument("--sweep model=... replaces MODEL; give one or the other");
  } else {
    LMKIT_ASSIGN_OR_RETURN(r.model, ResolveModelSource(req.source));
    LMKIT_ASSIGN_OR_RETURN(r.report, ComputeFlops(r.model, req.options));
  }
  if (!req.gpu.empty()) {
    LMKIT_ASSIGN_OR_RETURN(GpuSpec g, FindGpu(req.gpu));
    r.gpu = g;
  }
  if (req.mfu != 0 && !r.gpu) return Status::InvalidArgument("--mfu needs --gpu");
  // A negative count used to be ignored silently, printing no total at all.
  if (req.steps < 0) return Status::InvalidArgument("--steps must be positive (got " + std::to_string(req.steps) + ")");
  if (req.steps > 0 && req.mfu == 0) return Status::InvalidArgument("--steps needs --gpu and --mfu");

  if (!req.sweep.variable.empty()) {
    r.sweep_variable = req.sweep.variable;
    for (const auto& v : req.sweep.values) {
      FlopsOptions o = req.options;
      ModelSpec m = r.model;
      LMKIT_RETURN_IF_ERROR(ApplySweepValue(req.sweep.variable, v, &o, &m));
      LMKIT_ASSIGN_OR_RETURN(FlopsReport rep, ComputeFlops(m, o));
      if (req.sweep.variable == "model" && r.sweep.empty()) {
        r.model = m;
        r.report = rep;
      }
      FlopsSweepPoint point{v, std::move(rep), std::nullopt};
      if (r.gpu && req.mfu != 0) {
        uint64_t f = req.training ? point.report.training : point.report.forward;
        LMKIT_ASSIGN_OR_RETURN(
            StepTime st, EstimateStepTime(static_cast<double>(f), static_cast<double>(point.report.tokens), *r.gpu,
                                          req.dtype, req.mfu));
        point.step = st;
      }
      r.sweep.push_back(std::move(point));
    }
    r.svg_path = req.svg_path;  // the caller draws the chart (present/accounting_svg.h)
  } else if (!req.svg_path.empty()) {
    return Status::InvalidArgument("--svg needs --sweep");
  }

  if (r.gpu && req.mfu != 0) {
    uint64_t f = req.training ? r.report.training : r.report.forward;
    LMKIT_ASSIGN_OR_RETURN(StepTime st, EstimateStepTime(static_cast<double>(f), static_cast<double>(r.report.tokens),
                                                         *r.gpu, req.dtype, req.mfu));
    r.step = st;
    // JSON has no infinity (it would print total_seconds as null): a total that overflows a double is refused.
    if (req.steps > 0 && !std::isfinite(st.seconds * static_cast<double>(req.steps)))
      return Status::InvalidArgument("--steps " + std::to_string(req.steps) +
                           " x the step time overflows; use fewer steps or a larger --mfu");
  }
  if (r.gpu && req.sweep.variable.empty()) {
    LMKIT_ASSIGN_OR_RETURN(Roofline pre, ComputeRoofline(r.report.matmuls, *r.gpu, req.dtype));
    r.prefill = std::move(pre);
    LMKIT_ASSIGN_OR_RETURN(auto dec_ops, BuildDecodeMatmuls(r.model, req.options.batch, req.options.seq_len));
    LMKIT_ASSIGN_OR_RETURN(Roofline dec, ComputeRoofline(dec_ops, *r.gpu, req.dtype));
    r.decode = std::move(dec);
  }
  return r;
}

std::string RenderFlops(const FlopsResult& r, Format f) {
  const FlopsReport& rep = r.report;
  const FlopsOptions& o = rep.options;
  TableStyle st = StyleOf(f);
  std::string out;
  if (r.sweep_variable != "model") out += Line("model: " + r.model.name + " (" + r.model.source + ")", f);
  if (r.sweep_variable != "model") out += Line(DescribeModel(r.model), f);
  for (const auto& n : r.model.notes) out += Line("note: " + n, f);
  out += Line(ConventionsLine(o), f);

  if (!r.sweep_variable.empty()) {
    Table t;
    t.title = "Sweep over " + r.sweep_variable + " (forward FLOPs of one step; shares of the forward count)";
    t.header = {r.sweep_variable, "tokens", "forward FLOPs", "training FLOPs"};
    t.numeric = {false, true, true, true};
    std::vector<int> comps;
    for (int c = 0; c < kComponentCount; ++c) {
      bool any = false;
      for (const auto& p : r.sweep) any = any || p.report.component[c] > 0;
      if (any) {
        comps.push_back(c);
        t.header.emplace_back(ComponentName(static_cast<Component>(c)));
        t.numeric.push_back(true);
      }
    }
    bool timed = !r.sweep.empty() && r.sweep.front().step.has_value();
    if (timed) {
      t.header.insert(t.header.end(), {r.training ? "training step" : "forward step", "tokens/s"});
      t.numeric.insert(t.numeric.end(), {true, true});
    }
    for (const auto& p : r.sweep) {
      std::vector<std::string> row = {p.label, Grouped(p.report.tokens), Grouped(p.report.forward),
                                      Grouped(p.report.training)};
      for (int c : comps) row.push_back(Percent(Share(p.report.component[c], p.report.forward)));
      if (timed && p.step) {
        row.push_back(Seconds(p.step->seconds));
        row.push_back(Grouped(static_cast<uint64_t>(std::llround(p.step->tokens_per_s))));
      }
      t.Add(row);
    }
    out += Sep(f) + RenderTable(t, st);
    if (!r.svg_path.empty() && f != Format::kCsv) out += Sep(f) + Line("chart: " + r.svg_path, f);
    return out;
  }

  out += Line("step: batch " + std::to_string(o.batch) + " x seq-len " + std::to_string(o.seq_len) + " = " +
                  Grouped(rep.tokens) + " tokens",
              f);
  Table mm;
  mm.title = "Matmuls of one forward step";
  mm.header = {"layer", "matmul", "M", "K", "N", "count", o.macs ? "MACs" : "FLOPs", "share"};
  mm.numeric = {false, false, true, true, true, true, true, true};
  for (const auto& x : rep.matmuls)
    mm.Add({x.layer_kind, x.name, std::to_string(x.m), std::to_string(x.k), std::to_string(x.n),
            std::to_string(x.count), Grouped(o.macs ? x.flops / 2 : x.flops), Percent(Share(x.flops, rep.forward))});
  out += Sep(f) + RenderTable(mm, st);

  Table comp;
  comp.title = "Components (forward)";
  comp.header = {"component", o.macs ? "MACs" : "FLOPs", "share"};
  comp.numeric = {false, true, true};
  for (int c = 0; c < kComponentCount; ++c) {
    if (static_cast<Component>(c) == Component::kSoftmax && !o.softmax_flops) continue;
    if (static_cast<Component>(c) == Component::kRouter && rep.component[c] == 0) continue;
    comp.Add({ComponentName(static_cast<Component>(c)), Grouped(o.macs ? rep.component[c] / 2 : rep.component[c]),
              Percent(Share(rep.component[c], rep.forward))});
  }
  out += Sep(f) + RenderTable(comp, st);

  Table tot;
  tot.title = "Totals (FLOPs)";
  tot.header = {"", "FLOPs", ""};
  tot.numeric = {false, true, true};
  double training = static_cast<double>(rep.training);
  tot.Add({"forward", Grouped(rep.forward), Human(static_cast<double>(rep.forward), "FLOP")});
  tot.Add({"backward (2 x forward)", Grouped(rep.backward), Human(static_cast<double>(rep.backward), "FLOP")});
  if (rep.recompute)
    tot.Add({"recomputation (full)", Grouped(rep.recompute), Human(static_cast<double>(rep.recompute), "FLOP")});
  tot.Add({"training step (total)", Grouped(rep.training), Human(training, "FLOP")});
  tot.Add({"6*N*D (N = active params)", Grouped(static_cast<uint64_t>(rep.six_nd)),
           "x" + Fixed(rep.six_nd / training, 3) + " of total"});
  tot.Add({"6*N*D (N = non-embedding)", Grouped(static_cast<uint64_t>(rep.six_nd_non_embedding)),
           "x" + Fixed(rep.six_nd_non_embedding / training, 3) + " of total"});
  tot.Add({"PaLM (6N + 12*L*H*Q*T)*D", Grouped(static_cast<uint64_t>(rep.palm)),
           "x" + Fixed(rep.palm / training, 3) + " of total"});
  if (o.macs) tot.Add({"forward MACs", Grouped(rep.forward / 2), ""});
  out += Sep(f) + RenderTable(tot, st);
  out += Sep(f) + RenderTable(ParamsTable(rep.params, r.model.is_moe()), st);

  if (r.gpu) {
    const GpuSpec& g = *r.gpu;
    out += Sep(f) + Line("GPU: " + g.name + ", " + DtypeName(r.dtype) + " dense peak " +
                             Human(g.PeakFlops(r.dtype), "FLOP/s") + ", " + Human(g.bandwidth_bytes_per_s, "B/s") +
                             ", " + Human(g.memory_bytes, "B") + " (" + g.source + ")",
                         f);
    if (r.step) {
      const StepTime& s = *r.step;
      out += Line(std::string(r.training ? "training step" : "forward step") + " at MFU " + Fixed(s.mfu, 2) + ": " +
                      Seconds(s.seconds) + " per step, " +
                      Grouped(static_cast<uint64_t>(std::llround(s.tokens_per_s))) + " tokens/s",
                  f);
      if (r.steps > 0)
        out += Line(Grouped(static_cast<uint64_t>(r.steps)) +
                        " steps: " + Seconds(s.seconds * static_cast<double>(r.steps)) + " (" +
                        Fixed(s.seconds * static_cast<double>(r.steps) / 86400.0, 1) + " days)",
                    f);
    }
    if (r.prefill)
      out += Sep(f) + RenderTable(RooflineTable(*r.prefill, "Roofline, prefill of batch x seq-len tokens (ridge " +
                                                                Fixed(r.prefill->ridge, 1) + " FLOP/B)"),
                                  st);
    if (r.decode)
      out +=
          Sep(f) + RenderTable(RooflineTable(*r.decode, "Roofline, one decode step: batch tokens over a KV cache of " +
                                                            std::to_string(o.seq_len) + " tokens"),
                               st);
  }
  return out;
}

Json FlopsToJson(const FlopsResult& r) {
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
                      {"recompute", RecomputeName(o.recompute)}};
  j["batch"] = o.batch;
  j["seq_len"] = o.seq_len;
  j["tokens"] = rep.tokens;
  if (!r.sweep_variable.empty()) {
    Json pts = Json::array();
    for (const auto& p : r.sweep) {
      Json comps;
      for (int c = 0; c < kComponentCount; ++c) comps[ComponentName(static_cast<Component>(c))] = p.report.component[c];
      Json pt = {{"value", p.label},
                 {"tokens", p.report.tokens},
                 {"forward", p.report.forward},
                 {"training", p.report.training},
                 {"components", comps},
                 {"params", ParamsJson(p.report.params)}};
      if (p.step) pt["step_time"] = {{"seconds", p.step->seconds}, {"tokens_per_s", p.step->tokens_per_s}};
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
                    {"share", Share(x.flops, rep.forward)}});
  j["matmuls"] = rows;
  Json comps;
  for (int c = 0; c < kComponentCount; ++c) comps[ComponentName(static_cast<Component>(c))] = rep.component[c];
  j["components"] = comps;
  j["totals"] = {
      {"forward", rep.forward},   {"backward", rep.backward}, {"recompute", rep.recompute},
      {"training", rep.training}, {"six_nd", rep.six_nd},     {"six_nd_non_embedding", rep.six_nd_non_embedding},
      {"palm", rep.palm}};
  j["params"] = ParamsJson(rep.params);
  if (r.gpu) {
    j["gpu"] = {{"name", r.gpu->name},
                {"dtype", DtypeName(r.dtype)},
                {"peak_flops", r.gpu->PeakFlops(r.dtype)},
                {"bandwidth_bytes_per_s", r.gpu->bandwidth_bytes_per_s},
                {"memory_bytes", r.gpu->memory_bytes},
                {"source", r.gpu->source}};
    if (r.step) {
      j["step_time"] = {{"step", r.training ? "training" : "forward"},
                        {"flops", r.step->flops},
                        {"mfu", r.step->mfu},
                        {"seconds", r.step->seconds},
                        {"tokens_per_s", r.step->tokens_per_s}};
      if (r.steps > 0) j["step_time"]["total_seconds"] = r.step->seconds * static_cast<double>(r.steps);
    }
    if (r.prefill) j["roofline"]["prefill"] = RooflineJson(*r.prefill);
    if (r.decode) j["roofline"]["decode"] = RooflineJson(*r.decode);
  }
  return j;
}

// --------------------------------------------------------------------------------------------------------- memory --

Result<MemoryResult> RunMemory(const MemoryRequest& req) {
  MemoryResult r;
  MemoryOptions base = req.options;
  if (!req.gpu.empty()) {
    LMKIT_ASSIGN_OR_RETURN(GpuSpec g, FindGpu(req.gpu));
    r.gpu = g;
    if (base.capacity_bytes == 0) base.capacity_bytes = g.memory_bytes;
  }
  if (req.sweep.variable == "model") {
    if (!req.source.model.empty() || req.source.has_dims)
      return Status::InvalidArgument("--sweep model=... replaces MODEL; give one or the other");
  } else {
    LMKIT_ASSIGN_OR_RETURN(r.model, ResolveModelSource(req.source));
    LMKIT_ASSIGN_OR_RETURN(r.report, EstimateMemory(r.model, base));
  }
  if (req.sweep.variable.empty()) {
    if (!req.svg_path.empty()) return Status::InvalidArgument("--svg needs --sweep");
    return r;
  }
  r.sweep_variable = req.sweep.variable;
  for (const auto& v : req.sweep.values) {
    MemoryOptions o = base;
    ModelSpec m = r.model;
    LMKIT_RETURN_IF_ERROR(ApplySweepValue(req.sweep.variable, v, &o, &m));
    LMKIT_ASSIGN_OR_RETURN(MemoryReport rep, EstimateMemory(m, o));
    if (req.sweep.variable == "model" && r.sweep.empty()) {
      r.model = m;
      r.report = rep;
    }
    r.sweep.push_back({v, std::move(rep)});
  }
  r.svg_path = req.svg_path;  // the caller draws the chart (present/accounting_svg.h)
  return r;
}

namespace {

std::string OptionsLine(const MemoryOptions& o) {
  std::string s = std::string("mode: ") + ModeName(o.mode) + ", " + DtypeName(o.dtype);
  if (o.mode == Mode::kTraining) {
    s += ", optimizer " + std::string(OptimizerName(o.optimizer)) + ", recompute " + RecomputeName(o.recompute) +
         ", ZeRO-" + std::to_string(o.zero) + " over " + std::to_string(o.gpus) + " GPU(s)";
  } else {
    s += ", split over " + std::to_string(o.gpus) + " GPU(s)";
  }
  s += ", batch " + std::to_string(o.batch) + " per GPU x seq-len " + std::to_string(o.seq_len);
  return s;
}

Json MemoryReportJson(const MemoryReport& x) {
  Json j = {{"weights", x.weights},     {"gradients", x.gradients},
            {"optimizer", x.optimizer}, {"activations", x.activations},
            {"kv_cache", x.kv_cache},   {"overhead", x.overhead},
            {"total", x.total},         {"per_sequence", x.per_sequence},
            {"fixed", x.fixed},         {"kv_bytes_per_token", x.kv_bytes_per_token}};
  if (x.capacity_known) {
    j["capacity"] = x.options.capacity_bytes;
    j["fits"] = x.fits;
    j["max_batch"] = x.max_batch;
  }
  return j;
}

}  // namespace

std::string RenderMemory(const MemoryResult& r, Format f) {
  TableStyle st = StyleOf(f);
  const MemoryReport& x = r.report;
  std::string out;
  if (r.sweep_variable != "model") {
    out += Line("model: " + r.model.name + " (" + r.model.source + ")", f);
    out += Line(DescribeModel(r.model), f);
  }
  out += Line(OptionsLine(x.options), f);
  if (r.gpu)
    out += Line("GPU: " + r.gpu->name + ", " + Human(r.gpu->memory_bytes, "B") + " (" + r.gpu->source + ")", f);

  if (!r.sweep_variable.empty()) {
    Table t;
    t.title = "Sweep over " + r.sweep_variable + " (bytes per GPU)";
    t.header = {r.sweep_variable, "weights", "gradients", "optimizer", "activations", "KV cache", "overhead", "total"};
    t.numeric = {false, true, true, true, true, true, true, true};
    if (x.capacity_known) {
      t.header.insert(t.header.end(), {"fits", "max batch"});
      t.numeric.insert(t.numeric.end(), {false, true});
    }
    for (const auto& p : r.sweep) {
      const MemoryReport& y = p.report;
      std::vector<std::string> row = {p.label,
                                      Human(static_cast<double>(y.weights), "B"),
                                      Human(static_cast<double>(y.gradients), "B"),
                                      Human(static_cast<double>(y.optimizer), "B"),
                                      Human(static_cast<double>(y.activations), "B"),
                                      Human(static_cast<double>(y.kv_cache), "B"),
                                      Human(static_cast<double>(y.overhead), "B"),
                                      Human(static_cast<double>(y.total), "B")};
      if (y.capacity_known) {
        row.emplace_back(y.fits ? "yes" : "no");
        row.push_back(std::to_string(y.max_batch));
      }
      t.Add(row);
    }
    out += Sep(f) + RenderTable(t, st);
    if (!r.svg_path.empty() && f != Format::kCsv) out += Sep(f) + Line("chart: " + r.svg_path, f);
    return out;
  }

  Table t;
  t.title = "Memory per GPU";
  t.header = {"", "bytes", "", "note"};
  t.numeric = {false, true, true, false};
  auto per_param = [](double b) { return Fixed(b, b == std::floor(b) ? 0 : 2) + " B/param"; };
  bool train = x.options.mode == Mode::kTraining;
  std::string shard = x.options.gpus > 1 ? " / " + std::to_string(x.options.gpus) : "";
  t.Add({"weights", Grouped(x.weights), Human(static_cast<double>(x.weights), "B"),
         per_param(x.weight_bytes_per_param) + (train ? (x.options.zero >= 3 ? shard : "") : shard)});
  if (train) {
    t.Add({"gradients", Grouped(x.gradients), Human(static_cast<double>(x.gradients), "B"),
           per_param(x.grad_bytes_per_param) + (x.options.zero >= 2 ? shard : "")});
    t.Add({"optimizer state", Grouped(x.optimizer), Human(static_cast<double>(x.optimizer), "B"),
           per_param(x.optimizer_bytes_per_param) + (x.options.zero >= 1 ? shard : "")});
  }
  t.Add({"activations", Grouped(x.activations), Human(static_cast<double>(x.activations), "B"), x.activations_counted});
  if (!train)
    t.Add({"KV cache", Grouped(x.kv_cache), Human(static_cast<double>(x.kv_cache), "B"),
           Grouped(x.kv_bytes_per_token) + " B/token, windows and MLA applied"});
  t.Add({"overhead", Grouped(x.overhead), Human(static_cast<double>(x.overhead), "B"),
         "CUDA context, workspaces, fragmentation (--overhead-gib)"});
  t.Add({"total", Grouped(x.total), Human(static_cast<double>(x.total), "B"), ""});
  out += Sep(f) + RenderTable(t, st);
  out +=
      Sep(f) + Line("line: total(batch) = " + Grouped(x.per_sequence) + " * batch + " + Grouped(x.fixed) + " bytes", f);
  if (x.capacity_known) {
    out += Line(std::string(x.fits ? "fits" : "does not fit") + " in " + Human(x.options.capacity_bytes, "B") +
                    "; largest batch per GPU that fits: " + std::to_string(x.max_batch),
                f);
  }
  for (const auto& n : r.model.notes) out += Line("note: " + n, f);
  return out;
}

Json MemoryToJson(const MemoryResult& r) {
  const MemoryOptions& o = r.report.options;
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
  if (r.gpu) j["gpu"] = {{"name", r.gpu->name}, {"memory_bytes", r.gpu->memory_bytes}, {"source", r.gpu->source}};
  j["params"] = ParamsJson(r.report.params);
  if (!r.sweep_variable.empty()) {
    Json pts = Json::array();
    for (const auto& p : r.sweep) pts.push_back({{"value", p.label}, {"memory", MemoryReportJson(p.report)}});
    j["sweep"] = {{"variable", r.sweep_variable}, {"points", pts}};
    if (!r.svg_path.empty()) j["svg"] = r.svg_path;
    return j;
  }
  j["bytes_per_param"] = {{"weights", r.report.weight_bytes_per_param},
                          {"gradients", r.report.grad_bytes_per_param},
                          {"optimizer", r.report.optimizer_bytes_per_param}};
  j["memory"] = MemoryReportJson(r.report);
  j["activations_counted"] = r.report.activations_counted;
  return j;
}

}  // namespace lmkit::accounting
