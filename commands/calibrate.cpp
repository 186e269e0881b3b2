// `lmkit calibrate`: options -> quant::Calibrate (activation files) or model::CalibrateModel (--model) -> the report
// (present/quant.h). The core writes CALIB.json and the TensorRT cache.
#include "lmkit/quant/calibrate.h"

#include <fmt/format.h>

#include "command.h"
#include "lmkit/model/calibrate_model.h"
#include "lmkit/present/quant.h"

namespace lmkit::cli {
namespace {

std::string MethodHelp() {
  std::string out;
  for (const quant::CalibMethodInfo& m : quant::CalibMethods())
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", m.name, m.summary);
  return out;
}

std::string FlavorHelp() {
  std::string out;
  for (const quant::CalibFlavorInfo& f : quant::CalibFlavors())
    out += fmt::format("{}{} ({})", out.empty() ? "" : " or ", f.name, f.summary);
  return out + "; default nvidia";
}

}  // namespace

RunFn SetupCalibrate(CLI::App& sub, const GlobalOptions& g) {
  struct Args {
    quant::CalibrateRequest o;
    model::CalibrateModelRequest m;
    std::string method, flavor = "nvidia", svg;
    double percentile = 0;
  };
  auto a = std::make_shared<Args>();
  sub.footer(
      "Per-tensor activation ranges (minmax, percentile, entropy, mse) from .npy/.safetensors activation samples, "
      "streamed through histograms; or from the inputs of every Linear of a model run over token ids (--model).");
  sub.add_option("ACTIVATIONS", a->o.inputs, ".npy or .safetensors files; same-name tensors are merged in order");
  auto* model = sub.add_option("--model", a->m.model,
                               "instead of ACTIVATIONS: a checkpoint (docs/model.md families) whose Linear inputs are "
                               "recorded");
  auto* tokens = sub.add_option("--tokens", a->m.tokens, "with --model: token ids (.npy or uint16 .bin) to run");
  sub.add_option("--seq-len", a->m.seq_len,
                 "with --model: window length (default: min(max_position_embeddings, 1024))");
  sub.add_option("--max-tokens", a->m.max_tokens, "with --model: use only the first N tokens");
  sub.add_flag("--all-experts", a->m.all_experts,
               "with --model, MoE: run every expert on every token for calibration (outputs still use the top-k)");
  sub.add_option("--method", a->method, MethodHelp())->required();
  sub.add_option("--flavor", a->flavor, FlavorHelp());
  auto* p =
      sub.add_option("--percentile", a->percentile, "percentile for --method percentile (nvidia 99.99, ort 99.999)");
  auto* bins = sub.add_option("--bins", a->o.bins, "histogram bins for percentile, entropy and mse (default: 2048)");
  sub.add_option("-o,--output", a->o.output, "CALIB.json to write")->required();
  sub.add_option("--trt-cache", a->o.trt_cache, "also write a TensorRT calibration cache");
  sub.add_option("--svg", a->svg,
                 "also write a chart: each tensor's |x| histogram (log counts) with the threshold of every method "
                 "(minmax, percentile, entropy, mse; nvidia flavour)");
  return [a, p, bins, model, tokens, &g] {
    const bool from_model = model->count() > 0;
    if (from_model == !a->o.inputs.empty())
      return UsageError("calibrate", "give either ACTIVATIONS files or --model with --tokens");
    if (from_model != (tokens->count() > 0)) return UsageError("calibrate", "--model and --tokens go together");
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
    const quant::RenderCalibrationOutput chart = present::AddCalibrationOutputs(&a->o, a->svg);
    auto progress = MakeProgress(g);
    a->m.calib = a->o;
    auto table =
        from_model ? model::CalibrateModel(a->m, progress.get(), chart) : quant::Calibrate(a->o, progress.get(), chart);
    if (!table.ok()) return ReportError("calibrate", table.status(), FlagNames{{"survey", "--svg"}, {"output", "-o"}});
    for (const std::string& w : table->warnings) Note(g, "calibrate", "warning: " + w);
    if (g.json)
      PrintJson(present::CalibrationReportJson(*table));
    else
      PrintText(present::CalibrationReportText(*table, a->o.output) +
                (a->svg.empty() ? "" : "chart: " + a->svg + "\n"));
    return static_cast<int>(kExitOk);
  };
}

}  // namespace lmkit::cli
