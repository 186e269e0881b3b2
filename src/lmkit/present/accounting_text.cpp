// `flops` and `memory` as text: aligned tables, CSV (free-text lines as # comments) or Markdown.
#include <cmath>

#include "lmkit/common/units.h"
#include "lmkit/present/accounting.h"
#include "lmkit/present/accounting_training.h"

namespace lmkit::present {
namespace {

using namespace accounting;  // NOLINT: this file prints accounting's types and nothing else

std::string ConventionsLine(const FlopsOptions& o) {
  std::string s = "conventions: FLOP = 2 x MAC";
  s += o.macs ? " (rows show MACs)" : "";
  s += o.causal_half ? "; causal attention halved"
                     : "; causal attention counted in full (" + Field("causal_half") + " halves it)";
  s += "; embedding lookup free";
  s += o.lm_head ? ", LM head counted" : ", LM head not counted";
  s += o.softmax_flops ? "; softmax 3 FLOPs per score" : "; softmax/norms/elementwise not counted";
  s += "; backward = 2 x forward";
  if (o.recompute == Recompute::kFull) s += "; full recomputation runs the layers' forward again (not the LM head)";
  if (o.recompute == Recompute::kSelective) s += "; selective recomputation runs QK^T, softmax and attention x V again";
  if (o.recompute == Recompute::kDeepSeek)
    s += "; DeepSeek-V3 recomputation runs the attention core and MLA up-projections again";
  return s;
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
  if (p.vision > 0) t.Add({"vision tower + projector (not in total)", Grouped(static_cast<uint64_t>(p.vision))});
  return t;
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

std::string PrecisionLine(const Precision& p, Attention a) {
  std::string s = "roofline: ";
  s += a == Attention::kFused ? "fused attention (FlashAttention-style: Q, K, V read once, no score matrix; " +
                                    Field("attention") + " unfused materialises QK^T)"
                              : "unfused attention (QK^T written and read back)";
  s += "; weights " + std::string(DtypeName(p.dtype));
  if (p.dtype == Dtype::kFp8 || p.dtype == Dtype::kInt8)
    s += p.scope == QuantScope::kLinear ? " (Linear layers; embeddings, LM head, routers 16-bit)" : " (every weight)";
  s += ", activations " + std::string(p.ActivationBytes() == 4 ? "fp32" : p.dtype == Dtype::kFp16 ? "fp16" : "bf16");
  s += ", KV cache " + std::string(DtypeName(p.kv_dtype));
  return s;
}

std::string FlopsSweepText(const FlopsResult& r, Format f) {
  Table t;
  t.title = "Sweep over " + r.sweep_variable + " (forward FLOPs of one step; shares of the forward count)";
  t.header = {r.sweep_variable, "tokens", "forward FLOPs", "training FLOPs"};
  t.numeric = {false, true, true, true};
  const std::vector<Component> comps = SweepComponents(r.sweep);
  for (Component c : comps) {
    t.header.emplace_back(ComponentName(c));
    t.numeric.push_back(true);
  }
  bool timed = !r.sweep.empty() && r.sweep.front().step.has_value();
  if (timed) {
    t.header.insert(t.header.end(), {r.training ? "training step" : "forward step", "tokens/s"});
    t.numeric.insert(t.numeric.end(), {true, true});
  }
  for (const auto& p : r.sweep) {
    std::vector<std::string> row = {p.label, Grouped(p.report.tokens), Grouped(p.report.forward),
                                    Grouped(p.report.training)};
    for (Component c : comps)
      row.push_back(Percent(ShareOf(p.report.component[static_cast<int>(c)], p.report.forward)));
    if (timed && p.step) {
      row.push_back(Seconds(p.step->seconds));
      row.push_back(Grouped(static_cast<uint64_t>(std::llround(p.step->tokens_per_s))));
    }
    t.Add(row);
  }
  std::string out = BlockGap(f) + RenderTable(t, f);
  if (!r.svg_path.empty() && f != Format::kCsv) out += BlockGap(f) + TextLine("chart: " + r.svg_path, f);
  return out;
}

}  // namespace

std::string RenderFlops(const FlopsResult& r, Format f) {
  if (r.layout) return RenderTraining(*r.layout, f, true);
  const FlopsReport& rep = r.report;
  const FlopsOptions& o = rep.options;
  std::string out;
  if (r.sweep_variable != "model") out += TextLine("model: " + r.model.name + " (" + r.model.source + ")", f);
  if (r.sweep_variable != "model") out += TextLine(DescribeModel(r.model), f);
  for (const auto& n : r.model.notes) out += TextLine("note: " + n, f);
  out += TextLine(ConventionsLine(o), f);
  if (!r.sweep_variable.empty()) return out + FlopsSweepText(r, f);

  out += TextLine("step: batch " + std::to_string(o.batch) + " x seq-len " + std::to_string(o.seq_len) + " = " +
                      Grouped(rep.tokens) + " tokens",
                  f);
  Table mm;
  mm.title = "Matmuls of one forward step";
  mm.header = {"layer", "matmul", "M", "K", "N", "count", o.macs ? "MACs" : "FLOPs", "share"};
  mm.numeric = {false, false, true, true, true, true, true, true};
  for (const auto& x : rep.matmuls)
    mm.Add({x.layer_kind, x.name, std::to_string(x.m), std::to_string(x.k), std::to_string(x.n),
            std::to_string(x.count), Grouped(o.macs ? x.flops / 2 : x.flops), Percent(ShareOf(x.flops, rep.forward))});
  out += BlockGap(f) + RenderTable(mm, f);

  Table comp;
  comp.title = "Components (forward)";
  comp.header = {"component", o.macs ? "MACs" : "FLOPs", "share"};
  comp.numeric = {false, true, true};
  for (int c = 0; c < kComponentCount; ++c) {
    if (static_cast<Component>(c) == Component::kSoftmax && !o.softmax_flops) continue;
    if (static_cast<Component>(c) == Component::kRouter && rep.component[c] == 0) continue;
    comp.Add({ComponentName(static_cast<Component>(c)), Grouped(o.macs ? rep.component[c] / 2 : rep.component[c]),
              Percent(ShareOf(rep.component[c], rep.forward))});
  }
  out += BlockGap(f) + RenderTable(comp, f);

  Table tot;
  tot.title = "Totals (FLOPs)";
  tot.header = {"", "FLOPs", ""};
  tot.numeric = {false, true, true};
  double training = static_cast<double>(rep.training);
  tot.Add({"forward", Grouped(rep.forward), Human(static_cast<double>(rep.forward), "FLOP")});
  tot.Add({"backward (2 x forward)", Grouped(rep.backward), Human(static_cast<double>(rep.backward), "FLOP")});
  if (rep.recompute) {
    tot.Add({std::string("recomputation (") + RecomputeName(o.recompute) + ")", Grouped(rep.recompute),
             Human(static_cast<double>(rep.recompute), "FLOP")});
    tot.Add({"model FLOPs (no recomputation; MFU)", Grouped(rep.model), Human(static_cast<double>(rep.model), "FLOP")});
  }
  tot.Add({"training step (total)", Grouped(rep.training), Human(training, "FLOP")});
  tot.Add({"6*N*D (N = active params)", Grouped(static_cast<uint64_t>(rep.six_nd)),
           "x" + Fixed(rep.six_nd / training, 3) + " of total"});
  tot.Add({"6*N*D (N = non-embedding)", Grouped(static_cast<uint64_t>(rep.six_nd_non_embedding)),
           "x" + Fixed(rep.six_nd_non_embedding / training, 3) + " of total"});
  tot.Add({"PaLM (6N + 12*L*H*Q*T)*D", Grouped(static_cast<uint64_t>(rep.palm)),
           "x" + Fixed(rep.palm / training, 3) + " of total"});
  if (o.macs) tot.Add({"forward MACs", Grouped(rep.forward / 2), ""});
  out += BlockGap(f) + RenderTable(tot, f);
  out += BlockGap(f) + RenderTable(ParamsTable(rep.params, r.model.is_moe()), f);

  if (r.gpu) {
    const GpuSpec& g = *r.gpu;
    const Dtype dt = r.precision.dtype;
    out += BlockGap(f) + TextLine("GPU: " + g.name + ", " + DtypeName(dt) + " dense peak " +
                                      Human(g.PeakFlops(dt), "FLOP/s") + ", " + Human(g.bandwidth_bytes_per_s, "B/s") +
                                      ", " + Human(g.memory_bytes, "B") + " (" + g.source + ")",
                                  f);
    if (r.step) {
      const StepTime& s = *r.step;
      out += TextLine(std::string(r.training ? "training step" : "forward step") + " at MFU " + Fixed(s.mfu, 2) + ": " +
                          Seconds(s.seconds) + " per step, " +
                          Grouped(static_cast<uint64_t>(std::llround(s.tokens_per_s))) + " tokens/s; HFU " +
                          Fixed(s.hfu, 2) + (s.hardware_flops > s.flops ? " (recomputation counted)" : ""),
                      f);
      if (r.steps > 0)
        out += TextLine(Grouped(static_cast<uint64_t>(r.steps)) +
                            " steps: " + Seconds(s.seconds * static_cast<double>(r.steps)) + " (" +
                            Fixed(s.seconds * static_cast<double>(r.steps) / 86400.0, 1) + " days)",
                        f);
    }
    if (r.prefill) {
      out += TextLine(PrecisionLine(r.precision, r.attention), f);
      out += BlockGap(f) + RenderTable(RooflineTable(*r.prefill, "Roofline, prefill of batch x seq-len tokens (ridge " +
                                                                     Fixed(r.prefill->ridge, 1) + " FLOP/B)"),
                                       f);
    }
    if (r.decode)
      out += BlockGap(f) +
             RenderTable(RooflineTable(*r.decode, "Roofline, one decode step: batch tokens over a KV cache of " +
                                                      std::to_string(o.seq_len) + " tokens"),
                         f);
  }
  return out;
}

// --------------------------------------------------------------------------------------------------------- memory --

namespace {

std::string OptionsLine(const MemoryReport& x) {
  const MemoryOptions& o = x.options;
  std::string s = std::string("mode: ") + ModeName(o.mode) + ", " + DtypeName(o.dtype);
  if (o.mode == Mode::kTraining) {
    s += ", optimizer " + std::string(OptimizerName(o.optimizer)) + ", recompute " + RecomputeName(o.recompute) +
         ", ZeRO-" + std::to_string(o.zero) + " over " + std::to_string(o.gpus) + " GPU(s)";
  } else {
    s += ", KV cache " + std::string(DtypeName(x.kv_dtype));
    s += o.gpus > 1 ? ", tensor parallel over " + std::to_string(o.gpus) + " GPUs (" +
                          std::to_string(x.kv_heads_per_gpu) + " KV head(s) per GPU)"
                    : ", 1 GPU";
  }
  s += ", batch " + std::to_string(o.batch) + (o.mode == Mode::kTraining ? " per GPU" : "") + " x seq-len " +
       std::to_string(o.seq_len);
  return s;
}

std::string MemorySweepText(const MemoryResult& r, Format f) {
  const MemoryReport& x = r.report;
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
  std::string out = BlockGap(f) + RenderTable(t, f);
  if (!r.svg_path.empty() && f != Format::kCsv) out += BlockGap(f) + TextLine("chart: " + r.svg_path, f);
  return out;
}

}  // namespace

std::string RenderMemory(const MemoryResult& r, Format f) {
  if (r.layout) return RenderTraining(*r.layout, f, false);
  const MemoryReport& x = r.report;
  std::string out;
  if (r.sweep_variable != "model") {
    out += TextLine("model: " + r.model.name + " (" + r.model.source + ")", f);
    out += TextLine(DescribeModel(r.model), f);
  }
  out += TextLine(OptionsLine(x), f);
  if (r.gpu)
    out += TextLine("GPU: " + r.gpu->name + ", " + Human(r.gpu->memory_bytes, "B") + " (" + r.gpu->source + ")", f);
  if (!r.sweep_variable.empty()) return out + MemorySweepText(r, f);

  Table t;
  t.title = "Memory per GPU";
  t.header = {"", "bytes", "", "note"};
  t.numeric = {false, true, true, false};
  auto per_param = [](double b) { return Fixed(b, b == std::floor(b) ? 0 : 2) + " B/param"; };
  bool train = x.options.mode == Mode::kTraining;
  std::string shard = x.options.gpus > 1 ? " / " + std::to_string(x.options.gpus) : "";
  std::string weights_note = per_param(x.weight_bytes_per_param) + (train ? (x.options.zero >= 3 ? shard : "") : "");
  if (!train && x.options.gpus > 1) weights_note += ", tensor-parallel slice";
  if (!x.weights_counted.empty()) weights_note += " (" + x.weights_counted + ")";
  t.Add({"weights", Grouped(x.weights), Human(static_cast<double>(x.weights), "B"), weights_note});
  if (train) {
    t.Add({"gradients", Grouped(x.gradients), Human(static_cast<double>(x.gradients), "B"),
           per_param(x.grad_bytes_per_param) + (x.options.zero >= 2 ? shard : "")});
    t.Add({"optimizer state", Grouped(x.optimizer), Human(static_cast<double>(x.optimizer), "B"),
           per_param(x.optimizer_bytes_per_param) + (x.options.zero >= 1 ? shard : "")});
  }
  t.Add({"activations", Grouped(x.activations), Human(static_cast<double>(x.activations), "B"), x.activations_counted});
  if (!train)
    t.Add({"KV cache", Grouped(x.kv_cache), Human(static_cast<double>(x.kv_cache), "B"),
           Grouped(x.kv_bytes_per_token_gpu) + " B/token per GPU at " + DtypeName(x.kv_dtype) +
               ", windows and MLA applied"});
  t.Add({"overhead", Grouped(x.overhead), Human(static_cast<double>(x.overhead), "B"),
         "CUDA context, workspaces, fragmentation (" + Field("overhead_gib") + ")"});
  t.Add({"total", Grouped(x.total), Human(static_cast<double>(x.total), "B"), ""});
  out += BlockGap(f) + RenderTable(t, f);
  out += BlockGap(f) +
         TextLine("line: total(batch) = " + Grouped(x.per_sequence) + " * batch + " + Grouped(x.fixed) + " bytes", f);
  if (x.capacity_known) {
    out += TextLine(std::string(x.fits ? "fits" : "does not fit") + " in " + Human(x.options.capacity_bytes, "B") +
                        "; largest batch per GPU that fits: " + std::to_string(x.max_batch),
                    f);
  }
  for (const auto& n : r.model.notes) out += TextLine("note: " + n, f);
  return out;
}

std::string MemoryIgnoredNote(const MemoryResult& r) {
  if (r.ignored.empty()) return "";
  std::string fields;
  for (const auto& i : r.ignored) fields += (fields.empty() ? "" : ", ") + Field(i);
  const bool inference = r.report.options.mode == Mode::kInference;
  return "note: " + fields + " only apply to " + Field("mode") + (inference ? " training" : " inference") + "; ignored";
}

}  // namespace lmkit::present
