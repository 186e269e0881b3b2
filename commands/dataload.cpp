// `lmkit dataload PATH...`: can this token-file pipeline keep the GPU fed, and if not, why? Binds the flags into
// DataloadRequest, calls dataload::RunDataload once and prints the report (text or JSON).
// `lmkit dataload trace TRACE`: the same question about a PyTorch loop, from its torch.profiler trace
// (dataload::RunTrace). Exit codes: 0, 1 (bad input, ids out of --vocab-size), 2 (usage), 3 (--fail-on gate: the
// verdict is at least as bad as asked).
#include "lmkit/present/dataload.h"

#include <cmath>
#include <cstdlib>
#include <optional>

#include "command.h"
#include "lmkit/common/atomic_file.h"
#include "lmkit/dataload/profile.h"
#include "lmkit/dataload/trace.h"

namespace lmkit::cli {
namespace {

// The request fields whose flag is not the field's name with '-' for '_' and a "--" prefix.
const FlagNames kFlags = {{"step_time_s", "--step-time-ms"}, {"duration_s", "--duration"}};

std::string Flag(std::string_view field) { return FlagFor(field, kFlags); }

template <typename E>
CLI::IsMember Member(std::span<const EnumName<E>> table) {
  std::vector<std::string> names;
  for (const auto& e : table) names.emplace_back(e.name);
  return CLI::IsMember(names);
}

std::string Knobs() {
  std::string s;
  for (const char* k : dataload::SweepKnobs()) s += (s.empty() ? "" : ", ") + std::string(k);
  return s;
}

// Exit 3 when `level` is at least what --fail-on asks for.
int Gate(const std::string& cmd, const std::string& fail_on, dataload::InputBound level) {
  if (fail_on.empty()) return kExitOk;
  const bool fail = fail_on == "high"
                        ? level == dataload::InputBound::kHighly
                        : (level == dataload::InputBound::kModerately || level == dataload::InputBound::kHighly);
  if (!fail) return kExitOk;
  std::fprintf(CliErr(), "lmkit %s: gate failed: %s (--fail-on %s)\n", cmd.c_str(), dataload::InputBoundPhrase(level),
               fail_on.c_str());
  return kExitGate;
}

struct DataloadFlags {
  std::vector<std::string> paths;
  std::string dtype = "auto";
  uint64_t batch_size = 12;
  uint64_t context = 1024;
  std::string duration = "10s";
  uint64_t steps = 0;
  uint64_t warmup = 10;
  std::string access = "mmap";
  std::string advice = "normal";
  std::string cache = "as-is";
  unsigned prefetch = 2;
  std::string out_dtype = "int64";
  std::string device = "cpu";
  bool pageable = false;
  bool pinned = false;
  std::string model, gpu;
  double mfu = 0;
  double tokens_per_s = 0;
  double step_time_ms = 0;
  std::vector<std::string> sweep;
  std::string fail_on;
  uint64_t vocab_size = 0;
  uint64_t seed = 0;
};

// "10s", "500ms", "2m", "1.5" (seconds) → seconds; negative when malformed.
double ParseDuration(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v) || v <= 0) return -1;
  std::string unit(end);
  if (unit.empty() || unit == "s") return v;
  if (unit == "ms") return v / 1000;
  if (unit == "m" || unit == "min") return v * 60;
  return -1;
}

int Run(const DataloadFlags& f, const GlobalOptions& g) {
  const std::string cmd = "dataload";
  dataload::DataloadRequest o;
  o.paths = f.paths;
  std::vector<std::string> axes;
  for (const auto& s : f.sweep) {
    // `--sweep a=1,2 b=3 FILE` swallows FILE into the sweep list; put it back among the paths.
    if (s.find('=') == std::string::npos) {
      o.paths.push_back(s);
    } else {
      axes.push_back(s);
    }
  }
  if (o.paths.empty()) return UsageError(cmd, "no token files given (see 'lmkit dataload --help')");
  o.dtype = *io::ParseTokenDtype(f.dtype);  // CLI11 checked it against the table
  dataload::LoaderConfig& c = o.config;
  c.batch_size = f.batch_size;
  c.context_length = f.context;
  for (auto [name, value] : {std::pair<const char*, const std::string*>{"access", &f.access},
                             {"advice", &f.advice},
                             {"cache", &f.cache},
                             {"out-dtype", &f.out_dtype}}) {
    Status st = dataload::ApplyAxisValue(name, *value, &c);
    if (!st.ok()) return UsageError(cmd, "--" + std::string(name) + ": invalid value '" + *value + "'");
  }
  c.threads = g.threads == 0 ? 1 : g.threads;
  c.prefetch = f.prefetch;
  c.pinned = !f.pageable;
  if (f.steps > 0) {
    o.steps = f.steps;
  } else {
    o.duration_s = ParseDuration(f.duration);
    if (o.duration_s <= 0)
      return UsageError(cmd, "--duration: expected e.g. 10s, 500ms or 2m (got '" + f.duration + "')");
  }
  o.warmup = f.warmup;
  if (f.device == "cpu") {
    o.cuda = false;
  } else if (f.device == "cuda" || f.device.rfind("cuda:", 0) == 0) {
    o.cuda = true;
    if (f.device.size() > 5) {
      const std::string idx = f.device.substr(5);
      if (idx.empty() || idx.find_first_not_of("0123456789") != std::string::npos || idx.size() > 4)
        return UsageError(cmd, "--device: expected cpu, cuda or cuda:N (got '" + f.device + "')");
      o.cuda_device = std::stoi(idx);
    }
  } else {
    return UsageError(cmd, "--device: expected cpu, cuda or cuda:N (got '" + f.device + "')");
  }
  // Staging memory only exists on the way to a device; on the CPU path the flag was accepted and changed nothing.
  if (!o.cuda && (f.pinned || f.pageable))
    return UsageError(cmd, std::string(f.pinned ? "--pinned" : "--pageable") +
                               " applies to --device cuda (the host-to-device staging)");
  const int demand_kinds = (!f.model.empty() ? 1 : 0) + (f.tokens_per_s > 0 ? 1 : 0) + (f.step_time_ms > 0 ? 1 : 0);
  if (demand_kinds > 1) return UsageError(cmd, "give one of --model, --tokens-per-s and --step-time-ms");
  if (!f.model.empty()) {
    if (f.gpu.empty() || !(f.mfu > 0)) return UsageError(cmd, "--model needs --gpu NAME and --mfu X too");
    o.demand.kind = dataload::DemandSpec::Kind::kModel;
    o.demand.model = f.model;
    o.demand.gpu = f.gpu;
    o.demand.mfu = f.mfu;
  } else if (!f.gpu.empty() || f.mfu > 0) {
    return UsageError(cmd, "--gpu and --mfu go with --model");
  } else if (f.tokens_per_s > 0) {
    o.demand.kind = dataload::DemandSpec::Kind::kTokensPerSecond;
    o.demand.tokens_per_s = f.tokens_per_s;
  } else if (f.step_time_ms > 0) {
    o.demand.kind = dataload::DemandSpec::Kind::kStepTime;
    o.demand.step_time_s = f.step_time_ms / 1000;
  }
  if (!f.fail_on.empty() && o.demand.kind == dataload::DemandSpec::Kind::kNone) {
    return UsageError(cmd, "--fail-on needs a demand: --tokens-per-s, --step-time-ms or --model --gpu --mfu");
  }
  for (const auto& a : axes) {
    auto axis = dataload::ParseSweepAxis(a);
    if (!axis.ok()) return ReportError(cmd, axis.status(), kFlags);
    if (axis->name == "memory" && !o.cuda)
      return UsageError(cmd, "--sweep memory=... applies to --device cuda (the host-to-device staging)");
    o.sweep.push_back(*axis);
  }
  o.vocab_size = f.vocab_size;
  o.seed = f.seed;

  auto progress = MakeProgress(g);
  auto report = dataload::RunDataload(o, progress.get());
  if (!report.ok()) return ReportError(cmd, report.status(), kFlags);
  for (const auto& n : report->notes) Note(g, cmd, RenderFields(n, Flag));
  if (g.json) {
    PrintJson(present::DataloadJson(*report, Flag));
  } else {
    PrintText(present::DataloadText(*report, Flag));
  }
  for (const auto& r : report->runs) {
    const dataload::VocabResult& v = r.vocab;
    if (v.out_of_range > 0) {
      return ReportError(cmd, Status::InvalidInput(
                                  v.first_bad_where,
                                  "token id " + std::to_string(v.first_bad_id) + " is not below --vocab-size " +
                                      std::to_string(f.vocab_size) + " (" + (v.out_of_range_capped ? "at least " : "") +
                                      std::to_string(v.out_of_range) + " out-of-range " +
                                      (v.out_of_range == 1 ? "position" : "positions") + " in the sampled windows)"));
    }
  }
  return Gate(cmd, f.fail_on, dataload::GateLevel(*report));
}

struct TraceFlags {
  std::string path;
  std::string fail_on;
  std::string svg;
};

int RunTraceCommand(const TraceFlags& f, const GlobalOptions& g) {
  const std::string cmd = "dataload trace";
  if (Status st = CheckOutputIsNotAnInput({f.path}, f.svg, "--svg"); !st.ok()) return ReportError(cmd, st);
  std::optional<AtomicFile> svg;
  if (!f.svg.empty()) {
    auto made = AtomicFile::Create(f.svg);
    if (!made.ok()) return ReportError(cmd, made.status());
    svg = std::move(*made);
  }
  auto report = dataload::RunTrace(f.path);
  if (!report.ok()) return ReportError(cmd, report.status());
  if (svg) {
    Status st = svg->Write(present::TraceSvg(*report));
    if (st.ok()) st = svg->Commit();
    if (!st.ok()) return ReportError(cmd, st);
  }
  for (const auto& n : report->notes) Note(g, cmd, n);
  if (g.json) {
    PrintJson(present::TraceJson(*report));
  } else {
    PrintText(present::TraceText(*report));
  }
  return Gate(cmd, f.fail_on, report->level);
}

}  // namespace

RunFn SetupDataload(CLI::App& sub, const GlobalOptions& g) {
  auto f = std::make_shared<DataloadFlags>();
  auto t = std::make_shared<TraceFlags>();
  CLI::App* trace = sub.add_subcommand("trace",
                                       "is a PyTorch training loop waiting for its DataLoader? (from a "
                                       "torch.profiler trace)");
  trace->fallthrough();
  trace
      ->add_option("trace", t->path,
                   "a torch.profiler Chrome trace: .json or .json.gz (export_chrome_trace, "
                   "tensorboard_trace_handler)")
      ->required();
  trace->add_option("--fail-on", t->fail_on, "exit 3 when the verdict is at least moderately/highly input-bound")
      ->check(CLI::IsMember({"moderate", "high"}));
  trace->add_option("--svg", t->svg, "write a per-step chart (data wait, host-to-device copy, rest) to this SVG file");
  sub.add_option("paths", f->paths, "token files: flat .bin (dtype by --dtype) or .npy (dtype from its header)");
  std::vector<std::string> dtypes;
  for (const auto& e : io::TokenDtypeTable()) dtypes.emplace_back(e.name);
  sub.add_option("--dtype", f->dtype, "token dtype of .bin files (auto: uint16, or uint32 when --vocab-size > 65536)")
      ->check(CLI::IsMember(dtypes));
  sub.add_option("-b,--batch-size", f->batch_size, "windows per batch (nanoGPT GPT-2: 12)")->check(PositiveFinite());
  sub.add_option("-t,--context-length", f->context, "tokens per window, T (nanoGPT GPT-2: 1024)")
      ->check(PositiveFinite());
  auto* dur = sub.add_option("--duration", f->duration, "steady-state time per configuration: 10s, 500ms, 2m");
  auto* steps = sub.add_option("--steps", f->steps, "measure exactly N batches after warm-up instead of --duration")
                    ->check(PositiveFinite());
  dur->excludes(steps);
  sub.add_option("--warmup", f->warmup, "batches before the steady state (timed apart)");
  sub.add_option("--access", f->access, "how windows are read: mmap, pread, direct (O_DIRECT)")
      ->check(Member(dataload::AccessValues()));
  sub.add_option("--advice", f->advice,
                 "read-ahead advice: normal, random (no read-ahead; a batch's windows requested together)")
      ->check(Member(dataload::AdviceValues()));
  sub.add_option("--cache", f->cache,
                 "page cache before the run: as-is, warm (read the files), cold (evict them), cold-each (evict each "
                 "batch's windows: a dataset larger than RAM)")
      ->check(Member(dataload::CacheModeValues()));
  sub.add_option("--prefetch", f->prefetch,
                 "batches produced ahead of the consumer (loader threads: global --threads, "
                 "default 1)")
      ->check(PositiveFinite());
  sub.add_option("--out-dtype", f->out_dtype, "dtype of x and y: int64 (torch LongTensor), int32, uint16")
      ->check(Member(dataload::OutDtypeValues()));
  sub.add_option("--device", f->device, "cpu, or cuda[:N] to add pinned staging and the host->device copy");
  auto* pinned = sub.add_flag("--pinned", f->pinned, "stage batches in pinned memory before the copy (default)");
  auto* pageable = sub.add_flag("--pageable", f->pageable, "copy to the device straight from pageable memory");
  pinned->excludes(pageable);
  sub.add_option("--model", f->model, "demand from a model preset or config.json (needs --gpu and --mfu)");
  sub.add_option("--gpu", f->gpu, "GPU of the demand model (e.g. H200)");
  sub.add_option("--mfu", f->mfu, "model FLOPs utilisation of the demand model, in (0, 1]");
  sub.add_option("--tokens-per-s", f->tokens_per_s, "demand: tokens per second the training step consumes")
      ->check(PositiveFinite());
  sub.add_option("--step-time-ms", f->step_time_ms, "demand: milliseconds per B x T training step")
      ->check(PositiveFinite());
  sub.add_option("--sweep", f->sweep, "knobs to sweep, each NAME=V1,V2 (" + Knobs() + "=pinned,pageable)");
  sub.add_option("--fail-on", f->fail_on, "exit 3 when the verdict is at least moderately/highly input-bound")
      ->check(CLI::IsMember({"moderate", "high"}));
  sub.add_option("--vocab-size", f->vocab_size, "check that every sampled id is below V (exit 1 otherwise)");
  sub.add_option("--seed", f->seed, "sampler seed: the same seed gives the same batches");
  return [f, t, trace, &g] { return trace->parsed() ? RunTraceCommand(*t, g) : Run(*f, g); };
}

}  // namespace lmkit::cli
