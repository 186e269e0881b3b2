// The text report of `lmkit dataload` (one run, or a sweep's table and its recommended point).
#include <fmt/format.h>

#include <cstdio>

#include "lmkit/common/units.h"
#include "lmkit/io/token_dtype.h"
#include "lmkit/present/dataload.h"

namespace lmkit::present {
namespace {

using dataload::CacheMode;
using dataload::DataloadResult;
using dataload::LoaderConfig;
using dataload::RunResult;
using dataload::StageStats;

std::string Bytes(double b) { return FormatBytes(b); }  // one byte formatter for every report

std::string StageRow(const char* name, const StageStats& s) {
  char b[160];
  std::snprintf(b, sizeof b, "  %-16s %10s %10s %10s %10s %10s\n", name, Time(s.mean_s).c_str(), Time(s.p50_s).c_str(),
                Time(s.p90_s).c_str(), Time(s.p99_s).c_str(), Time(s.max_s).c_str());
  return b;
}

std::string ConfigLine(const LoaderConfig& c, const std::string& device) {
  return "B=" + std::to_string(c.batch_size) + " T=" + std::to_string(c.context_length) +
         " access=" + dataload::AccessName(c.access) + " advice=" + dataload::AdviceName(c.advice) +
         " cache=" + dataload::CacheModeName(c.cache) + " threads=" + std::to_string(c.threads) +
         " prefetch=" + std::to_string(c.prefetch) + " out=" + dataload::OutDtypeName(c.out) + " device=" + device +
         (device == "cpu" ? "" : (c.pinned ? " pinned" : " pageable"));
}

std::string VocabLine(const dataload::VocabResult& v) {
  std::string o = "vocab       " + Grouped(v.ids_checked) + " ids of the " + Grouped(v.windows_checked) +
                  " sampled windows checked (not the whole file), max id " + std::to_string(v.max_id);
  if (v.out_of_range == 0) return o + ", all in range\n";
  return o + ", " + (v.out_of_range_capped ? "at least " : "") + Grouped(v.out_of_range) +
         (v.out_of_range == 1 ? " position" : " positions") + " OUT OF RANGE (first: id " +
         std::to_string(v.first_bad_id) + " at " + v.first_bad_where + ")\n";
}

void RunText(const DataloadResult& rep, const RunResult& r, const FieldNamer& field, std::string* out) {
  const LoaderConfig& c = r.config;
  std::string& o = *out;
  o += "config      " + ConfigLine(c, rep.device) + "\n";
  uint64_t before = 0, after = 0, total = 0;
  for (size_t i = 0; i < rep.shards.size(); ++i) {
    total += rep.shards[i].file_bytes;
    before += i < r.resident_before.size() ? r.resident_before[i] : 0;
    after += i < r.resident_after.size() ? r.resident_after[i] : 0;
  }
  if (total > 0) {
    o += "page cache  " + Percent(static_cast<double>(before) / total, 1) + " of the file(s) resident before, " +
         Percent(static_cast<double>(after) / total, 1) + " after\n";
  }
  o += "throughput  " + Tokens(r.tokens_per_s) + ", " + fmt::format("{:.0f}", r.batches_per_s) + " batches/s (" +
       Grouped(r.steady_batches) + " batches in " + Time(r.steady_s) + " after " +
       Grouped(r.batches - r.steady_batches) + " warm-up batches in " + Time(r.warmup_s) + ")\n";
  o += "first batch " + Time(r.first_batch_s) + "\n\n";
  o += "  per batch              mean        p50        p90        p99        max\n";
  o += StageRow("sample", r.sample);
  o += StageRow("gather", r.gather);
  o += StageRow("convert", r.convert);
  if (r.h2d_ran) {
    if (c.pinned)
      o += StageRow("stage (pinned)", r.stage);
    else
      o += "  stage (pinned)   skipped: " + field("pageable") + " copies straight from pageable memory\n";
    o += StageRow("host->device", r.h2d);
  } else {
    const std::string why = RenderFields(r.h2d_skipped, field);
    o += "  stage (pinned)   skipped (" + why + ")\n";
    o += "  host->device     skipped (" + why + ")\n";
  }
  o += StageRow("= produce", r.produce);
  o += StageRow("consumer wait", r.wait);
  if (c.cache == CacheMode::kColdEach) o += StageRow("(evict, untimed)", r.evict);
  o += "\nstorage     read " + Bytes(static_cast<double>(r.read_bytes)) + " for " +
       Bytes(static_cast<double>(r.useful_bytes)) + " of windows: read amplification " +
       fmt::format("{:.2f}x", r.read_amplification) + "; page faults " + Grouped(r.minor_faults) + " minor, " +
       Grouped(r.major_faults) + " major\n";
  if (r.vocab.ids_checked > 0) o += VocabLine(r.vocab);
  if (r.demand.given) {
    o += "demand      " + Tokens(r.demand.tokens_per_s) + " = " + Time(r.demand.step_time_s) + " per " +
         std::to_string(c.batch_size) + "x" + std::to_string(c.context_length) + " batch (" + r.demand.description +
         ")\n";
    o += "verdict     " + std::string(dataload::InputBoundPhrase(r.level)) + ": waits " + Percent(r.sim.wait_share, 1) +
         " of step time; " + Percent(r.sim.steps_waited_share, 1) + " of steps waited (p99 wait " +
         Time(r.sim.p99_wait_s) + "); capacity " + fmt::format("{:.2f}x", r.capacity_ratio) + " demand; first batch " +
         Time(r.first_batch_s) + "\n";
    o += "  why       " + DataloadReason(r) + "\n";
    o += "  knob      " + DataloadKnob(r, field) + "\n";
  } else {
    o += "verdict     none: no demand given (" + field("tokens_per_s") + ", " + field("step_time_s") + " or " +
         field("model") + " " + field("gpu") + " " + field("mfu") + ")\n";
  }
  if (r.cold.available) {
    o += std::string("cold cache  ") + (r.cold.model.rfind("measured", 0) == 0 ? "measured" : "projected") + ": " +
         Tokens(r.cold.tokens_per_s) + ", " + fmt::format("{:.1f}x", r.cold.read_amplification) +
         " read amplification" +
         (r.demand.given ? std::string(" -> ") + dataload::InputBoundPhrase(r.cold_level) + " (waits " +
                               Percent(r.cold_wait_share, 1) + ")"
                         : "") +
         "\n            (" + RenderFields(r.cold.model, field) + ")\n";
  } else {
    o += "cold cache  no projection: " + r.cold.why_not + "\n";
  }
}

}  // namespace

std::string DataloadText(const DataloadResult& rep, const FieldNamer& field) {
  std::string o;
  uint64_t tokens = 0, bytes = 0;
  for (const auto& s : rep.shards) {
    tokens += s.tokens;
    bytes += s.file_bytes;
  }
  const dataload::FileSystemFacts& fs = rep.fs[0];
  o += "files       " + std::to_string(rep.shards.size()) + (rep.shards.size() == 1 ? " file, " : " files, ") +
       Grouped(tokens) + " " + TokenDtypeOf(rep.shards[0].token_bytes) + " tokens (" +
       Bytes(static_cast<double>(bytes)) + ") on " + fs.fs_type + " (device " + fs.device + ", read_ahead_kb " +
       (fs.read_ahead_kb >= 0 ? std::to_string(fs.read_ahead_kb) : std::string("unknown")) +
       (fs.rotational_known ? (fs.rotational ? ", rotational" : ", non-rotational") : "") + ")\n";
  if (rep.probe.ok) {
    o += "storage     " + Time(rep.probe.read_latency_s) + " per random 4 KiB read (queue depth 1), " +
         fmt::format("{:.0f}", rep.probe.parallel_reads_per_s) + " reads/s at queue depth 8, " +
         Bytes(rep.probe.sequential_bytes_per_s) + "/s sequential (O_DIRECT probe)\n";
  }
  if (!rep.sweep) {
    RunText(rep, rep.runs[0], field, &o);
    return o;
  }
  o += "\n";
  char b[256];
  std::snprintf(b, sizeof b, "  %-40s %14s %10s %10s %8s %8s  %s\n", "knobs", "tokens/s", "p50", "p99", "read amp",
                "wait", "verdict");
  o += b;
  for (size_t i = 0; i < rep.runs.size(); ++i) {
    const RunResult& r = rep.runs[i];
    std::string knobs;
    for (const auto& a : rep.sweep_axes) {
      if (!knobs.empty()) knobs += ' ';
      knobs += dataload::ConfigValue(r.config, a);
    }
    std::snprintf(b, sizeof b, "%s %-40s %14s %10s %10s %7.1fx %8s  %s\n",
                  static_cast<int>(i) == rep.recommended ? "*" : " ", knobs.c_str(), Tokens(r.tokens_per_s).c_str(),
                  Time(r.produce.p50_s).c_str(), Time(r.produce.p99_s).c_str(), r.read_amplification,
                  r.demand.given ? Percent(r.sim.wait_share, 1).c_str() : "-",
                  r.demand.given ? dataload::InputBoundName(r.level) : "-");
    o += b;
  }
  o += "  (p50/p99: time to produce one batch; wait: share of step time the simulated consumer waits)\n";
  o += "\nconfig      " + ConfigLine(rep.runs[0].config, rep.device) + " (swept knobs as in the table)\n";
  if (rep.recommended >= 0) {
    o += "recommended " + DataloadRecommendation(rep) + "\n";
    const RunResult& r = rep.runs[static_cast<size_t>(rep.recommended)];
    if (r.demand.given) {
      o += "  why       " + DataloadReason(r) + "\n";
      o += "  knob      " + DataloadKnob(r, field) + "\n";
    }
  }
  return o;
}

std::string TokenDtypeOf(unsigned token_bytes) {
  return std::string(io::TokenDtypeName(io::TokenDtypeOfBytes(token_bytes)));
}

}  // namespace lmkit::present
