#include <cmath>

#include "lmkit/present/quant.h"
#include "lmkit/quant/loader_rules.h"

namespace lmkit::present {
namespace {

Json ShapeJson(const std::vector<uint64_t>& shape) {
  Json a = Json::array();
  for (uint64_t d : shape) a.push_back(d);
  return a;
}

Json NumberOrNull(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

const char* PolicyName(quant::Support::Policy p) {
  switch (p) {
    case quant::Support::Policy::kWrite:
      return "write";
    case quant::Support::Policy::kWarn:
      return "warn";
    case quant::Support::Policy::kRefuse:
      return "refuse";
  }
  return "";
}

}  // namespace

Json QuantizeReportJson(const quant::QuantizeReport& r) {
  Json j;
  j["input"] = r.input;
  j["output"] = r.output;
  j["scheme"] = r.scheme;
  j["granularity"] = r.granularity;
  j["format"] = r.format;
  Json ts = Json::array();
  for (const quant::TensorReport& t : r.tensors) {
    Json e;
    e["name"] = t.name;
    e["shape"] = ShapeJson(t.shape);
    e["dtype"] = t.dtype;
    e["scale_min"] = t.scale_min;
    e["scale_max"] = t.scale_max;
    e["sqnr_db"] = NumberOrNull(t.stats.SqnrDb());
    e["cosine"] = t.stats.Cosine();
    e["max_abs_err"] = t.stats.max_abs_err;
    e["mse"] = t.stats.Mse();
    e["clipped_share"] = t.stats.ClippedShare();
    if (t.gptq_error) {
      e["gptq_error"] = *t.gptq_error;
      e["rtn_error"] = t.rtn_error ? Json(*t.rtn_error) : Json(nullptr);
      e["dead_columns"] = t.dead_columns;
      e["cholesky_failed"] = t.cholesky_failed;
    }
    ts.push_back(std::move(e));
  }
  j["tensors"] = std::move(ts);
  j["method"] = r.method;
  if (r.calibration_run) {
    Json c;
    c["tokens"] = r.calibration_run->tokens;
    c["samples"] = r.calibration_run->samples;
    c["held_out"] = r.calibration_run->held_out;
    c["seq_len"] = r.calibration_run->seq_len;
    c["seconds"] = r.calibration_run->seconds;
    j["calibration_run"] = c;
  }
  j["smoothquant_alpha"] = r.smoothquant_alpha ? Json(*r.smoothquant_alpha) : Json(nullptr);
  Json sweep = Json::array();
  for (const quant::AlphaTrial& a : r.alpha_sweep)
    sweep.push_back(Json{{"alpha", a.alpha}, {"mean_kl", a.mean_kl}, {"top1_agreement", a.top1_agreement}});
  j["alpha_sweep"] = std::move(sweep);
  Json sq = Json::array();
  for (const quant::SmoothReport& m : r.smoothquant) {
    Json e;
    e["norm"] = m.norm;
    e["balanced"] = m.balanced;
    e["scale_min"] = m.scale_min;
    e["scale_max"] = m.scale_max;
    e["scale_spread"] = m.scale_min > 0 ? Json(m.scale_max / m.scale_min) : Json(nullptr);
    e["activation_range_max"] = m.activation_range_max;
    sq.push_back(std::move(e));
  }
  j["smoothquant"] = std::move(sq);
  j["kept_unquantized"] = r.kept_unquantized;
  Json warnings = Json::array();
  for (const std::string& w : r.warnings)
    warnings.push_back(RenderFields(w, [](std::string_view f) { return std::string(f); }));
  j["warnings"] = std::move(warnings);
  Json tot;
  tot["tensors_quantized"] = r.tensors.size();
  tot["tensors_copied"] = r.tensors_copied;
  tot["params_quantized"] = r.params_quantized;
  tot["bytes_before"] = r.bytes_before;
  tot["bytes_after"] = r.bytes_after;
  tot["sqnr_db"] = NumberOrNull(r.total.SqnrDb());
  tot["cosine"] = r.total.Cosine();
  tot["max_abs_err"] = r.total.max_abs_err;
  tot["clipped_share"] = r.total.ClippedShare();
  tot["seconds"] = r.seconds;
  tot["gb_per_s"] = r.GbPerSecond();
  tot["peak_rss_bytes"] = r.peak_rss_bytes;
  j["totals"] = std::move(tot);
  return j;
}

Json CalibrationReportJson(const quant::CalibrationTable& table) {
  Json j = quant::CalibrationToJson(table);
  j["seconds"] = table.seconds;
  j["bytes_read"] = table.bytes_read;
  j["peak_rss_bytes"] = table.peak_rss_bytes;
  if (!table.warnings.empty()) j["warnings"] = table.warnings;
  return j;
}

Json SchemeListJson() {
  using quant::Granularity;
  Json schemes = Json::array();
  Json checkpoints = Json::array();
  // group:4 stands for the group sizes vLLM's Marlin kernels do not take (and divides the rows of small test models
  // such as stories260K, whose 172-wide down_proj no group of 32 or 128 does).
  const std::vector<Granularity> grans = {
      Granularity{Granularity::Kind::kChannel, 0}, Granularity{Granularity::Kind::kTensor, 0},
      Granularity{Granularity::Kind::kGroup, 4}, Granularity{Granularity::Kind::kGroup, 32},
      Granularity{Granularity::Kind::kGroup, 128}};
  auto add = [&](quant::QuantScheme s, quant::QuantFormat f, const Granularity& g, bool static_acts) {
    const quant::Support sup = quant::CheckSupport(s, f, g, static_acts);
    Json e;
    e["scheme"] = quant::InfoOf(s).name;
    e["format"] = quant::InfoOf(f).name;
    e["granularity"] = quant::GranularityName(g);
    e["static_activations"] = static_acts;
    e["policy"] = PolicyName(sup.policy);
    e["message"] = RenderFields(sup.message, [](std::string_view n) { return std::string(n); });
    Json loaders = Json::object();
    for (const quant::LoaderVerdict& v : sup.loaders) {
      Json l;
      l["serves"] = v.serves;
      l["why"] = v.why;
      loaders[std::string(quant::LoaderName(v.loader))] = std::move(l);
    }
    e["loaders"] = std::move(loaders);
    checkpoints.push_back(std::move(e));
  };
  for (const quant::SchemeInfo& i : quant::Schemes()) {
    Json s;
    s["name"] = i.name;
    s["summary"] = i.summary;
    s["weights"] = i.weights;
    s["compressed_tensors_format"] = i.ct_format;
    s["quantized_activations"] = i.activations;
    s["calibration"] = i.needs_calibration ? "required" : i.takes_calibration ? "optional" : "none";
    s["default_granularity"] = i.default_granularity;
    s["llm_compressor_preset"] = i.recipe;
    schemes.push_back(std::move(s));
    for (const Granularity& g : grans) {
      if (!i.needs_calibration) add(i.scheme, quant::QuantFormat::kCompressedTensors, g, false);
      if (i.takes_calibration) add(i.scheme, quant::QuantFormat::kCompressedTensors, g, true);
    }
  }
  add(quant::QuantScheme::kW8A16, quant::QuantFormat::kGgufQ8_0, Granularity{Granularity::Kind::kGroup, 32}, false);
  Json formats = Json::array();
  for (const quant::FormatInfo& f : quant::Formats()) {
    Json e;
    e["name"] = f.name;
    e["summary"] = f.summary;
    formats.push_back(std::move(e));
  }
  Json j;
  j["schemes"] = std::move(schemes);
  j["formats"] = std::move(formats);
  j["checkpoints"] = std::move(checkpoints);
  return j;
}

}  // namespace lmkit::present
