// The dataload report as text and as JSON (schema lmkit.dataload/1, documented in docs/dataload.md).
#include <cinttypes>
#include <cstdio>

#include "lmkit/common/progress.h"
#include "lmkit/dataload/profile.h"

namespace lmkit::dataload {
namespace {

std::string Fmt(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

std::string Bytes(double b) { return FormatBytes(b); }  // one byte formatter for every report

std::string Tokens(double tps) {
  if (tps >= 1e6) return Fmt("%.1f M tokens/s", tps / 1e6);
  if (tps >= 1e3) return Fmt("%.1f k tokens/s", tps / 1e3);
  return Fmt("%.0f tokens/s", tps);
}

std::string Time(double s) {
  if (s < 1e-3) return Fmt("%.1f us", s * 1e6);
  if (s < 1) return Fmt("%.2f ms", s * 1e3);
  return Fmt("%.2f s", s);
}

std::string Pct(double x) { return Fmt("%.1f%%", x * 100); }

std::string Grouped(uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string StageRow(const char* name, const StageStats& s) {
  char b[160];
  std::snprintf(b, sizeof b, "  %-16s %10s %10s %10s %10s %10s\n", name, Time(s.mean_s).c_str(), Time(s.p50_s).c_str(),
                Time(s.p90_s).c_str(), Time(s.p99_s).c_str(), Time(s.max_s).c_str());
  return b;
}

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

std::string ConfigLine(const LoaderConfig& c, const std::string& device) {
  return "B=" + std::to_string(c.batch_size) + " T=" + std::to_string(c.context) + " access=" + AccessName(c.access) +
         " advice=" + AdviceName(c.advice) + " cache=" + CacheModeName(c.cache) +
         " threads=" + std::to_string(c.threads) + " prefetch=" + std::to_string(c.prefetch) +
         " out=" + OutDtypeName(c.out) + " device=" + device +
         (device == "cpu" ? "" : (c.pinned ? " pinned" : " pageable"));
}

void RunText(const DataloadReport& rep, const RunResult& r, std::string* out) {
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
    o += "page cache  " + Pct(static_cast<double>(before) / total) + " of the file(s) resident before, " +
         Pct(static_cast<double>(after) / total) + " after\n";
  }
  o += "throughput  " + Tokens(r.tokens_per_s) + ", " + Fmt("%.0f", r.batches_per_s) + " batches/s (" +
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
      o += "  stage (pinned)   skipped: --pageable copies straight from pageable memory\n";
    o += StageRow("host->device", r.h2d);
  } else {
    o += "  stage (pinned)   skipped (" + r.h2d_skipped + ")\n";
    o += "  host->device     skipped (" + r.h2d_skipped + ")\n";
  }
  o += StageRow("= produce", r.produce);
  o += StageRow("consumer wait", r.wait);
  if (c.cache == CacheMode::kColdEach) o += StageRow("(evict, untimed)", r.evict);
  o += "\nstorage     read " + Bytes(static_cast<double>(r.read_bytes)) + " for " +
       Bytes(static_cast<double>(r.useful_bytes)) + " of windows: read amplification " +
       Fmt("%.2fx", r.read_amplification) + "; page faults " + Grouped(r.minor_faults) + " minor, " +
       Grouped(r.major_faults) + " major\n";
  if (r.vocab.ids_checked > 0) {
    o += "vocab       " + Grouped(r.vocab.ids_checked) + " ids checked, max id " + std::to_string(r.vocab.max_id) +
         (r.vocab.out_of_range > 0 ? ", " + Grouped(r.vocab.out_of_range) + " OUT OF RANGE (first: id " +
                                         std::to_string(r.vocab.first_bad_id) + " at " + r.vocab_first_bad_where + ")"
                                   : ", all in range") +
         "\n";
  }
  if (r.demand.given) {
    o += "demand      " + Tokens(r.demand.tokens_per_s) + " = " + Time(r.demand.step_time_s) + " per " +
         std::to_string(c.batch_size) + "x" + std::to_string(c.context) + " batch (" + r.demand.description + ")\n";
    o += "verdict     " + std::string(InputBoundPhrase(r.level)) + ": waits " + Pct(r.sim.wait_share) +
         " of step time; " + Pct(r.sim.steps_waited_share) + " of steps waited (p99 wait " + Time(r.sim.p99_wait_s) +
         "); capacity " + Fmt("%.2fx", r.capacity_ratio) + " demand; first batch " + Time(r.first_batch_s) + "\n";
    o += "  why       " + r.reason + "\n";
    o += "  knob      " + r.knob + "\n";
  } else {
    o += "verdict     none: no demand given (--tokens-per-s, --step-time-ms or --model --gpu --mfu)\n";
  }
  if (r.cold.available) {
    o += std::string("cold cache  ") + (r.cold.model.rfind("measured", 0) == 0 ? "measured" : "projected") + ": " +
         Tokens(r.cold.tokens_per_s) + ", " + Fmt("%.1fx", r.cold.read_amplification) + " read amplification" +
         (r.demand.given
              ? std::string(" -> ") + InputBoundPhrase(r.cold_level) + " (waits " + Pct(r.cold_wait_share) + ")"
              : "") +
         "\n            (" + r.cold.model + ")\n";
  } else {
    o += "cold cache  no projection: " + r.cold.why_not + "\n";
  }
}

Json RunJson(const DataloadReport& rep, const RunResult& r) {
  const LoaderConfig& c = r.config;
  Json j;
  Json cfg;
  cfg["batch_size"] = c.batch_size;
  cfg["context_length"] = c.context;
  cfg["access"] = AccessName(c.access);
  cfg["advice"] = AdviceName(c.advice);
  cfg["cache"] = CacheModeName(c.cache);
  cfg["threads"] = c.threads;
  cfg["prefetch"] = c.prefetch;
  cfg["out_dtype"] = OutDtypeName(c.out);
  cfg["device"] = rep.device;
  cfg["pinned"] = c.pinned;
  j["config"] = cfg;
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
  h["skipped_because"] = r.h2d_ran ? Json(nullptr) : Json(r.h2d_skipped);
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
  if (r.vocab.ids_checked > 0) {
    Json v;
    v["ids_checked"] = r.vocab.ids_checked;
    v["out_of_range"] = r.vocab.out_of_range;
    v["max_id"] = r.vocab.max_id;
    v["first_out_of_range"] = r.vocab.out_of_range > 0 ? Json(r.vocab_first_bad_where) : Json(nullptr);
    j["vocab_check"] = v;
  } else {
    j["vocab_check"] = nullptr;
  }
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
  v["level"] = InputBoundName(r.level);
  if (r.demand.given) {
    v["wait_share"] = r.sim.wait_share;
    v["steps_waited_share"] = r.sim.steps_waited_share;
    v["wait_p50_ms"] = r.sim.p50_wait_s * 1e3;
    v["wait_p99_ms"] = r.sim.p99_wait_s * 1e3;
    v["wait_max_ms"] = r.sim.max_wait_s * 1e3;
    v["simulated_steps"] = r.sim.steps;
    v["capacity_ratio"] = r.capacity_ratio;
    v["reason"] = r.reason;
    v["knob"] = r.knob;
  }
  j["verdict"] = v;
  Json cc;
  cc["available"] = r.cold.available;
  if (r.cold.available) {
    cc["measured"] = r.cold.model.rfind("measured", 0) == 0;
    cc["tokens_per_s"] = r.cold.tokens_per_s;
    cc["read_amplification"] = r.cold.read_amplification;
    cc["bytes_per_window"] = r.cold.bytes_per_window;
    cc["model"] = r.cold.model;
    cc["level"] = InputBoundName(r.cold_level);
    if (r.demand.given) cc["wait_share"] = r.cold_wait_share;
  } else {
    cc["why_not"] = r.cold.why_not;
  }
  j["cold_cache"] = cc;
  return j;
}

}  // namespace

std::string ReportToText(const DataloadReport& rep) {
  std::string o;
  uint64_t tokens = 0, bytes = 0;
  for (const auto& s : rep.shards) {
    tokens += s.tokens;
    bytes += s.file_bytes;
  }
  const FileSystemFacts& fs = rep.fs[0];
  o += "files       " + std::to_string(rep.shards.size()) + (rep.shards.size() == 1 ? " file, " : " files, ") +
       Grouped(tokens) + " " + TokenDtypeName(rep.shards[0].token_bytes) + " tokens (" +
       Bytes(static_cast<double>(bytes)) + ") on " + fs.fs_type + " (device " + fs.device + ", read_ahead_kb " +
       (fs.read_ahead_kb >= 0 ? std::to_string(fs.read_ahead_kb) : std::string("unknown")) +
       (fs.rotational_known ? (fs.rotational ? ", rotational" : ", non-rotational") : "") + ")\n";
  if (rep.probe.ok) {
    o += "storage     " + Time(rep.probe.read_latency_s) + " per random 4 KiB read (queue depth 1), " +
         Fmt("%.0f", rep.probe.parallel_reads_per_s) + " reads/s at queue depth 8, " +
         Bytes(rep.probe.sequential_bytes_per_s) + "/s sequential (O_DIRECT probe)\n";
  }
  if (!rep.sweep) {
    RunText(rep, rep.runs[0], &o);
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
      knobs += ConfigValue(r.config, a);
    }
    std::snprintf(b, sizeof b, "%s %-40s %14s %10s %10s %7.1fx %8s  %s\n",
                  static_cast<int>(i) == rep.recommended ? "*" : " ", knobs.c_str(), Tokens(r.tokens_per_s).c_str(),
                  Time(r.produce.p50_s).c_str(), Time(r.produce.p99_s).c_str(), r.read_amplification,
                  r.demand.given ? Pct(r.sim.wait_share).c_str() : "-", r.demand.given ? InputBoundName(r.level) : "-");
    o += b;
  }
  o += "  (p50/p99: time to produce one batch; wait: share of step time the simulated consumer waits)\n";
  o += "\nconfig      " + ConfigLine(rep.runs[0].config, rep.device) + " (swept knobs as in the table)\n";
  if (rep.recommended >= 0) {
    o += "recommended " + rep.recommendation + "\n";
    const RunResult& r = rep.runs[static_cast<size_t>(rep.recommended)];
    if (r.demand.given) {
      o += "  why       " + r.reason + "\n";
      o += "  knob      " + r.knob + "\n";
    }
  }
  return o;
}

Json ReportToJson(const DataloadReport& rep) {
  Json j;
  j["schema"] = kDataloadSchema;
  Json files = Json::array();
  for (size_t i = 0; i < rep.shards.size(); ++i) {
    const TokenShard& s = rep.shards[i];
    const FileSystemFacts& fs = rep.fs[i];
    Json f;
    f["path"] = s.path;
    f["format"] = s.npy ? "npy" : "bin";
    f["dtype"] = TokenDtypeName(s.token_bytes);
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
  for (const auto& r : rep.runs) runs.push_back(RunJson(rep, r));
  j["runs"] = runs;
  j["recommended"] = rep.recommended >= 0 ? Json(rep.recommended) : Json(nullptr);
  j["recommendation"] = rep.recommended >= 0 ? Json(rep.recommendation) : Json(nullptr);
  j["gate_level"] = InputBoundName(GateLevel(rep));
  return j;
}

}  // namespace lmkit::dataload
