// Printing a PlanResult: text/CSV/Markdown tables, the JSON document and the SVG memory map.
#include <algorithm>
#include <cmath>

#include "lmkit/accounting/plan.h"
#include "lmkit/accounting/table.h"

namespace lmkit::accounting {
namespace {

TableStyle PlanStyleOf(Format f) {
  return f == Format::kCsv ? TableStyle::kCsv : f == Format::kMd ? TableStyle::kMd : TableStyle::kText;
}
// A free-text line: a comment in CSV; in Markdown it ends in a hard line break so consecutive lines stay lines.
std::string PlanLine(const std::string& s, Format f) {
  if (f == Format::kCsv) return "# " + s + "\n";
  return s + (f == Format::kMd ? "  \n" : "\n");
}
std::string PlanSep(Format f) { return f == Format::kCsv ? "" : "\n"; }
std::string B(double v) { return Human(v, "B"); }
std::string B(uint64_t v) { return Human(static_cast<double>(v), "B"); }
std::string Rate(double bytes_per_s) { return Fixed(bytes_per_s / 1e9, 2) + " GB/s"; }

std::string HostLine(const HostFacts& h) {
  std::string s = "host: disk " + Rate(h.disk_bytes_per_s) + (h.disk_from_plan ? " (plan)" : " (default)");
  s += "; host->device " + Rate(h.pcie_bytes_per_s()) + (h.pinned ? " pinned" : " pageable");
  bool from_plan = h.pinned ? h.pinned_rate_from_plan : h.pageable_rate_from_plan;
  s += from_plan ? " (plan)" : " (default)";
  return s;
}

// Byte counts print as exact integers in JSON (the inputs are whole bytes; capacities are decimal GB).
uint64_t U(double bytes) { return static_cast<uint64_t>(std::llround(std::max(0.0, bytes))); }

std::string GpuName(int g) { return "GPU " + std::to_string(g); }

}  // namespace

std::string RenderPlan(const PlanResult& r, Format f) {
  const TableStyle st = PlanStyleOf(f);
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
  Table mem;
  mem.title = "Memory per model (inference, at the planned batch)";
  mem.header = {"model", "preset/config", "dtype", "batch", "context", "weights", "KV cache", "activations"};
  if (runtime) mem.header.emplace_back("runtime");
  mem.header.insert(mem.header.end(), {"total", "max batch alone", "GPU"});
  for (size_t i = 0; i < mem.header.size(); ++i) mem.numeric.push_back(i >= 3 && i + 1 < mem.header.size());
  mem.numeric.back() = false;
  for (const auto& m : r.models) {
    const auto& e = m.entry;
    std::vector<std::string> row = {e.name,
                                    e.model.empty() ? "dims" : e.model,
                                    DtypeName(e.dtype),
                                    std::to_string(e.batch),
                                    Grouped(static_cast<uint64_t>(e.seq_len)),
                                    B(m.memory.weights),
                                    B(m.memory.kv_cache),
                                    B(m.memory.activations)};
    if (runtime) row.push_back(B(m.runtime));
    row.insert(row.end(), {B(m.footprint), Grouped(static_cast<uint64_t>(m.max_batch_alone)),
                           m.gpu >= 0 ? GpuName(m.gpu) : "does not fit"});
    mem.Add(row);
  }
  out += PlanSep(f) + RenderTable(mem, st);

  Table sp;
  sp.title = "Speed per model (roofline lower bound for one batch of requests; load and switch of the weights)";
  sp.header = {"model", "prompt", "output", "prefill",   "decode", "latency",
               "bound", "req/s",  "busy",   "cold load", "switch"};
  sp.numeric = {false, true, true, true, true, true, false, true, true, true, true};
  for (const auto& m : r.models) {
    const auto& e = m.entry;
    sp.Add({e.name, Grouped(static_cast<uint64_t>(e.seq_len - e.output_tokens)),
            Grouped(static_cast<uint64_t>(e.output_tokens)), Seconds(m.prefill_s),
            e.output_tokens > 0 ? Seconds(m.decode_s) : "-", Seconds(m.latency_s), m.bound_detail,
            Fixed(e.requests_per_s, 2), Percent(m.utilisation), Seconds(m.cold_load_s), Seconds(m.switch_s)});
  }
  out += PlanSep(f) + RenderTable(sp, st);

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
  out += PlanSep(f) + RenderTable(gt, st);

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
  if (!groups.empty()) out += PlanSep(f) + groups;

  std::string warn;
  for (size_t g = 0; g < r.gpu_use.size(); ++g)
    if (r.gpu_use[g].utilisation > 1.0)
      warn += PlanLine("overloaded: " + GpuName(static_cast<int>(g)) + " is " + Percent(r.gpu_use[g].utilisation) +
                           " busy at the planned requests/s (more than one GPU's time)",
                       f);
  for (int i : r.unplaced)
    warn += PlanLine("does not fit: " + r.models[static_cast<size_t>(i)].entry.name + ": " +
                         r.models[static_cast<size_t>(i)].unplaced_reason,
                     f);
  if (r.unplaced.empty()) warn += PlanLine("every model fits", f);
  out += PlanSep(f) + warn;
  if (!r.svg_path.empty() && f != Format::kCsv) out += PlanSep(f) + PlanLine("memory map: " + r.svg_path, f);
  return out;
}

Json PlanToJson(const PlanResult& r) {
  const Plan& p = r.plan;
  Json j;
  j["schema"] = "lmkit.plan/1";
  j["plan"] = p.path;
  j["gpu"] = {{"name", r.gpu.name},
              {"memory_bytes", U(r.gpu.memory_bytes)},
              {"bandwidth_bytes_per_s", r.gpu.bandwidth_bytes_per_s},
              {"source", r.gpu.source}};
  j["gpus"] = r.gpus;
  j["reserved_bytes_per_gpu"] = U(p.reserved_bytes);
  j["runtime_bytes_per_model"] = U(p.runtime_bytes_per_model);
  j["fragmentation"] = p.fragmentation;
  j["margin_bytes_per_gpu"] = U(r.gpu.memory_bytes * p.fragmentation);
  j["usable_bytes_per_gpu"] = U(r.usable_bytes);
  const HostFacts& h = p.host;
  j["host"] = {{"disk_bytes_per_s", h.disk_bytes_per_s},
               {"pcie_pinned_bytes_per_s", h.pcie_pinned_bytes_per_s},
               {"pcie_pageable_bytes_per_s", h.pcie_pageable_bytes_per_s},
               {"pinned", h.pinned},
               {"disk_from_plan", h.disk_from_plan},
               {"pcie_pinned_from_plan", h.pinned_rate_from_plan},
               {"pcie_pageable_from_plan", h.pageable_rate_from_plan}};
  Json models = Json::array();
  for (const auto& m : r.models) {
    const auto& e = m.entry;
    Json mj;
    mj["name"] = e.name;
    mj["model"] = e.model.empty() ? Json(nullptr) : Json(e.model);
    mj["family"] = e.spec.family;
    mj["architecture"] = m.architecture;
    mj["group"] = m.group;
    mj["dtype"] = DtypeName(e.dtype);
    mj["batch"] = e.batch;
    mj["seq_len"] = e.seq_len;
    mj["output_tokens"] = e.output_tokens;
    mj["requests_per_s"] = e.requests_per_s;
    mj["parameters"] = m.memory.params.total;
    mj["memory"] = {{"weights", m.memory.weights},
                    {"kv_cache", m.memory.kv_cache},
                    {"activations", m.memory.activations},
                    {"runtime", m.runtime},
                    {"total", m.footprint},
                    {"kv_bytes_per_token", m.memory.kv_bytes_per_token},
                    {"per_sequence", m.memory.per_sequence}};
    mj["max_batch_alone"] = m.max_batch_alone;
    mj["latency"] = {
        {"prefill_s", m.prefill_s},
        {"prefill_bound", m.prefill.compute_s >= m.prefill.memory_s ? "compute" : "memory"},
        {"decode_step_s", e.output_tokens > 0 ? Json(m.decode.time_s) : Json(nullptr)},
        {"decode_bound",
         e.output_tokens > 0 ? Json(m.decode.compute_s >= m.decode.memory_s ? "compute" : "memory") : Json(nullptr)},
        {"decode_s", m.decode_s},
        {"total_s", m.latency_s},
        {"bound", m.bound}};
    mj["cold_load_s"] = m.cold_load_s;
    mj["switch_s"] = m.switch_s;
    mj["utilisation"] = m.utilisation;
    mj["gpu"] = m.gpu >= 0 ? Json(m.gpu) : Json(nullptr);
    mj["unplaced_reason"] = m.gpu >= 0 ? Json(nullptr) : Json(m.unplaced_reason);
    models.push_back(mj);
  }
  j["models"] = models;
  Json groups = Json::array();
  for (const auto& g : r.groups) {
    Json names = Json::array();
    for (int i : g.members) names.push_back(r.models[static_cast<size_t>(i)].entry.name);
    groups.push_back(
        {{"architecture", g.architecture}, {"members", names}, {"weight_bytes_each", g.weight_bytes_each}});
  }
  j["groups"] = groups;
  j["packing"] = r.packing_method;
  Json gpus = Json::array();
  for (size_t g = 0; g < r.gpu_use.size(); ++g) {
    const GpuUse& u = r.gpu_use[g];
    Json names = Json::array();
    for (int i : u.models) names.push_back(r.models[static_cast<size_t>(i)].entry.name);
    gpus.push_back({{"gpu", g},
                    {"models", names},
                    {"models_bytes", u.models_bytes},
                    {"reserved_bytes", U(u.reserved)},
                    {"margin_bytes", U(u.margin)},
                    {"free_bytes", U(u.free)},
                    {"utilisation", u.utilisation}});
  }
  j["assignment"] = gpus;
  Json un = Json::array();
  for (int i : r.unplaced)
    un.push_back({{"name", r.models[static_cast<size_t>(i)].entry.name},
                  {"reason", r.models[static_cast<size_t>(i)].unplaced_reason}});
  j["unplaced"] = un;
  j["svg"] = r.svg_path.empty() ? Json(nullptr) : Json(r.svg_path);
  return j;
}

}  // namespace lmkit::accounting
