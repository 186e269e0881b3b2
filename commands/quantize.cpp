// `lmkit quantize`: INT8 weights (compressed-tensors, or GGUF Q8_0) from a safetensors checkpoint; prints the error
// report.
#include "lmkit/quant/quantize.h"

#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "commands.h"
#include "lmkit/common/atomic_file.h"
#include "lmkit/present/quant_svg.h"

namespace lmkit::cli {

RunFn SetupQuantize(CLI::App& sub, const GlobalOptions& g) {
  struct Args {
    quant::QuantizeOptions o;
    std::string scheme = "w8a16", granularity, format = "compressed-tensors", report, svg;
  };
  auto a = std::make_shared<Args>();
  sub.description(
      "Quantize the Linear weights of a .safetensors file or Hugging Face model directory to INT8 "
      "(compressed-tensors, symmetric; or GGUF Q8_0 for llama.cpp) and report per-tensor error");
  sub.add_option("INPUT", a->o.input, "a .safetensors file or a model directory (config.json + shards)")->required();
  sub.add_option("-o,--output", a->o.output, "output file (file input) or directory (directory input)")->required();
  sub.add_option("--scheme", a->scheme, "w8a16 (weights only) or w8a8 (INT8 activations too)");
  sub.add_option("--granularity", a->granularity,
                 "channel (default), tensor or group:N; gguf-q8_0 is always group:32 (its Q8_0 blocks)");
  sub.add_option("--calibration", a->o.calibration, "CALIB.json from `lmkit calibrate` (static w8a8 input scales)");
  sub.add_option("--include", a->o.include, "regex: quantize only matching 2-D weights (repeatable)")
      ->allow_extra_args(false);
  sub.add_option("--exclude", a->o.exclude, "regex: never quantize matching tensors (repeatable)")
      ->allow_extra_args(false);
  sub.add_option("--format", a->format,
                 "compressed-tensors (default; a directory for a directory INPUT) or gguf-q8_0 (one llama.cpp GGUF "
                 "file from a Llama-family model directory)");
  sub.add_option("--report", a->report, "also write the JSON report to this file");
  sub.add_option("--svg", a->svg,
                 "also write a chart of SQNR and max error per layer (or per tensor) to this SVG file");
  return [a, &g] {
    auto scheme = quant::ParseQuantScheme(a->scheme);
    if (!scheme.ok()) return ReportError("quantize", scheme.status());
    auto format = quant::ParseQuantFormat(a->format);
    if (!format.ok()) return ReportError("quantize", format.status());
    const bool gguf = *format == quant::QuantFormat::kGgufQ8_0;
    auto gran = quant::ParseGranularity(a->granularity.empty() ? (gguf ? "group:32" : "channel") : a->granularity);
    if (!gran.ok()) return ReportError("quantize", gran.status());
    a->o.scheme = *scheme;
    a->o.granularity = *gran;
    a->o.format = *format;
    a->o.threads = g.ResolvedThreads();
    // Each output replaces its destination: none may be an input (the checkpoint, or the calibration table), and the
    // report may not replace the quantized output. (Quantize itself checks the shards of a directory input.)
    const std::vector<std::string> ins = {a->o.input, a->o.calibration};
    if (Status st = CheckOutputIsNotAnInput(ins, a->o.output); !st.ok()) return ReportError("quantize", st);
    if (Status st = CheckOutputIsNotAnInput(ins, a->report, "--report"); !st.ok()) return ReportError("quantize", st);
    if (Status st = CheckOutputIsNotAnInput(ins, a->svg, "--svg"); !st.ok()) return ReportError("quantize", st);
    std::error_code ec;
    if (!a->report.empty() && std::filesystem::weakly_canonical(std::filesystem::absolute(a->report, ec), ec) ==
                                  std::filesystem::weakly_canonical(std::filesystem::absolute(a->o.output, ec), ec))
      return UsageError("quantize", "-o and --report name the same file");
    for (const std::string* other : {&a->o.output, &a->report})
      if (!a->svg.empty() && std::filesystem::weakly_canonical(std::filesystem::absolute(a->svg, ec), ec) ==
                                 std::filesystem::weakly_canonical(std::filesystem::absolute(*other, ec), ec))
        return UsageError(
            "quantize", std::string("--svg and ") + (other == &a->report ? "--report" : "-o") + " name the same file");
    // The report file is opened before quantizing, so an unwritable --report fails before any output is written
    // instead of after (exit 1 with the quantized model already in place).
    std::optional<AtomicFile> report_file;
    if (!a->report.empty()) {
      auto f = AtomicFile::Create(a->report);
      if (!f.ok()) return ReportError("quantize", f.status());
      report_file = std::move(*f);
    }
    std::optional<AtomicFile> svg_file;
    if (!a->svg.empty()) {
      auto f = AtomicFile::Create(a->svg);
      if (!f.ok()) return ReportError("quantize", f.status());
      svg_file = std::move(*f);
    }
    auto progress = MakeProgress(g);
    auto rep = quant::Quantize(a->o, progress.get());
    if (!rep.ok()) return ReportError("quantize", rep.status());
    Json j = quant::QuantizeReportToJson(*rep);
    if (report_file) {
      Status st = report_file->Write(DumpJson(j) + "\n");
      if (st.ok()) st = report_file->Commit();
      if (!st.ok()) return ReportError("quantize", st);
    }
    if (svg_file) {
      Status st = svg_file->Write(present::QuantizeSvg(*rep));
      if (st.ok()) st = svg_file->Commit();
      if (!st.ok()) return ReportError("quantize", st);
    }
    if (g.json)
      PrintJson(j);
    else
      PrintText(quant::QuantizeReportToText(*rep));
    return static_cast<int>(kExitOk);
  };
}

}  // namespace lmkit::cli
