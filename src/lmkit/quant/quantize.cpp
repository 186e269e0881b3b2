// The one tensor walk under every output format of `lmkit quantize` (checkpoint_writer.h has the writers).
#include "lmkit/quant/quantize.h"

#include <array>
#include <cmath>
#include <filesystem>
#include <vector>

#include "lmkit/common/atomic_file.h"
#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"
#include "lmkit/common/output_check.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/model/config.h"
#include "lmkit/model/eval.h"
#include "lmkit/quant/calibrated.h"
#include "lmkit/quant/checkpoint_writer.h"
#include "lmkit/quant/quantize_plan.h"

namespace lmkit::quant {
namespace {

namespace fs = std::filesystem;

constexpr std::array<double, 7> kAlphas = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};

bool Calibrated(const QuantizeRequest& o) {
  return o.method == QuantMethod::kGptq || o.smoothquant_alpha.has_value() || o.smoothquant_auto;
}

// The request checks of the calibrated methods that need no file.
// No output may replace an input (the checkpoint, the calibration table, the calibration tokens), and the
// checkpoint and the extra outputs are distinct files. (A directory input's shards are checked by MakePlan.)
Status CheckOutputs(const QuantizeRequest& o) {
  const std::vector<std::string> ins = {o.input, o.calibration, o.calibration_tokens};
  LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput(ins, o.output, "output"));
  std::vector<std::pair<std::string, std::string>> outputs = {{"output", o.output}};
  for (const QuantizeRequest::ExtraOutput& e : o.extra_outputs) {
    if (e.field.empty()) continue;
    LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput(ins, e.path, e.field));
    outputs.emplace_back(e.field, e.path);
  }
  return CheckDistinctOutputs(outputs);
}

Status CheckCalibratedRequest(const QuantizeRequest& o) {
  if (!Calibrated(o)) {
    if (!o.calibration_tokens.empty())
      return Status::InvalidArgument(Field("calibration_tokens") + " is read by " + Field("method") + " gptq and " +
                                     Field("smoothquant") + " only");
    return Status::Ok();
  }
  if (o.calibration_tokens.empty())
    return Status::InvalidArgument(
        std::string(o.method == QuantMethod::kGptq ? Field("method") + " gptq" : Field("smoothquant")) + " needs " +
        Field("calibration_tokens"));
  if (o.smoothquant_alpha && o.smoothquant_auto)
    return Status::InvalidArgument(Field("smoothquant") + " takes one alpha or auto, not both");
  if (o.smoothquant_alpha && !(*o.smoothquant_alpha >= 0 && *o.smoothquant_alpha <= 1))
    return Status::InvalidArgument(Field("smoothquant") + " alpha must be in [0, 1]");
  if (o.format != QuantFormat::kCompressedTensors)
    return Status::InvalidArgument(Field("method") + " gptq and " + Field("smoothquant") +
                                   " write compressed-tensors only, not " + std::string(InfoOf(o.format).name));
  if (o.method == QuantMethod::kGptq && InfoOf(o.scheme).weights.substr(0, 3) != "int")
    return Status::InvalidArgument(Field("method") + " gptq codes int schemes (w8a16, w8a8, w4a16), not " +
                                   std::string(InfoOf(o.scheme).name));
  if (!(o.dampening >= 0) || !std::isfinite(o.dampening))
    return Status::InvalidArgument(Field("dampening") + " must be a finite number >= 0");
  return Status::Ok();
}

// The tensor walk: writes the checkpoint (with `prepared`'s tensors in place of the input's) and the extra outputs;
// `fill` completes the report before `render` renders the extra outputs.
Result<QuantizeResult> Write(const QuantizeRequest& o, const detail::Prepared* prepared, ProgressSink* progress,
                             const std::function<void(QuantizeResult*)>& fill, const RenderQuantizeOutput& render) {
  const double t0 = MonotonicSeconds();
  std::unique_ptr<detail::CheckpointWriter> writer =
      o.format == QuantFormat::kGgufQ8_0 ? detail::MakeGgufWriter(o) : detail::MakeCompressedTensorsWriter(o, prepared);
  LMKIT_RETURN_IF_ERROR(writer->CheckRequest());
  LMKIT_ASSIGN_OR_RETURN(detail::Matchers matchers, detail::CompileMatchers(o));
  LMKIT_ASSIGN_OR_RETURN(detail::Plan plan, detail::MakePlan(o, writer->SingleOutputFile()));

  QuantizeResult rep;
  rep.input = o.input;
  rep.output = o.output;
  rep.scheme = std::string(InfoOf(o.scheme).name);
  rep.granularity = GranularityName(o.granularity);
  rep.format = std::string(InfoOf(o.format).name);
  // The extra outputs are opened before any output, so an unwritable one fails the run before anything is written.
  std::vector<AtomicFile> extra;
  for (const QuantizeRequest::ExtraOutput& e : o.extra_outputs) {
    LMKIT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(e.path));
    extra.push_back(std::move(f));
  }
  LMKIT_RETURN_IF_ERROR(writer->Prepare(plan, matchers, &rep));

  uint64_t total_bytes = 0;
  for (const detail::Shard& s : plan.shards)
    for (const io::TensorInfo& t : s.file.tensors()) total_bytes += t.num_bytes();
  ThreadPool pool(std::max(1u, o.threads));
  uint64_t done_bytes = 0;
  if (progress) progress->Begin("quantizing", total_bytes, "B");
  for (size_t si = 0; si < plan.shards.size(); ++si) {
    const detail::Shard& s = plan.shards[si];
    // Tensor bytes are read with pread, not through the header's mapping (file_reader.h says why).
    LMKIT_ASSIGN_OR_RETURN(FileReader in, FileReader::Open(s.in_path));
    if (in.size() != s.file.file_bytes()) return Status::InvalidInput(s.in_path, "file changed while being read");
    for (size_t ti = 0; ti < s.file.tensors().size(); ++ti) {
      const io::TensorInfo& t = s.file.tensors()[ti];
      detail::TensorOutcome out;
      LMKIT_RETURN_IF_ERROR(writer->WriteTensor(si, ti, in, pool, &out));
      if (out.kind != detail::TensorOutcome::Kind::kDropped) {
        rep.bytes_before += t.num_bytes();
        rep.bytes_after += out.bytes_written;
      }
      if (out.kind == detail::TensorOutcome::Kind::kQuantized) {
        rep.params_quantized += t.num_elements();
        rep.total.Merge(out.report.stats);
        rep.tensors.push_back(std::move(out.report));
      } else if (out.kind == detail::TensorOutcome::Kind::kCopied) {
        ++rep.tensors_copied;
      }
      done_bytes += t.num_bytes();
      if (progress) progress->Update(done_bytes);
    }
  }
  if (progress) progress->Finish();
  rep.seconds = MonotonicSeconds() - t0;
  rep.peak_rss_bytes = PeakRssBytes();
  if (fill) fill(&rep);
  // Secondary outputs first: if one fails, the checkpoint has not been renamed into place either.
  for (size_t i = 0; i < extra.size(); ++i) {
    LMKIT_RETURN_IF_ERROR(extra[i].Write(render ? render(rep, i) : std::string()));
    LMKIT_RETURN_IF_ERROR(extra[i].Commit());
  }
  LMKIT_RETURN_IF_ERROR(writer->Commit());
  return rep;
}

// Removes a scratch directory of the alpha sweep when it goes out of scope.
struct ScratchDir {
  std::string path;
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

std::span<const double> SmoothQuantAlphas() { return kAlphas; }

Result<QuantizeResult> Quantize(const QuantizeRequest& o, ProgressSink* progress, const RenderQuantizeOutput& render) {
  if (o.input.empty() || o.output.empty())
    return Status::InvalidArgument(Field("input") + " and " + Field("output") + " are required");
  LMKIT_RETURN_IF_ERROR(CheckOutputs(o));
  LMKIT_RETURN_IF_ERROR(CheckCalibratedRequest(o));
  if (!Calibrated(o)) return Write(o, nullptr, progress, nullptr, render);
  const double t0 = MonotonicSeconds();
  LMKIT_ASSIGN_OR_RETURN(detail::Matchers matchers, detail::CompileMatchers(o));
  LMKIT_ASSIGN_OR_RETURN(detail::Plan plan, detail::MakePlan(o, false));
  if (!plan.directory || plan.config_path.empty())
    return Status::InvalidArgument(Field("method") + " gptq and " + Field("smoothquant") +
                                   " run the model: INPUT must be a model directory with config.json");
  // The format's own request checks run before the calibration run, not after it.
  LMKIT_RETURN_IF_ERROR(detail::MakeCompressedTensorsWriter(o)->CheckRequest());
  ThreadPool pool(std::max(1u, o.threads));
  std::optional<detail::CalibrationStats> stats;
  std::optional<detail::CalibrationWindows> windows;
  CalibrationRunReport run;
  if (o.sequential) {
    LMKIT_ASSIGN_OR_RETURN(Json cj, ParseJson(plan.config_text, plan.config_path));
    LMKIT_ASSIGN_OR_RETURN(model::LlamaConfig c, model::ParseLlamaConfig(cj, plan.config_path));
    LMKIT_ASSIGN_OR_RETURN(windows, detail::ReadCalibrationWindows(o, c.max_positions, c.vocab, o.smoothquant_auto));
    run.tokens = o.calibration_label.empty() ? o.calibration_tokens : o.calibration_label;
    run.samples = windows->samples;
    run.held_out = windows->held_out;
    run.seq_len = windows->seq_len;
  } else {
    LMKIT_ASSIGN_OR_RETURN(stats,
                           detail::CalibrationStats::Collect(o, plan, matchers, o.smoothquant_auto, pool, progress));
    run = stats->report();
  }
  // The replaced tensors for `a`: sequential runs calibrate again for each alpha (the later layers' inputs depend on
  // it); the one-pass statistics are shared.
  auto build = [&](std::optional<double> a, ProgressSink* p) -> Result<detail::Prepared> {
    if (windows) return detail::RunSequential(o, plan, matchers, a, *windows, o.keep_in_memory, pool, p);
    return stats->Build(o, a, pool);
  };
  std::optional<double> alpha = o.smoothquant_alpha;
  std::vector<AlphaTrial> trials;
  std::optional<detail::Prepared> best;  // the sweep's best alpha's tensors
  std::optional<size_t> best_index;
  if (o.smoothquant_auto) {
    // Each alpha's checkpoint is written beside OUTPUT and scored against the float model on the held-out windows.
    ScratchDir scratch{o.output + ".lmkit-alpha-sweep"};
    std::error_code ec;
    fs::remove_all(scratch.path, ec);
    if (!fs::create_directory(scratch.path, ec) || ec)
      return Status::Io(scratch.path, "cannot create the alpha sweep's scratch directory: " + ec.message());
    const std::string held = scratch.path + "/held-out.bin";
    const std::vector<uint32_t>& ids = windows ? windows->held_out_tokens : stats->held_out_tokens();
    LMKIT_RETURN_IF_ERROR(WriteFileAtomically(
        held, std::string_view(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(uint32_t))));
    for (double a : kAlphas) {
      LMKIT_ASSIGN_OR_RETURN(detail::Prepared p, build(a, nullptr));
      QuantizeRequest t = o;
      t.output = scratch.path + "/alpha";
      t.extra_outputs.clear();
      LMKIT_RETURN_IF_ERROR(Write(t, &p, nullptr, nullptr, {}).status());
      model::EvalRequest eo;
      eo.model = o.input;
      eo.compare = t.output;
      eo.tokens = held;
      eo.bin_dtype = io::TokenDtype::kU32;
      eo.seq_len = run.seq_len;
      eo.threads = o.threads;
      LMKIT_ASSIGN_OR_RETURN(model::EvalResult er, model::Evaluate(eo, nullptr));
      trials.push_back({a, er.compare->mean_kl, er.compare->top1_agreement});
      fs::remove_all(t.output, ec);
      if (!best || er.compare->mean_kl < trials[*best_index].mean_kl) {
        best = std::move(p);
        best_index = trials.size() - 1;
      }
    }
    // The smallest KL; ties go to the smaller alpha (the first).
    alpha = std::min_element(trials.begin(), trials.end(), [](const AlphaTrial& x, const AlphaTrial& y) {
              return x.mean_kl < y.mean_kl;
            })->alpha;
  }
  if (!best) {
    LMKIT_ASSIGN_OR_RETURN(best, build(alpha, progress));
  }
  const detail::Prepared& prepared = *best;
  run.seconds = MonotonicSeconds() - t0;
  return Write(
      o, &prepared, progress,
      [&](QuantizeResult* r) {
        r->method = std::string(InfoOf(o.method).name);
        r->calibration_run = run;
        r->smoothquant_alpha = alpha;
        r->alpha_sweep = trials;
        r->smoothquant = prepared.smooth;
        r->smoothquant_unsmoothed = prepared.unsmoothed;
        r->seconds = MonotonicSeconds() - t0;
      },
      render);
}

}  // namespace lmkit::quant
