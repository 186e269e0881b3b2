// The JSON document of `lmkit dataload` (schema lmkit.dataload/2, docs/dataload.md).
#include <cinttypes>
#include <cstdio>

#include "lmkit/present/dataload.h"

namespace lmkit::present {
namespace {

using dataload::CacheMode;
using dataload::DataloadReport;
using dataload::LoaderConfig;
using dataload::RunResult;
using dataload::StageStats;

Json StageJson(const StageStats& s) {
  Json j;
  j["count"] = s.count;
  j["mean_us"] = s.mean_s * 1e6;
  j["p50_us"] = s.p50_s * 1e6;
  j["p90_us"] = s.p90_s * 1e6;
  j["p99_us"] = s.p99_s * 1e6;
  j["max_us"] = s.max_s * 1e6;
  return j;
}

Json ConfigJson(const LoaderConfig& c, const std::string& device) {
  Json cfg;
  cfg["batch_size"] = c.batch_size;
  cfg["context_length"] = c.context_length;
  cfg["access"] = dataload::AccessName(c.access);
  cfg["advice"] = dataload::AdviceName(c.advice);
  cfg["cache"] = dataload::CacheModeName(c.cache);
  cfg["threads"] = c.threads;
  cfg["prefetch"] = c.prefetch;
  cfg["out_dtype"] = dataload::OutDtypeName(c.out);
  cfg["device"] = device;
  cfg["pinned"] = c.pinned;
  return cfg;
}

Json VocabJson(const dataload::VocabResult& v) {
  if (v.ids_checked == 0) return nullptr;
  Json j;
  j["scope"] = "sampled windows";
  j["windows_checked"] = v.windows_checked;
  j["ids_checked"] = v.ids_checked;
  j["out_of_range"] = v.out_of_range;
  j["out_of_range_is_lower_bound"] = v.out_of_range_capped;
  j["max_id"] = v.max_id;
  j["first_out_of_range"] = v.out_of_range > 0 ? Json(v.first_bad_where) : Json(nullptr);
  return j;
}

Json RunJson(const DataloadReport& rep, const RunResult& r, const FieldNamer& field) {
  const LoaderConfig& c = r.config;
  Json j;
  j["config"] = ConfigJson(c, rep.device);
  Json tp;
  tp["tokens_per_s"] = r.tokens_per_s;
  tp["batches_per_s"] = r.batches_per_s;
  tp["batches"] = r.batches;
  tp["steady_batches"] = r.steady_batches;
  tp["first_batch_ms"] = r.first_batch_s * 1e3;
  tp["warmup_ms"] = r.warmup_s * 1e3;
  tp["steady_s"] = r.steady_s;
  j["throughput"] = tp;
  Json st;
  st["sample"] = StageJson(r.sample);
  st["gather"] = StageJson(r.gather);
  st["convert"] = StageJson(r.convert);
  st["stage"] = r.h2d_ran && c.pinned ? StageJson(r.stage) : Json(nullptr);
  st["h2d"] = r.h2d_ran ? StageJson(r.h2d) : Json(nullptr);
  st["produce"] = StageJson(r.produce);
  st["consumer_wait"] = StageJson(r.wait);
  st["evict"] = c.cache == CacheMode::kColdEach ? StageJson(r.evict) : Json(nullptr);
  j["stages"] = st;
  Json h;
  h["ran"] = r.h2d_ran;
  h["skipped_because"] = r.h2d_ran ? Json(nullptr) : Json(RenderFields(r.h2d_skipped, field));
  j["host_to_device"] = h;
  Json io;
  io["read_bytes"] = r.read_bytes;
  io["useful_bytes"] = r.useful_bytes;
  io["read_amplification"] = r.read_amplification;
  io["produced_batches"] = r.produced_batches;
  io["minor_faults"] = r.minor_faults;
  io["major_faults"] = r.major_faults;
  io["resident_before_bytes"] = r.resident_before;
  io["resident_after_bytes"] = r.resident_after;
  io["eviction_effective"] = r.eviction_effective;
  j["storage"] = io;
  j["vocab_check"] = VocabJson(r.vocab);
  char hex[24];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, r.checksum);
  j["checksum"] = hex;
  if (r.demand.given) {
    Json d;
    d["source"] = r.demand.source;
    d["description"] = r.demand.description;
    d["tokens_per_s"] = r.demand.tokens_per_s;
    d["step_time_ms"] = r.demand.step_time_s * 1e3;
    d["flops_per_token"] = r.demand.flops_per_token > 0 ? Json(r.demand.flops_per_token) : Json(nullptr);
    j["demand"] = d;
  } else {
    j["demand"] = nullptr;
  }
  Json v;
  v["level"] = dataload::InputBoundName(r.level);
  if (r.demand.given) {
    v["wait_share"] = r.sim.wait_share;
    v["steps_waited_share"] = r.sim.steps_waited_share;
    v["wait_p50_ms"] = r.sim.p50_wait_s * 1e3;
    v["wait_p99_ms"] = r.sim.p99_wait_s * 1e3;
    v["wait_max_ms"] = r.sim.max_wait_s * 1e3;
    v["simulated_steps"] = r.sim.steps;
    v["capacity_ratio"] = r.capacity_ratio;
    v["handoff_us"] = r.handoff_s * 1e6;
    v["reason"] = DataloadReason(r);
    v["knob"] = DataloadKnob(r, field);
  }
  j["verdict"] = v;
  Json cc;
  cc["available"] = r.cold.available;
  if (r.cold.available) {
    cc["measured"] = r.cold.model.rfind("measured", 0) == 0;
    cc["tokens_per_s"] = r.cold.tokens_per_s;
    cc["read_amplification"] = r.cold.read_amplification;
    cc["bytes_per_window"] = r.cold.bytes_per_window;
    cc["model"] = RenderFields(r.cold.model, field);
    cc["level"] = dataload::InputBoundName(r.cold_level);
    if (r.demand.given) cc["wait_share"] = r.cold_wait_share;
  } else {
    cc["why_not"] = r.cold.why_not;
  }
  j["cold_cache"] = cc;
  return j;
}

}  // namespace

Json DataloadJson(const DataloadReport& rep, const FieldNamer& field) {
  Json j;
  j["schema"] = kDataloadSchema;
  Json files = Json::array();
  for (size_t i = 0; i < rep.shards.size(); ++i) {
    const dataload::TokenShard& s = rep.shards[i];
    const dataload::FileSystemFacts& fs = rep.fs[i];
    Json f;
    f["path"] = s.path;
    f["format"] = s.npy ? "npy" : "bin";
    f["dtype"] = TokenDtypeOf(s.token_bytes);
    f["tokens"] = s.tokens;
    f["bytes"] = s.file_bytes;
    f["data_offset"] = s.data_offset;
    f["fs_type"] = fs.fs_type;
    f["device"] = fs.device;
    f["read_ahead_kb"] = fs.read_ahead_kb >= 0 ? Json(fs.read_ahead_kb) : Json(nullptr);
    f["rotational"] = fs.rotational_known ? Json(fs.rotational) : Json(nullptr);
    files.push_back(f);
  }
  j["files"] = files;
  j["device"] = rep.device;
  Json p;
  p["ok"] = rep.probe.ok;
  if (rep.probe.ok) {
    p["read_latency_us"] = rep.probe.read_latency_s * 1e6;
    p["parallel_reads_per_s"] = rep.probe.parallel_reads_per_s;
    p["sequential_bytes_per_s"] = rep.probe.sequential_bytes_per_s;
  } else {
    p["why_not"] = rep.probe.why_not;
  }
  j["storage_probe"] = p;
  j["sweep"] = rep.sweep ? Json(rep.sweep_axes) : Json(nullptr);
  Json runs = Json::array();
  for (const auto& r : rep.runs) runs.push_back(RunJson(rep, r, field));
  j["runs"] = runs;
  j["recommended"] = rep.recommended >= 0 ? Json(rep.recommended) : Json(nullptr);
  j["recommendation"] = rep.recommended >= 0 ? Json(DataloadRecommendation(rep)) : Json(nullptr);
  j["gate_level"] = dataload::InputBoundName(dataload::GateLevel(rep));
  return j;
}

}  // namespace lmkit::present
