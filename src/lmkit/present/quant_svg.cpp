#include "lmkit/present/quant_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lmkit/present/chart.h"

namespace lmkit::present {
namespace {

constexpr size_t kMaxBars = 256;

std::string G4(double v) { return std::isfinite(v) ? fmt::format("{:.4g}", v) : "n/a"; }

// "model.layers.12.mlp.up_proj.weight" -> (12, "mlp.up_proj"): the first all-digit component is the layer.
std::optional<std::pair<long, std::string>> LayerOf(const std::string& name) {
  size_t start = 0;
  while (start < name.size()) {
    size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    const std::string part = name.substr(start, end - start);
    if (!part.empty() && part.size() < 10 &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      std::string kind = end < name.size() ? name.substr(end + 1) : "";
      const std::string suffix = ".weight";
      if (kind.size() > suffix.size() && kind.compare(kind.size() - suffix.size(), suffix.size(), suffix) == 0)
        kind.resize(kind.size() - suffix.size());
      if (kind.empty()) kind = name.substr(0, start ? start - 1 : 0);
      return std::make_pair(std::stol(part), kind);
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::string CalibrationSvg(const quant::CalibrationTable& table) {
  Figure f;
  double percentile = 0;
  uint64_t bins = 0;
  for (const quant::TensorRange& r : table.tensors)
    if (!r.survey.counts.empty()) {
      percentile = r.survey.percentile;
      bins = r.survey.counts.size();
      break;
    }
  f.title =
      fmt::format("Activation |x| histograms ({} bins, log counts) and the threshold of each calibration method", bins);
  const std::string pct_name = "percentile " + G4(percentile) + "%";
  for (const quant::TensorRange& r : table.tensors) {
    const quant::ThresholdSurvey& s = r.survey;
    if (s.counts.empty()) continue;
    Panel p;
    p.title = r.name;
    p.note = fmt::format("{} samples; amax by minmax {}, {} {}, entropy {}, mse {}; CALIB.json has {} ({})", r.samples,
                         G4(s.minmax), pct_name, G4(s.percentile_amax), G4(s.entropy), G4(s.mse), G4(r.amax),
                         quant::CalibMethodName(table.method));
    p.x = {"|x|", Scale::kLinear, 0.0, std::nullopt};
    p.y = {"samples per bar", Scale::kLog, 0.5, std::nullopt};
    const size_t group = (s.counts.size() + kMaxBars - 1) / kMaxBars;
    XYSeries h{"|x| histogram", Mark::kHistogram, {0.0}, {}};
    for (size_t b = 0; b < s.counts.size(); b += group) {
      const size_t e = std::min(s.counts.size(), b + group);
      uint64_t sum = 0;
      for (size_t i = b; i < e; ++i) sum += s.counts[i];
      h.y.push_back(static_cast<double>(sum));
      h.x.push_back(s.abs_max * static_cast<double>(e) / static_cast<double>(s.counts.size()));
    }
    p.series.push_back(std::move(h));
    p.markers = {{"minmax", s.minmax}, {pct_name, s.percentile_amax}, {"entropy", s.entropy}, {"mse", s.mse}};
    f.panels.push_back(std::move(p));
  }
  f.columns = f.panels.size() > 1 ? 2 : 1;
  f.plot_width = 520;
  f.plot_height = 220;
  return FigureSvg(f);
}

std::string QuantizeSvg(const quant::QuantizeResult& report) {
  Figure f;
  f.title = "Quantization error per tensor: " + report.input + " (" + report.scheme + ", " + report.granularity + ", " +
            report.format + ")";
  Panel sqnr, err;
  sqnr.title = "SQNR (dB; higher is better)";
  err.title = "max |w - w_hat| (lower is better)";
  sqnr.y.label = "dB";
  err.y.label = "max abs error";
  // Per layer when most tensors carry a layer number and there are at least two layers.
  std::map<long, int> layers;
  size_t numbered = 0;
  for (const quant::TensorReport& t : report.tensors)
    if (auto l = LayerOf(t.name)) {
      ++numbered;
      layers[l->first] = 1;
    }
  const bool per_layer = layers.size() >= 2 && 2 * numbered >= report.tensors.size();
  std::vector<std::string> left_out;
  std::map<std::string, size_t> kind_index;
  std::vector<XYSeries> s_sqnr, s_err;
  double lo = INFINITY, hi = 0;
  for (size_t i = 0; i < report.tensors.size(); ++i) {
    const quant::TensorReport& t = report.tensors[i];
    std::string kind = "tensors";
    double x = static_cast<double>(i);
    if (per_layer) {
      auto l = LayerOf(t.name);
      if (!l) {
        left_out.push_back(t.name + " (no layer number)");
        continue;
      }
      kind = l->second;
      x = static_cast<double>(l->first);
    }
    auto [it, added] = kind_index.emplace(kind, s_sqnr.size());
    if (added) {
      const Mark mark = per_layer ? Mark::kLinePoints : Mark::kPoints;
      s_sqnr.push_back({kind, mark, {}, {}});
      s_err.push_back({kind, mark, {}, {}});
    }
    const double db = t.stats.SqnrDb();
    if (!std::isfinite(db)) left_out.push_back(t.name + " (exact: SQNR inf)");
    s_sqnr[it->second].x.push_back(x);
    s_sqnr[it->second].y.push_back(db);
    s_err[it->second].x.push_back(x);
    s_err[it->second].y.push_back(t.stats.max_abs_err);
    if (t.stats.max_abs_err > 0) {
      lo = std::min(lo, t.stats.max_abs_err);
      hi = std::max(hi, t.stats.max_abs_err);
    }
  }
  sqnr.series = std::move(s_sqnr);
  err.series = std::move(s_err);
  if (hi > 0 && hi / lo > 30) err.y.scale = Scale::kLog;
  const std::string x_label = per_layer ? "layer" : "tensor (position in the input)";
  sqnr.x.label = err.x.label = x_label;
  sqnr.x.integer = err.x.integer = true;
  sqnr.note = fmt::format("{} tensors; over all: SQNR {} dB, max |error| {}", report.tensors.size(),
                          G4(report.total.SqnrDb()), G4(report.total.max_abs_err));
  if (!left_out.empty()) {
    std::string names;
    for (size_t i = 0; i < left_out.size() && i < 4; ++i) names += (i ? ", " : "") + left_out[i];
    if (left_out.size() > 4) names += fmt::format(" and {} more", left_out.size() - 4);
    sqnr.note += "; not drawn: " + names;
  }
  f.panels = {std::move(sqnr), std::move(err)};
  f.plot_width = 640;
  f.plot_height = 220;
  return FigureSvg(f);
}

}  // namespace lmkit::present
