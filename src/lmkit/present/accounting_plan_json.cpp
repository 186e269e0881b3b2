// `plan` as the JSON document --json prints (schema lmkit.plan/2; bytes exact).
#include <algorithm>
#include <cmath>

#include "lmkit/present/accounting.h"
#include "lmkit/present/accounting_json.h"

namespace lmkit::present {
namespace {

using namespace accounting;  // NOLINT: this file prints accounting's types and nothing else

// Byte counts print as exact integers in JSON (the inputs are whole bytes; capacities are decimal GB).
uint64_t U(double bytes) { return static_cast<uint64_t>(std::llround(std::max(0.0, bytes))); }

}  // namespace

Json PlanJson(const PlanResult& r) {
  const Plan& p = r.plan;
  Json j;
  j["schema"] = "lmkit.plan/2";
  j["plan"] = p.path;
  j["gpu"] = GpuJson(r.gpu);
  j["gpu"]["memory_bytes"] = U(r.gpu.memory_bytes);
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
               {"pcie_pageable_from_plan", h.pageable_rate_from_plan},
               {"allreduce_latency_s", h.allreduce_latency_s}};
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
    mj["kv_dtype"] = DtypeName(m.memory.kv_dtype);
    mj["quant_scope"] = std::string(EnumNameOf(QuantScopeNames(), e.quant_scope));
    mj["tp"] = e.tp;
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
                    {"kv_bytes_per_token_gpu", m.memory.kv_bytes_per_token_gpu},
                    {"per_sequence", m.memory.per_sequence}};
    mj["kv_budget"] = {{"bytes", m.kv_budget},
                       {"tokens", m.kv_budget_tokens},
                       {"sequences", m.max_sequences},
                       {"from", e.gpu_memory_utilization > 0 ? "gpu_memory_utilization"
                                : e.kv_tokens > 0            ? "kv_tokens"
                                                             : "batch x seq_len"}};
    mj["max_batch_alone"] = m.max_batch_alone;
    mj["latency"] = {
        {"prefill_s", m.prefill_s},
        {"prefill_bound", m.prefill.compute_s >= m.prefill.memory_s ? "compute" : "memory"},
        {"decode_step_s", e.output_tokens > 0 ? Json(m.decode.time_s) : Json(nullptr)},
        {"decode_bound",
         e.output_tokens > 0 ? Json(m.decode.compute_s >= m.decode.memory_s ? "compute" : "memory") : Json(nullptr)},
        {"decode_s", m.decode_s},
        {"allreduce_prefill_s", m.prefill_comm.seconds},
        {"allreduce_decode_step_s", e.output_tokens > 0 ? Json(m.decode_comm.seconds) : Json(nullptr)},
        {"allreduces_per_pass", m.prefill_comm.count},
        {"total_s", m.latency_s},
        {"bound", m.bound}};
    mj["cold_load_s"] = m.cold_load_s;
    mj["switch_s"] = m.switch_s;
    mj["utilisation"] = m.utilisation;
    mj["gpu"] = m.gpus.empty() ? Json(nullptr) : Json(m.gpus.front());
    mj["gpus"] = m.gpus;
    mj["fits_alone"] = m.fits_alone;
    mj["unplaced_reason"] = m.gpus.empty() ? Json(UnplacedReason(r, m)) : Json(nullptr);
    Json wi = Json::array();
    for (const auto& w : m.what_if) wi.push_back({{"change", w.change}, {"detail", w.detail}});
    mj["what_if"] = wi;
    mj["warnings"] = m.warnings;
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
  j["packing_optimal"] = r.packing_optimal;
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
                  {"reason", UnplacedReason(r, r.models[static_cast<size_t>(i)])}});
  j["unplaced"] = un;
  j["svg"] = r.svg_path.empty() ? Json(nullptr) : Json(r.svg_path);
  if (r.timeline) j["timeline"] = PlanTimelineJson(r);
  return j;
}

}  // namespace lmkit::present
