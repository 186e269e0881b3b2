// `lmkit calibrate`: activation ranges (amax per tensor) from .npy/.safetensors samples; writes CALIB.json.
#include "lmkit/quant/calibrate.h"

#include <fmt/format.h>

#include <optional>

#include "commands.h"
#include "lmkit/common/atomic_file.h"
#include "lmkit/model/calibrate_model.h"
#include "lmkit/present/quant_svg.h"

namespace lmkit::cli {

RunFn SetupCalibrate(CLI::App& sub, const GlobalOptions& g) {
  struct Args {
    quant::CalibrateOptions o;
    model::CalibrateModelOptions m;
    std::string method, flavor = "nvidia", output, trt_cache, svg;
    double percentile = 0;
  };
  auto a = std::make_shared<Args>();
  sub.description(
      "Per-tensor activation ranges (minmax, percentile, entropy, mse) from .npy/.safetensors activation samples, "
      "streamed through histograms; or from the inputs of every Linear of a model run over token ids (--model)");
  sub.add_option("ACTIVATIONS", a->o.inputs, ".npy or .safetensors files; same-name tensors are merged in order");
  auto* model = sub.add_option("--model", a->m.model,
                               "instead of ACTIVATIONS: a Llama-family checkpoint whose Linear inputs are recorded");
  auto* tokens = sub.add_option("--tokens", a->m.tokens, "with --model: token ids (.npy or uint16 .bin) to run");
  sub.add_option("--seq-len", a->m.seq_len, "with --model: window length (default min(max_position_embeddings, 1024))");
  sub.add_option("--max-tokens", a->m.max_tokens, "with --model: use only the first N tokens");
  sub.add_option("--method", a->method, "minmax, percentile, entropy or mse")->required();
  sub.add_option("--flavor", a->flavor,
                 "nvidia (one |x| histogram over the global max; batch-order independent) or ort (ONNX Runtime's "
                 "histograms grown batch by batch)");
  auto* p =
      sub.add_option("--percentile", a->percentile, "percentile for --method percentile (nvidia 99.99, ort 99.999)");
  auto* bins = sub.add_option("--bins", a->o.bins, "histogram bins for percentile, entropy and mse (default 2048)");
  sub.add_option("-o,--output", a->output, "CALIB.json to write")->required();
  sub.add_option("--trt-cache", a->trt_cache, "also write a TensorRT calibration cache");
  sub.add_option("--svg", a->svg,
                 "also write a chart: each tensor's |x| histogram (log counts) with the threshold of every method "
                 "(minmax, percentile, entropy, mse; nvidia flavour)");
  return [a, p, bins, model, tokens, &g] {
    const bool from_model = model->count() > 0;
    if (from_model == !a->o.inputs.empty())
      return UsageError("calibrate", "give either ACTIVATIONS files or --model with --tokens");
    if (from_model != (tokens->count() > 0)) return UsageError("calibrate", "--model and --tokens go together");
    // The JSON and the cache replace their destination, so one that names an input would destroy it.
    std::vector<std::string> ins = a->o.inputs;
    if (from_model) ins = {a->m.model, a->m.tokens};
    if (Status st = CheckOutputIsNotAnInput(ins, a->output); !st.ok()) return ReportError("calibrate", st);
    if (Status st = CheckOutputIsNotAnInput(ins, a->trt_cache, "--trt-cache"); !st.ok())
      return ReportError("calibrate", st);
    if (!a->trt_cache.empty() && a->trt_cache == a->output)
      return UsageError("calibrate", "-o and --trt-cache name the same file");
    if (Status st = CheckOutputIsNotAnInput(ins, a->svg, "--svg"); !st.ok()) return ReportError("calibrate", st);
    if (!a->svg.empty() && (a->svg == a->output || a->svg == a->trt_cache))
      return UsageError("calibrate",
                        "--svg names the same file as " + std::string(a->svg == a->output ? "-o" : "--trt-cache"));
    auto method = quant::ParseCalibMethod(a->method);
    if (!method.ok()) return ReportError("calibrate", method.status());
    auto flavor = quant::ParseCalibFlavor(a->flavor);
    if (!flavor.ok()) return ReportError("calibrate", flavor.status());
    a->o.method = *method;
    a->o.flavor = *flavor;
    if (bins->count() > 0 && *method == quant::CalibMethod::kMinMax && a->svg.empty())
      return UsageError("calibrate", "--bins applies to the histogram methods (percentile, entropy, mse), not minmax");
    if (p->count() > 0) a->o.percentile = a->percentile;
    a->o.threads = g.ResolvedThreads();
    a->o.survey = !a->svg.empty();
    // Both outputs are opened before the work and committed after it, so an unwritable --trt-cache does not leave
    // a CALIB.json behind with exit 1 (and fails before the calibration time is spent).
    auto out_file = AtomicFile::Create(a->output);
    if (!out_file.ok()) return ReportError("calibrate", out_file.status());
    std::optional<AtomicFile> trt_file;
    if (!a->trt_cache.empty()) {
      auto f = AtomicFile::Create(a->trt_cache);
      if (!f.ok()) return ReportError("calibrate", f.status());
      trt_file = std::move(*f);
    }
    std::optional<AtomicFile> svg_file;
    if (!a->svg.empty()) {
      auto f = AtomicFile::Create(a->svg);
      if (!f.ok()) return ReportError("calibrate", f.status());
      svg_file = std::move(*f);
    }
    auto progress = MakeProgress(g);
    a->m.calib = a->o;
    auto table = from_model ? model::CalibrateModel(a->m, progress.get()) : quant::Calibrate(a->o, progress.get());
    if (!table.ok()) return ReportError("calibrate", table.status(), FlagNames{{"survey", "--svg"}});
    Json doc = quant::CalibrationToJson(*table);
    Status st = out_file->Write(DumpJson(doc) + "\n");
    if (st.ok() && trt_file) st = trt_file->Write(quant::TrtCacheText(*table));
    if (st.ok() && svg_file) st = svg_file->Write(present::CalibrationSvg(*table));
    if (st.ok()) st = out_file->Commit();
    if (st.ok() && trt_file) st = trt_file->Commit();
    if (st.ok() && svg_file) st = svg_file->Commit();
    if (!st.ok()) return ReportError("calibrate", st);
    if (g.json) {
      Json j = doc;
      j["seconds"] = table->seconds;
      j["bytes_read"] = table->bytes_read;
      j["peak_rss_bytes"] = table->peak_rss_bytes;
      PrintJson(j);
      return static_cast<int>(kExitOk);
    }
    std::string out;
    for (const auto& r : table->tensors)
      out += fmt::format("{}  amax {:.6f}  range [{:.6f}, {:.6f}]  samples {}  trt {}\n", r.name, r.amax, r.lo, r.hi,
                         r.samples, quant::TrtScaleHex(r.amax));
    out += fmt::format("{} tensors, {} {} ({}), {:.2f} s -> {}\n", table->tensors.size(),
                       quant::CalibMethodName(table->method),
                       table->method == quant::CalibMethod::kMinMax ? "" : quant::CalibFlavorName(table->flavor),
                       FormatBytes(static_cast<double>(table->bytes_read)), table->seconds, a->output);
    if (svg_file) out += "chart: " + a->svg + "\n";
    PrintText(out);
    return static_cast<int>(kExitOk);
  };
}

}  // namespace lmkit::cli
