#include <fmt/format.h>

#include <algorithm>

#include "lmkit/common/progress.h"
#include "lmkit/common/units.h"
#include "lmkit/present/quant.h"
#include "lmkit/quant/loader_rules.h"

namespace lmkit::present {

std::string QuantizeReportText(const quant::QuantizeResult& r) {
  size_t w = 6;
  for (const auto& t : r.tensors) w = std::max(w, t.name.size());
  std::string out = fmt::format("{:<{}}  {:>13}  {:>4}  {:>10}  {:>10}  {:>8}  {:>10}  {:>10}  {:>8}\n", "tensor", w,
                                "shape", "type", "scale min", "scale max", "SQNR dB", "cosine", "max err", "clipped");
  for (const auto& t : r.tensors) {
    std::string shape = fmt::format("{}x{}", t.shape[0], t.shape[1]);
    out += fmt::format("{:<{}}  {:>13}  {:>4}  {:>10.4g}  {:>10.4g}  {:>8.2f}  {:>10.7f}  {:>10.4g}  {:>7.4f}%\n",
                       t.name, w, shape, t.dtype, t.scale_min, t.scale_max, t.stats.SqnrDb(), t.stats.Cosine(),
                       t.stats.max_abs_err, 100 * t.stats.ClippedShare());
  }
  out += fmt::format(
      "{} tensors quantized ({} params), {} copied; {} -> {}; SQNR {:.2f} dB, cosine {:.7f}; {:.2f} s, {:.2f} GB/s\n",
      r.tensors.size(), r.params_quantized, r.tensors_copied, FormatBytes(static_cast<double>(r.bytes_before)),
      FormatBytes(static_cast<double>(r.bytes_after)), r.total.SqnrDb(), r.total.Cosine(), r.seconds, r.GbPerSecond());
  if (r.calibration_run)
    out += fmt::format("calibration: {} windows of {} tokens from {}{} ({:.2f} s)\n", r.calibration_run->samples,
                       r.calibration_run->seq_len, r.calibration_run->tokens,
                       r.calibration_run->held_out
                           ? fmt::format(", {} held out for the alpha sweep", r.calibration_run->held_out)
                           : std::string(),
                       r.calibration_run->seconds);
  for (const auto& a : r.alpha_sweep)
    out += fmt::format("smoothquant alpha {:.2f}: KL {:.6g}, top-1 {:.4f}{}\n", a.alpha, a.mean_kl, a.top1_agreement,
                       r.smoothquant_alpha && *r.smoothquant_alpha == a.alpha ? "  <- chosen" : "");
  if (!r.smoothquant.empty()) {
    size_t nw = 4;
    for (const auto& m : r.smoothquant) nw = std::max(nw, m.norm.size());
    out += fmt::format("smoothquant alpha {:.2f}\n{:<{}}  {:>10}  {:>10}  {:>10}  {:>12}\n", *r.smoothquant_alpha,
                       "norm", nw, "scale min", "scale max", "spread", "max act rng");
    for (const auto& m : r.smoothquant)
      out += fmt::format("{:<{}}  {:>10.4g}  {:>10.4g}  {:>10.4g}  {:>12.4g}\n", m.norm, nw, m.scale_min, m.scale_max,
                         m.scale_min > 0 ? m.scale_max / m.scale_min : 0.0, m.activation_range_max);
  }
  for (const auto& n : r.smoothquant_unsmoothed) out += "smoothquant: " + n + "\n";
  if (std::any_of(r.tensors.begin(), r.tensors.end(), [](const auto& t) { return t.gptq_error.has_value(); })) {
    out += fmt::format(
        "GPTQ reconstruction error ||(W - Q) X||^2 / ||W X||^2 on the calibration inputs\n"
        "{:<{}}  {:>12}  {:>12}  {:>8}  {}\n",
        "tensor", w, "gptq", "rtn", "gptq/rtn", "notes");
    for (const auto& t : r.tensors) {
      if (!t.gptq_error) continue;
      const double rtn = t.rtn_error.value_or(0);
      std::string notes;
      if (t.dead_columns) notes += fmt::format("{} dead input channels; ", t.dead_columns);
      if (t.cholesky_failed) notes += "H not positive definite: round-to-nearest; ";
      if (!notes.empty()) notes.resize(notes.size() - 2);
      out += fmt::format("{:<{}}  {:>12.4e}  {:>12.4e}  {:>8.3f}  {}\n", t.name, w, *t.gptq_error, rtn,
                         rtn > 0 ? *t.gptq_error / rtn : 0.0, notes);
    }
  }
  if (!r.kept_unquantized.empty()) {
    out += fmt::format("{} selected weights kept in full precision (rows not a multiple of 32 long):",
                       r.kept_unquantized.size());
    for (const auto& n : r.kept_unquantized) out += " " + n;
    out += "\n";
  }
  return out;
}

std::string CalibrationReportText(const quant::CalibrationTable& table, const std::string& output) {
  std::string out;
  for (const auto& r : table.tensors)
    out += fmt::format("{}  amax {:.6f}  range [{:.6f}, {:.6f}]  samples {}  trt {}\n", r.name, r.amax, r.lo, r.hi,
                       r.samples, quant::TrtScaleHex(r.amax));
  out += fmt::format("{} tensors, {} {} ({}), {:.2f} s -> {}\n", table.tensors.size(),
                     quant::CalibMethodName(table.method),
                     table.method == quant::CalibMethod::kMinMax ? "" : quant::CalibFlavorName(table.flavor),
                     FormatBytes(static_cast<double>(table.bytes_read)), table.seconds, output);
  return out;
}

std::string SchemeListText() {
  const Json j = SchemeListJson();
  std::string out = "schemes:\n";
  for (const Json& s : j.at("schemes"))
    out += fmt::format("  {:<11} {}\n", s["name"].get<std::string>(), s["summary"].get<std::string>());
  out += "formats:\n";
  for (const Json& f : j.at("formats"))
    out += fmt::format("  {:<19} {}\n", f["name"].get<std::string>(), f["summary"].get<std::string>());
  out += fmt::format("\n{:<11} {:<19} {:<10} {:<7} {:<7} {:<7} {:<12} {}\n", "scheme", "format", "granularity",
                     "static", "policy", "vLLM", "transformers", "llama.cpp");
  auto yes = [](const Json& l) { return l["serves"].get<bool>() ? "serves" : "no"; };
  for (const Json& c : j.at("checkpoints"))
    out += fmt::format("{:<11} {:<19} {:<10} {:<7} {:<7} {:<7} {:<12} {}\n", c["scheme"].get<std::string>(),
                       c["format"].get<std::string>(), c["granularity"].get<std::string>(),
                       c["static_activations"].get<bool>() ? "yes" : "no", c["policy"].get<std::string>(),
                       yes(c["loaders"]["vLLM"]), yes(c["loaders"]["transformers"]), yes(c["loaders"]["llama.cpp"]));
  return out;
}

}  // namespace lmkit::present
