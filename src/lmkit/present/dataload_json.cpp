// The JSON document of `lmkit dataload` (schema lmkit.dataload/2, docs/dataload.md).
#include <cinttypes>
#include <cstdio>

#include "lmkit/common/units.h"
#include "lmkit/present/dataload.h"
#include "lmkit/present/json_fields.h"

namespace lmkit::present {
namespace {

using dataload::CacheMode;
using dataload::DataloadResult;
using dataload::LoaderConfig;
using dataload::RunResult;
using dataload::StageStats;

// The views below carry what a row's keys need beyond the row: the report (device), the field namer (messages that
// name request fields), the shard's file-system facts.
struct ConfigRow {
  const LoaderConfig& config;
  const std::string& device;
};

struct RunRow {
  const DataloadResult& report;
  const RunResult& run;
  const FieldNamer& field;
};

struct FileRow {
  const dataload::TokenShard& shard;
  const dataload::FileSystemFacts& fs;
};

struct DataloadDoc {
  const DataloadResult& report;
  const FieldNamer& field;
};

std::optional<StageStats> StageIf(bool ran, const StageStats& s) { return ran ? std::optional(s) : std::nullopt; }

}  // namespace

LMKIT_JSON_ENUM(dataload::InputBound, dataload::InputBoundName(v));

LMKIT_JSON_FIELDS(StageStats,  //
                  Field("count", &T::count), Computed("mean_us", [](const T& s) { return s.mean_s * 1e6; }),
                  Computed("p50_us", [](const T& s) { return s.p50_s * 1e6; }),
                  Computed("p90_us", [](const T& s) { return s.p90_s * 1e6; }),
                  Computed("p99_us", [](const T& s) { return s.p99_s * 1e6; }),
                  Computed("max_us", [](const T& s) { return s.max_s * 1e6; }));

LMKIT_JSON_FIELDS(ConfigRow,  //
                  Computed("batch_size", [](const T& c) { return c.config.batch_size; }),
                  Computed("context_length", [](const T& c) { return c.config.context_length; }),
                  Computed("access", [](const T& c) { return dataload::AccessName(c.config.access); }),
                  Computed("advice", [](const T& c) { return dataload::AdviceName(c.config.advice); }),
                  Computed("cache", [](const T& c) { return dataload::CacheModeName(c.config.cache); }),
                  Computed("threads", [](const T& c) { return c.config.threads; }),
                  Computed("prefetch", [](const T& c) { return c.config.prefetch; }),
                  Computed("out_dtype", [](const T& c) { return dataload::OutDtypeName(c.config.out); }),
                  Computed("device", [](const T& c) { return c.device; }),
                  Computed("pinned", [](const T& c) { return c.config.pinned; }));

LMKIT_JSON_FIELDS(dataload::VocabResult,  //
                  Computed("scope", [](const T&) { return "sampled windows"; }),
                  Field("windows_checked", &T::windows_checked), Field("ids_checked", &T::ids_checked),
                  Field("out_of_range", &T::out_of_range),
                  Field("out_of_range_is_lower_bound", &T::out_of_range_capped), Field("max_id", &T::max_id),
                  Computed("first_out_of_range", [](const T& v) {
                    return v.out_of_range > 0 ? std::optional(v.first_bad_where) : std::nullopt;
                  }));

LMKIT_JSON_FIELDS(dataload::Demand,  //
                  Field("source", &T::source), Field("description", &T::description),
                  Field("tokens_per_s", &T::tokens_per_s),
                  Computed("step_time_ms", [](const T& d) { return d.step_time_s * 1e3; }),
                  Computed("flops_per_token", [](const T& d) {
                    return d.flops_per_token > 0 ? std::optional(d.flops_per_token) : std::nullopt;
                  }));

LMKIT_JSON_FIELDS(
    RunRow,  //
    Computed("config",
             [](const T& r) {
               return ToJson(ConfigRow{r.run.config, r.report.device});
             }),
    Object("throughput",  //
           Computed("tokens_per_s", [](const T& r) { return r.run.tokens_per_s; }),
           Computed("batches_per_s", [](const T& r) { return r.run.batches_per_s; }),
           Computed("batches", [](const T& r) { return r.run.batches; }),
           Computed("steady_batches", [](const T& r) { return r.run.steady_batches; }),
           Computed("first_batch_ms", [](const T& r) { return r.run.first_batch_s * 1e3; }),
           Computed("warmup_ms", [](const T& r) { return r.run.warmup_s * 1e3; }),
           Computed("steady_s", [](const T& r) { return r.run.steady_s; })),
    // Stages that did not run are null.
    Object("stages",  //
           Computed("sample", [](const T& r) { return r.run.sample; }),
           Computed("gather", [](const T& r) { return r.run.gather; }),
           Computed("convert", [](const T& r) { return r.run.convert; }),
           Computed("stage", [](const T& r) { return StageIf(r.run.h2d_ran && r.run.config.pinned, r.run.stage); }),
           Computed("h2d", [](const T& r) { return StageIf(r.run.h2d_ran, r.run.h2d); }),
           Computed("produce", [](const T& r) { return r.run.produce; }),
           Computed("consumer_wait", [](const T& r) { return r.run.wait; }),
           Computed("evict",
                    [](const T& r) { return StageIf(r.run.config.cache == CacheMode::kColdEach, r.run.evict); })),
    Object("host_to_device",  //
           Computed("ran", [](const T& r) { return r.run.h2d_ran; }),
           Computed("skipped_because",
                    [](const T& r) {
                      return r.run.h2d_ran ? std::nullopt
                                           : std::optional<std::string>(RenderFields(r.run.h2d_skipped, r.field));
                    })),
    Object("storage",  //
           Computed("read_bytes", [](const T& r) { return r.run.read_bytes; }),
           Computed("useful_bytes", [](const T& r) { return r.run.useful_bytes; }),
           Computed("read_amplification", [](const T& r) { return r.run.read_amplification; }),
           Computed("produced_batches", [](const T& r) { return r.run.produced_batches; }),
           Computed("minor_faults", [](const T& r) { return r.run.minor_faults; }),
           Computed("major_faults", [](const T& r) { return r.run.major_faults; }),
           Computed("resident_before_bytes", [](const T& r) { return r.run.resident_before; }),
           Computed("resident_after_bytes", [](const T& r) { return r.run.resident_after; }),
           Computed("eviction_effective", [](const T& r) { return r.run.eviction_effective; })),
    Computed("vocab_check",
             [](const T& r) { return r.run.vocab.ids_checked == 0 ? std::nullopt : std::optional(r.run.vocab); }),
    Computed("checksum",
             [](const T& r) {
               char hex[24];
               std::snprintf(hex, sizeof hex, "%016" PRIx64, r.run.checksum);
               return std::string(hex);
             }),
    Computed("demand", [](const T& r) { return r.run.demand.given ? std::optional(r.run.demand) : std::nullopt; }),
    // The verdict's numbers need a demand to compare with.
    Object("verdict",  //
           Computed("level", [](const T& r) { return r.run.level; }),
           If([](const T& r) { return r.run.demand.given; },
              Computed("wait_share", [](const T& r) { return r.run.sim.wait_share; }),
              Computed("steps_waited_share", [](const T& r) { return r.run.sim.steps_waited_share; }),
              Computed("wait_p50_ms", [](const T& r) { return r.run.sim.p50_wait_s * 1e3; }),
              Computed("wait_p99_ms", [](const T& r) { return r.run.sim.p99_wait_s * 1e3; }),
              Computed("wait_max_ms", [](const T& r) { return r.run.sim.max_wait_s * 1e3; }),
              Computed("simulated_steps", [](const T& r) { return r.run.sim.steps; }),
              Computed("capacity_ratio", [](const T& r) { return r.run.capacity_ratio; }),
              Computed("handoff_us", [](const T& r) { return r.run.handoff_s * 1e6; }),
              Computed("reason", [](const T& r) { return DataloadReason(r.run); }),
              Computed("knob", [](const T& r) { return DataloadKnob(r.run, r.field); }))),
    Object("cold_cache",  //
           Computed("available", [](const T& r) { return r.run.cold.available; }),
           If([](const T& r) { return r.run.cold.available; },
              Computed("measured", [](const T& r) { return r.run.cold.model.rfind("measured", 0) == 0; }),
              Computed("tokens_per_s", [](const T& r) { return r.run.cold.tokens_per_s; }),
              Computed("read_amplification", [](const T& r) { return r.run.cold.read_amplification; }),
              Computed("bytes_per_window", [](const T& r) { return r.run.cold.bytes_per_window; }),
              Computed("model", [](const T& r) { return RenderFields(r.run.cold.model, r.field); }),
              Computed("level", [](const T& r) { return r.run.cold_level; }),
              If([](const T& r) { return r.run.demand.given; },
                 Computed("wait_share", [](const T& r) { return r.run.cold_wait_share; }))),
           If([](const T& r) { return !r.run.cold.available; },
              Computed("why_not", [](const T& r) { return r.run.cold.why_not; }))));

LMKIT_JSON_FIELDS(FileRow,  //
                  Computed("path", [](const T& f) { return f.shard.path; }),
                  Computed("format", [](const T& f) { return f.shard.npy ? "npy" : "bin"; }),
                  Computed("dtype", [](const T& f) { return TokenDtypeOf(f.shard.token_bytes); }),
                  Computed("tokens", [](const T& f) { return f.shard.tokens; }),
                  Computed("bytes", [](const T& f) { return f.shard.file_bytes; }),
                  Computed("data_offset", [](const T& f) { return f.shard.data_offset; }),
                  Computed("fs_type", [](const T& f) { return f.fs.fs_type; }),
                  Computed("device", [](const T& f) { return f.fs.device; }),
                  Computed("read_ahead_kb",
                           [](const T& f) {
                             return f.fs.read_ahead_kb >= 0 ? std::optional(f.fs.read_ahead_kb) : std::nullopt;
                           }),
                  Computed("rotational", [](const T& f) {
                    return f.fs.rotational_known ? std::optional(f.fs.rotational) : std::nullopt;
                  }));

LMKIT_JSON_FIELDS(dataload::StorageProbe,  //
                  Field("ok", &T::ok),
                  If([](const T& p) { return p.ok; },
                     Computed("read_latency_us", [](const T& p) { return p.read_latency_s * 1e6; }),
                     Field("parallel_reads_per_s", &T::parallel_reads_per_s),
                     Field("sequential_bytes_per_s", &T::sequential_bytes_per_s)),
                  If([](const T& p) { return !p.ok; }, Field("why_not", &T::why_not)));

LMKIT_JSON_FIELDS(
    DataloadDoc,  //
    Computed("schema", [](const T&) { return kDataloadSchema; }),
    Computed("files",
             [](const T& d) {
               std::vector<FileRow> rows;
               for (size_t i = 0; i < d.report.shards.size(); ++i) rows.push_back({d.report.shards[i], d.report.fs[i]});
               return ToJsonValue(rows);
             }),
    Computed("device", [](const T& d) { return d.report.device; }),
    Computed("storage_probe", [](const T& d) { return d.report.probe; }),
    Computed("sweep", [](const T& d) { return d.report.sweep ? std::optional(d.report.sweep_axes) : std::nullopt; }),
    Computed("runs",
             [](const T& d) {
               std::vector<RunRow> rows;
               for (const auto& r : d.report.runs) rows.push_back({d.report, r, d.field});
               return ToJsonValue(rows);
             }),
    Computed("recommended",
             [](const T& d) { return d.report.recommended >= 0 ? std::optional(d.report.recommended) : std::nullopt; }),
    Computed("recommendation",
             [](const T& d) {
               return d.report.recommended >= 0 ? std::optional(DataloadRecommendation(d.report)) : std::nullopt;
             }),
    Computed("gate_level", [](const T& d) { return dataload::GateLevel(d.report); }));

Json DataloadJson(const DataloadResult& rep, const FieldNamer& field) { return ToJson(DataloadDoc{rep, field}); }

}  // namespace lmkit::present
