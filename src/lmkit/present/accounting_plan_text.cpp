// `plan` as text: aligned tables, CSV (free-text lines as # comments) or Markdown.
#include <algorithm>
#include <cmath>

#include "lmkit/common/units.h"
#include "lmkit/present/accounting.h"

namespace lmkit::present {
namespace {

using namespace accounting;  // NOLINT: this file prints accounting's types and nothing else

// A free-text line: a comment in CSV; in Markdown it ends in a hard line break so consecutive lines stay lines.
std::string PlanLine(const std::string& s, Format f) { return TextLine(s, f, true); }
std::string B(double v) { return HumanBytes(v); }
std::string B(uint64_t v) { return HumanBytes(static_cast<double>(v)); }
std::string Rate(double bytes_per_s) { return Fixed(bytes_per_s / 1e9, 2) + " GB/s"; }

std::string HostLine(const HostFacts& h) {
  std::string s = "host: disk " + Rate(h.disk_bytes_per_s) + (h.disk_from_plan ? " (plan)" : " (default)");
  s += "; host->device " + Rate(h.pcie_bytes_per_s()) + (h.pinned ? " pinned" : " pageable");
  bool from_plan = h.pinned ? h.pinned_rate_from_plan : h.pageable_rate_from_plan;
  s += from_plan ? " (plan)" : " (default)";
  return s;
}

std::string GpuName(int g) { return "GPU " + std::to_string(g); }

std::string GpusOf(const ModelEstimate& m) {
  if (m.gpus.empty()) return "does not fit";
  std::string s;
  for (int g : m.gpus) s += (s.empty() ? "GPU " : "+") + std::to_string(g);
  return s;
}

}  // namespace

std::string UnplacedReason(const PlanResult& r, const ModelEstimate& m) {
  const PlanModel& pm = m.entry;
  const double capacity = r.gpu.memory_bytes;
  const std::string per_gpu = pm.tp > 1 ? " per GPU" : "";
  const std::string usable = HumanBytes(r.usable_bytes) + " usable on one " + r.gpu.name + " (" + HumanBytes(capacity) +
                             " - reserved " + HumanBytes(r.plan.reserved_bytes) + " - margin " +
                             HumanBytes(capacity * r.plan.fragmentation) + ")";
  switch (m.unplaced) {
    case Unplaced::kNone:
      return "";
    case Unplaced::kTooFewGpus:
      return "needs " + std::to_string(pm.tp) + " GPUs (tp " + std::to_string(pm.tp) + "); the plan has " +
             std::to_string(r.gpus);
    case Unplaced::kWeightsExceedGpu:
      return "no GPU fits it: its weights alone take " + B(m.memory.weights) + per_gpu + ", more than the " + usable +
             "; use a smaller dtype, tensor parallelism or a larger GPU";
    case Unplaced::kBudgetShort:
      return "gpu_memory_utilization " + Fixed(pm.gpu_memory_utilization, 2) + " gives it " + B(m.footprint) +
             " per GPU, less than its weights, activations and runtime (" + B(m.memory.total - m.memory.kv_cache) + ")";
    case Unplaced::kShareExceedsUsable:
      return "gpu_memory_utilization " + Fixed(pm.gpu_memory_utilization, 2) + " x " + HumanBytes(capacity) + " = " +
             B(m.footprint) + " is more than the " + usable;
    case Unplaced::kBatchExceedsUsable:
      return "impossible batch: batch " + std::to_string(pm.batch) + " x " + std::to_string(pm.seq_len) +
             " tokens needs " + B(m.footprint) + per_gpu + ", more than the " + usable +
             "; the largest batch that fits alone is " + std::to_string(m.max_batch_alone);
    case Unplaced::kNoRoomBesideOthers:
      return "fits an empty GPU (" + B(m.footprint) + (pm.tp > 1 ? " on each of " + std::to_string(pm.tp) : "") +
             ") but not beside the others: the most free memory left on a GPU is " + B(r.most_free_bytes) + " (" +
             r.packing_method + ")";
  }
  return "";
}

std::string WhatIfText(const WhatIf& w) {
  auto from_to = [&](const char* what) {
    return std::string(what) + " " + std::to_string(static_cast<int64_t>(w.from)) + " -> " +
           std::to_string(static_cast<int64_t>(w.to));
  };
  switch (w.change) {
    case WhatIfChange::kBatch:
      return from_to("batch");
    case WhatIfChange::kGpuMemoryUtilization:
      return "gpu_memory_utilization " + Fixed(w.from, 2) + " -> " + Fixed(w.to, 2);
    case WhatIfChange::kKvDtypeFp8:
      return "kv_dtype fp8";
    case WhatIfChange::kDtype:
      return std::string("dtype ") + DtypeName(w.dtype);
    case WhatIfChange::kTp:
      return from_to("tp");
    case WhatIfChange::kGpus:
      return from_to("gpus");
    case WhatIfChange::kGpu:
      return "gpu " + w.gpu;
  }
  return "";
}

std::string WhatIfDetail(const WhatIf& w) {
  if (w.change == WhatIfChange::kGpu)
    return std::to_string(w.placed) + " of " + std::to_string(w.models) + " models placed on " +
           std::to_string(w.gpus) + " x " + w.gpu;
  return B(w.footprint) + " per GPU" + (w.tp > 1 ? " on " + std::to_string(w.tp) + " GPUs" : "");
}

std::string BoundDetail(const ModelEstimate& m) {
  auto name = [](LatencyBound b) { return std::string(EnumNameOf(LatencyBoundNames(), b)); };
  std::string s;
  if (m.prefill_bound == LatencyBound::kMeasured) {
    s = "measured latency";
  } else {
    const bool phases = !m.entry.weights_only && m.entry.output_tokens > 0;
    s = (phases ? "prefill " : "forward ") + name(m.prefill_bound) + "-bound";
  }
  if (m.decode_bound) s += ", decode " + name(*m.decode_bound) + "-bound";
  if (m.entry.tp > 1) s += ", tp " + std::to_string(m.entry.tp);
  return s;
}

std::string RenderPlan(const PlanResult& r, Format f) {
  const Plan& p = r.plan;
  std::string out;
  out += PlanLine("plan: " + p.path + ": " + std::to_string(r.models.size()) + " models on " + std::to_string(r.gpus) +
                      " x " + r.gpu.name + " (" + B(r.gpu.memory_bytes) + ", " +
                      Human(r.gpu.bandwidth_bytes_per_s, "B/s") + ")",
                  f);
  out += PlanLine("per GPU: " + B(r.gpu.memory_bytes) + " - reserved " + B(p.reserved_bytes) +
                      " (CUDA context, workspaces) - fragmentation margin " + Percent(p.fragmentation) + " (" +
                      B(r.gpu.memory_bytes * p.fragmentation) + ") = " + B(r.usable_bytes) + " usable",
                  f);
  out += PlanLine(HostLine(p.host), f);

  bool runtime = p.runtime_bytes_per_model > 0;
  bool tp = false, budget = false;
  for (const auto& m : r.models) {
    tp = tp || m.entry.tp > 1;
    budget = budget || m.entry.kv_tokens > 0 || m.entry.gpu_memory_utilization > 0;
  }
  Table mem;
  mem.title =
      std::string("Memory per model (inference, at the planned batch") + (tp ? "; per GPU of its tp" : "") + ")";
  mem.header = {"model", "preset/config", "dtype", "batch", "context"};
  if (tp) mem.header.emplace_back("tp");
  mem.header.insert(mem.header.end(), {"weights", "KV cache", "activations"});
  if (budget) mem.header.emplace_back("KV tokens");
  if (runtime) mem.header.emplace_back("runtime");
  mem.header.insert(mem.header.end(), {"total", "max batch alone", "GPU"});
  for (size_t i = 0; i < mem.header.size(); ++i) mem.numeric.push_back(i >= 3 && i + 1 < mem.header.size());
  mem.numeric.back() = false;
  for (const auto& m : r.models) {
    const auto& e = m.entry;
    std::vector<std::string> row = {e.name, e.model.empty() ? "dims" : e.model, DtypeName(e.dtype),
                                    std::to_string(e.batch), Grouped(static_cast<uint64_t>(e.seq_len))};
    if (tp) row.push_back(std::to_string(e.tp));
    row.insert(row.end(), {B(m.memory.weights), B(m.kv_budget), B(m.memory.activations)});
    if (budget) row.push_back(Grouped(m.kv_budget_tokens));
    if (runtime) row.push_back(B(m.runtime));
    row.insert(row.end(), {B(m.footprint), Grouped(static_cast<uint64_t>(m.max_batch_alone)), GpusOf(m)});
    mem.Add(row);
  }
  out += BlockGap(f) + RenderTable(mem, f);

  Table sp;
  sp.title = "Speed per model (roofline lower bound for one batch of requests; load and switch of the weights)";
  sp.header = {"model", "prompt", "output", "prefill", "decode", "latency"};
  if (tp) sp.header.emplace_back("all-reduce");
  sp.header.insert(sp.header.end(), {"bound", "req/s", "busy", "cold load", "switch"});
  for (const auto& h : sp.header) sp.numeric.push_back(h != "model" && h != "bound");
  for (const auto& m : r.models) {
    const auto& e = m.entry;
    std::vector<std::string> row = {e.name,
                                    Grouped(static_cast<uint64_t>(e.seq_len - e.output_tokens)),
                                    Grouped(static_cast<uint64_t>(e.output_tokens)),
                                    Seconds(m.prefill_s),
                                    e.output_tokens > 0 ? Seconds(m.decode_s) : "-",
                                    Seconds(m.latency_s)};
    // The tensor-parallel all-reduces inside the latency: the prefill's plus every decode step's.
    if (tp)
      row.push_back(e.tp > 1
                        ? Seconds(m.prefill_comm.seconds + m.decode_comm.seconds * static_cast<double>(e.output_tokens))
                        : "-");
    row.insert(row.end(), {BoundDetail(m), Fixed(e.requests_per_s, 2), Percent(m.utilisation), Seconds(m.cold_load_s),
                           Seconds(m.switch_s)});
    sp.Add(row);
  }
  out += BlockGap(f) + RenderTable(sp, f);

  Table gt;
  gt.title = "GPUs (" + r.packing_method + ")";
  gt.header = {"GPU", "models", "models memory", "reserved", "margin", "free", "used", "busy"};
  gt.numeric = {false, false, true, true, true, true, true, true};
  for (size_t g = 0; g < r.gpu_use.size(); ++g) {
    const GpuUse& u = r.gpu_use[g];
    std::string names;
    for (int i : u.models) names += (names.empty() ? "" : ", ") + r.models[static_cast<size_t>(i)].entry.name;
    double used = static_cast<double>(u.models_bytes) + u.reserved;
    gt.Add({GpuName(static_cast<int>(g)), names.empty() ? "-" : names, B(u.models_bytes), B(u.reserved), B(u.margin),
            B(u.free), Percent(used / u.capacity), Percent(u.utilisation)});
  }
  out += BlockGap(f) + RenderTable(gt, f);

  std::string groups;
  for (const auto& grp : r.groups) {
    if (grp.members.size() < 2) continue;
    std::string names;
    for (int i : grp.members) names += (names.empty() ? "" : ", ") + r.models[static_cast<size_t>(i)].entry.name;
    groups +=
        PlanLine("same architecture and dtype (" + grp.architecture + "): " + names +
                     "; weights counted per instance (" + std::to_string(grp.members.size()) + " x " +
                     B(grp.weight_bytes_each) + "); instances sharing one base (e.g. adapters) would hold them once",
                 f);
  }
  if (!groups.empty()) out += BlockGap(f) + groups;

  std::string warn;
  for (size_t g = 0; g < r.gpu_use.size(); ++g)
    if (r.gpu_use[g].utilisation > 1.0)
      warn += PlanLine("overloaded: " + GpuName(static_cast<int>(g)) + " is " + Percent(r.gpu_use[g].utilisation) +
                           " busy at the planned requests/s (more than one GPU's time)",
                       f);
  for (const auto& m : r.models)
    for (const auto& w : m.warnings) warn += PlanLine("note: " + m.entry.name + ": " + w, f);
  for (int i : r.unplaced) {
    const ModelEstimate& m = r.models[static_cast<size_t>(i)];
    warn += PlanLine("does not fit: " + m.entry.name + ": " + UnplacedReason(r, m), f);
    if (!m.what_if.empty()) {
      std::string also;
      for (size_t k = 1; k < m.what_if.size(); ++k) also += (also.empty() ? "" : "; ") + WhatIfText(m.what_if[k]);
      warn +=
          PlanLine("what-if: " + m.entry.name + ": " + WhatIfText(m.what_if[0]) + " (" + WhatIfDetail(m.what_if[0]) +
                       ") is the cheapest change that places it" + (also.empty() ? "" : "; also: " + also),
                   f);
    }
  }
  if (r.unplaced.empty()) warn += PlanLine("every model fits", f);
  out += BlockGap(f) + warn;
  if (r.timeline) out += BlockGap(f) + RenderPlanTimeline(r, f);
  if (!r.svg_path.empty() && f != Format::kCsv)
    out += BlockGap(f) + PlanLine((r.timeline ? "memory over the day: " : "memory map: ") + r.svg_path, f);
  return out;
}

}  // namespace lmkit::present
