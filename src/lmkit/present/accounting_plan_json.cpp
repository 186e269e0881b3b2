// `plan` as the JSON document --json prints (schema lmkit.plan/2; bytes exact).
#include <algorithm>
#include <cmath>

#include "lmkit/present/accounting.h"
#include "lmkit/present/accounting_json.h"
#include "lmkit/present/accounting_json_fields.h"

namespace lmkit::present {
namespace {

using namespace accounting;  // NOLINT: this file prints accounting's types and nothing else

// Byte counts print as exact integers in JSON (the inputs are whole bytes; capacities are decimal GB).
uint64_t U(double bytes) { return static_cast<uint64_t>(std::llround(std::max(0.0, bytes))); }

// Rows that name models by index need the whole result.
std::optional<std::string> NonEmpty(const std::string& s) { return s.empty() ? std::nullopt : std::optional(s); }

const char* Bound(const Roofline& r) { return r.compute_s >= r.memory_s ? "compute" : "memory"; }

struct PlanGroupRow {
  const ArchGroup& group;
  const PlanResult& result;
};

struct PlanGpuRow {
  size_t index;
  const GpuUse& use;
  const PlanResult& result;
};

struct PlanModelRow {
  const ModelEstimate& m;
  const PlanResult& result;
};

struct PlanUnplacedRow {
  const ModelEstimate& m;
  const PlanResult& result;
};

std::vector<std::string> Names(const std::vector<int>& indices, const PlanResult& r) {
  std::vector<std::string> names;
  for (int i : indices) names.push_back(r.models[static_cast<size_t>(i)].entry.name);
  return names;
}

}  // namespace

LMKIT_JSON_FIELDS(HostFacts,  //
                  Field("disk_bytes_per_s", &T::disk_bytes_per_s),
                  Field("pcie_pinned_bytes_per_s", &T::pcie_pinned_bytes_per_s),
                  Field("pcie_pageable_bytes_per_s", &T::pcie_pageable_bytes_per_s), Field("pinned", &T::pinned),
                  Field("disk_from_plan", &T::disk_from_plan),
                  Field("pcie_pinned_from_plan", &T::pinned_rate_from_plan),
                  Field("pcie_pageable_from_plan", &T::pageable_rate_from_plan),
                  Field("allreduce_latency_s", &T::allreduce_latency_s));

LMKIT_JSON_ENUM(LatencyBound, EnumNameOf(LatencyBoundNames(), v));

LMKIT_JSON_FIELDS(WhatIf, Computed("change", &WhatIfText), Computed("detail", &WhatIfDetail));

LMKIT_JSON_FIELDS(
    PlanModelRow,  //
    Computed("name", [](const T& r) { return r.m.entry.name; }),
    Computed("model", [](const T& r) { return NonEmpty(r.m.entry.model); }),
    Computed("family", [](const T& r) { return r.m.entry.spec.family; }),
    Computed("architecture", [](const T& r) { return r.m.architecture; }),
    Computed("group", [](const T& r) { return r.m.group; }),
    Computed("dtype", [](const T& r) { return r.m.entry.dtype; }),
    Computed("kv_dtype", [](const T& r) { return r.m.memory.kv_dtype; }),
    Computed("quant_scope", [](const T& r) { return r.m.entry.quant_scope; }),
    Computed("tp", [](const T& r) { return r.m.entry.tp; }),
    Computed("batch", [](const T& r) { return r.m.entry.batch; }),
    Computed("seq_len", [](const T& r) { return r.m.entry.seq_len; }),
    Computed("output_tokens", [](const T& r) { return r.m.entry.output_tokens; }),
    Computed("requests_per_s", [](const T& r) { return r.m.entry.requests_per_s; }),
    Computed("parameters", [](const T& r) { return r.m.memory.params.total; }),
    Object("memory",  //
           Computed("weights", [](const T& r) { return r.m.memory.weights; }),
           Computed("kv_cache", [](const T& r) { return r.m.memory.kv_cache; }),
           Computed("activations", [](const T& r) { return r.m.memory.activations; }),
           Computed("runtime", [](const T& r) { return r.m.runtime; }),
           Computed("total", [](const T& r) { return r.m.footprint; }),
           Computed("kv_bytes_per_token", [](const T& r) { return r.m.memory.kv_bytes_per_token; }),
           Computed("kv_bytes_per_token_gpu", [](const T& r) { return r.m.memory.kv_bytes_per_token_gpu; }),
           Computed("per_sequence", [](const T& r) { return r.m.memory.per_sequence; })),
    Object("kv_budget",  //
           Computed("bytes", [](const T& r) { return r.m.kv_budget; }),
           Computed("tokens", [](const T& r) { return r.m.kv_budget_tokens; }),
           Computed("sequences", [](const T& r) { return r.m.max_sequences; }),
           Computed("from",
                    [](const T& r) {
                      return r.m.entry.gpu_memory_utilization > 0 ? "gpu_memory_utilization"
                             : r.m.entry.kv_tokens > 0            ? "kv_tokens"
                                                                  : "batch x seq_len";
                    })),
    Computed("max_batch_alone", [](const T& r) { return r.m.max_batch_alone; }),
    // Decode fields are null for a model that generates nothing (one forward pass).
    Object("latency",  //
           Computed("prefill_s", [](const T& r) { return r.m.prefill_s; }),
           Computed("prefill_bound", [](const T& r) { return Bound(r.m.prefill); }),
           Computed("decode_step_s",
                    [](const T& r) {
                      return r.m.entry.output_tokens > 0 ? std::optional(r.m.decode.time_s) : std::nullopt;
                    }),
           Computed("decode_bound",
                    [](const T& r) {
                      return r.m.entry.output_tokens > 0 ? std::optional<std::string>(Bound(r.m.decode)) : std::nullopt;
                    }),
           Computed("decode_s", [](const T& r) { return r.m.decode_s; }),
           Computed("allreduce_prefill_s", [](const T& r) { return r.m.prefill_comm.seconds; }),
           Computed("allreduce_decode_step_s",
                    [](const T& r) {
                      return r.m.entry.output_tokens > 0 ? std::optional(r.m.decode_comm.seconds) : std::nullopt;
                    }),
           Computed("allreduces_per_pass", [](const T& r) { return r.m.prefill_comm.count; }),
           Computed("total_s", [](const T& r) { return r.m.latency_s; }),
           Computed("bound", [](const T& r) { return r.m.bound; })),
    Computed("cold_load_s", [](const T& r) { return r.m.cold_load_s; }),
    Computed("switch_s", [](const T& r) { return r.m.switch_s; }),
    Computed("utilisation", [](const T& r) { return r.m.utilisation; }),
    Computed("gpu", [](const T& r) { return r.m.gpus.empty() ? std::nullopt : std::optional(r.m.gpus.front()); }),
    Computed("gpus", [](const T& r) { return r.m.gpus; }),
    Computed("fits_alone", [](const T& r) { return r.m.fits_alone; }),
    // The sentence needs the plan's GPU and packing, which the row carries.
    Computed("unplaced_reason",
             [](const T& r) { return r.m.gpus.empty() ? std::optional(UnplacedReason(r.result, r.m)) : std::nullopt; }),
    Computed("what_if", [](const T& r) { return r.m.what_if; }),
    Computed("warnings", [](const T& r) { return r.m.warnings; }));

LMKIT_JSON_FIELDS(PlanGroupRow,  //
                  Computed("architecture", [](const T& g) { return g.group.architecture; }),
                  Computed("members", [](const T& g) { return Names(g.group.members, g.result); }),
                  Computed("weight_bytes_each", [](const T& g) { return g.group.weight_bytes_each; }));

LMKIT_JSON_FIELDS(PlanGpuRow,  //
                  Field("gpu", &T::index), Computed("models", [](const T& g) { return Names(g.use.models, g.result); }),
                  Computed("models_bytes", [](const T& g) { return g.use.models_bytes; }),
                  Computed("reserved_bytes", [](const T& g) { return U(g.use.reserved); }),
                  Computed("margin_bytes", [](const T& g) { return U(g.use.margin); }),
                  Computed("free_bytes", [](const T& g) { return U(g.use.free); }),
                  Computed("utilisation", [](const T& g) { return g.use.utilisation; }));

LMKIT_JSON_FIELDS(PlanUnplacedRow,  //
                  Computed("name", [](const T& u) { return u.m.entry.name; }),
                  Computed("reason", [](const T& u) { return UnplacedReason(u.result, u.m); }));

LMKIT_JSON_FIELDS(PlanResult,  //
                  Computed("schema", [](const T&) { return "lmkit.plan/2"; }),
                  Computed("plan", [](const T& r) { return r.plan.path; }),
                  Computed("gpu",
                           [](const T& r) {
                             Json g = ToJson(r.gpu);
                             g.at("memory_bytes") = U(r.gpu.memory_bytes);  // whole bytes: the table gives decimal GB
                             return g;
                           }),
                  Field("gpus", &T::gpus),
                  Computed("reserved_bytes_per_gpu", [](const T& r) { return U(r.plan.reserved_bytes); }),
                  Computed("runtime_bytes_per_model", [](const T& r) { return U(r.plan.runtime_bytes_per_model); }),
                  Computed("fragmentation", [](const T& r) { return r.plan.fragmentation; }),
                  Computed("margin_bytes_per_gpu",
                           [](const T& r) { return U(r.gpu.memory_bytes * r.plan.fragmentation); }),
                  Computed("usable_bytes_per_gpu", [](const T& r) { return U(r.usable_bytes); }),
                  Computed("host", [](const T& r) { return r.plan.host; }),
                  Computed("models",
                           [](const T& r) {
                             std::vector<PlanModelRow> rows;
                             for (const auto& m : r.models) rows.push_back({m, r});
                             return ToJsonValue(rows);
                           }),
                  Computed("groups",
                           [](const T& r) {
                             std::vector<PlanGroupRow> rows;
                             for (const auto& g : r.groups) rows.push_back({g, r});
                             return ToJsonValue(rows);
                           }),
                  Field("packing", &T::packing_method), Field("packing_optimal", &T::packing_optimal),
                  Computed("assignment",
                           [](const T& r) {
                             std::vector<PlanGpuRow> rows;
                             for (size_t g = 0; g < r.gpu_use.size(); ++g) rows.push_back({g, r.gpu_use[g], r});
                             return ToJsonValue(rows);
                           }),
                  Computed("unplaced",
                           [](const T& r) {
                             std::vector<PlanUnplacedRow> rows;
                             for (int i : r.unplaced) rows.push_back({r.models[static_cast<size_t>(i)], r});
                             return ToJsonValue(rows);
                           }),
                  Computed("svg", [](const T& r) { return NonEmpty(r.svg_path); }),
                  If([](const T& r) { return r.timeline != nullptr; },
                     Computed("timeline", [](const T& r) { return PlanTimelineJson(r); })));

Json PlanJson(const PlanResult& r) { return ToJson(r); }

}  // namespace lmkit::present
