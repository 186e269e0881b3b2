#include <cmath>

#include "lmkit/present/json_fields.h"
#include "lmkit/present/quant.h"
#include "lmkit/quant/loader_rules.h"

namespace lmkit::present {
namespace {

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

// A non-finite value (the SQNR of an exact reconstruction) has no JSON number: null.
std::optional<double> Finite(double v) { return std::isfinite(v) ? std::optional<double>(v) : std::nullopt; }

// One row of --list-schemes' checkpoints: a combination and what the loaders do with it.
struct CheckpointRow {
  const quant::SchemeInfo& scheme;
  const quant::FormatInfo& format;
  quant::Granularity granularity;
  bool static_activations;
  quant::Support support;
};

// What the calibration run measured, after the table's own keys in calibrate's --json.
struct CalibrationRunView {
  const quant::CalibrationTable& table;
};

// --list-schemes: the schemes, the formats and every combination's loader verdicts.
struct SchemeList {
  std::vector<quant::SchemeInfo> schemes;
  std::vector<quant::FormatInfo> formats;
  std::vector<CheckpointRow> checkpoints;
};

}  // namespace

LMKIT_JSON_ENUM(quant::Support::Policy, PolicyName(v));

LMKIT_JSON_FIELDS(quant::TensorReport,  //
                  Field("name", &T::name), Field("shape", &T::shape), Field("dtype", &T::dtype),
                  Field("scale_min", &T::scale_min), Field("scale_max", &T::scale_max),
                  Computed("sqnr_db", [](const T& t) { return Finite(t.stats.SqnrDb()); }),
                  Computed("cosine", [](const T& t) { return t.stats.Cosine(); }),
                  Computed("max_abs_err", [](const T& t) { return t.stats.max_abs_err; }),
                  Computed("mse", [](const T& t) { return t.stats.Mse(); }),
                  Computed("clipped_share", [](const T& t) { return t.stats.ClippedShare(); }),
                  If([](const T& t) { return t.gptq_error.has_value(); },  // GPTQ only
                     Field("gptq_error", &T::gptq_error), Field("rtn_error", &T::rtn_error),
                     Field("dead_columns", &T::dead_columns), Field("cholesky_failed", &T::cholesky_failed)));

LMKIT_JSON_FIELDS(quant::CalibrationRunReport,  //
                  Field("tokens", &T::tokens), Field("samples", &T::samples), Field("held_out", &T::held_out),
                  Field("seq_len", &T::seq_len), Field("seconds", &T::seconds));

LMKIT_JSON_FIELDS(quant::AlphaTrial,  //
                  Field("alpha", &T::alpha), Field("mean_kl", &T::mean_kl),
                  Field("top1_agreement", &T::top1_agreement));

LMKIT_JSON_FIELDS(quant::SmoothReport,  //
                  Field("norm", &T::norm), Field("balanced", &T::balanced), Field("scale_min", &T::scale_min),
                  Field("scale_max", &T::scale_max),
                  Computed("scale_spread",
                           [](const T& m) {
                             return m.scale_min > 0 ? std::optional<float>(m.scale_max / m.scale_min) : std::nullopt;
                           }),
                  Field("activation_range_max", &T::activation_range_max));

LMKIT_JSON_FIELDS(quant::QuantizeResult,  //
                  Field("input", &T::input), Field("output", &T::output), Field("scheme", &T::scheme),
                  Field("granularity", &T::granularity), Field("format", &T::format), Field("tensors", &T::tensors),
                  Field("method", &T::method), Optional("calibration_run", &T::calibration_run),
                  Field("smoothquant_alpha", &T::smoothquant_alpha), Field("alpha_sweep", &T::alpha_sweep),
                  Field("smoothquant", &T::smoothquant), Field("smoothquant_unsmoothed", &T::smoothquant_unsmoothed),
                  Field("kept_unquantized", &T::kept_unquantized),
                  Computed("warnings",
                           [](const T& r) {
                             std::vector<std::string> out;
                             for (const std::string& w : r.warnings)
                               out.push_back(RenderFields(w, [](std::string_view f) { return std::string(f); }));
                             return out;
                           }),
                  Object("totals",  //
                         Computed("tensors_quantized", [](const T& r) { return r.tensors.size(); }),
                         Field("tensors_copied", &T::tensors_copied), Field("params_quantized", &T::params_quantized),
                         Field("bytes_before", &T::bytes_before), Field("bytes_after", &T::bytes_after),
                         Computed("sqnr_db", [](const T& r) { return Finite(r.total.SqnrDb()); }),
                         Computed("cosine", [](const T& r) { return r.total.Cosine(); }),
                         Computed("max_abs_err", [](const T& r) { return r.total.max_abs_err; }),
                         Computed("clipped_share", [](const T& r) { return r.total.ClippedShare(); }),
                         Field("seconds", &T::seconds),
                         Computed("gb_per_s", [](const T& r) { return r.GbPerSecond(); }),
                         Field("peak_rss_bytes", &T::peak_rss_bytes)));

LMKIT_JSON_FIELDS(quant::SchemeInfo,  //
                  Field("name", &T::name), Field("summary", &T::summary), Field("weights", &T::weights),
                  Field("compressed_tensors_format", &T::ct_format), Field("quantized_activations", &T::activations),
                  Computed("calibration",
                           [](const T& i) {
                             return i.needs_calibration ? "required" : i.takes_calibration ? "optional" : "none";
                           }),
                  Field("default_granularity", &T::default_granularity), Field("llm_compressor_preset", &T::recipe));

LMKIT_JSON_FIELDS(quant::FormatInfo, Field("name", &T::name), Field("summary", &T::summary));

LMKIT_JSON_FIELDS(quant::LoaderVerdict, Field("serves", &T::serves), Field("why", &T::why));

LMKIT_JSON_FIELDS(CheckpointRow,  //
                  Computed("scheme", [](const T& c) { return c.scheme.name; }),
                  Computed("format", [](const T& c) { return c.format.name; }),
                  Computed("granularity", [](const T& c) { return quant::GranularityName(c.granularity); }),
                  Field("static_activations", &T::static_activations),
                  Computed("policy", [](const T& c) { return c.support.policy; }),
                  Computed("message",
                           [](const T& c) {
                             return RenderFields(c.support.message, [](std::string_view n) { return std::string(n); });
                           }),
                  Computed("loaders", [](const T& c) {
                    Json loaders = Json::object();
                    for (const quant::LoaderVerdict& v : c.support.loaders)
                      loaders[std::string(quant::LoaderName(v.loader))] = ToJson(v);
                    return loaders;
                  }));

LMKIT_JSON_FIELDS(CalibrationRunView,  //
                  Computed("seconds", [](const T& v) { return v.table.seconds; }),
                  Computed("bytes_read", [](const T& v) { return v.table.bytes_read; }),
                  Computed("peak_rss_bytes", [](const T& v) { return v.table.peak_rss_bytes; }),
                  ComputedIf("warnings", [](const T& v) -> std::optional<std::vector<std::string>> {
                    if (v.table.warnings.empty()) return std::nullopt;
                    return v.table.warnings;
                  }));

LMKIT_JSON_FIELDS(SchemeList,  //
                  Field("schemes", &T::schemes), Field("formats", &T::formats), Field("checkpoints", &T::checkpoints));

Json QuantizeReportJson(const quant::QuantizeResult& r) { return ToJson(r); }

Json CalibrationReportJson(const quant::CalibrationTable& table) {
  Json j = quant::CalibrationToJson(table);  // the CALIB.json file's own format (quant/calibration.h)
  j.update(ToJson(CalibrationRunView{table}));
  return j;
}

Json SchemeListJson() {
  using quant::Granularity;
  SchemeList list;
  // group:4 stands for the group sizes vLLM's Marlin kernels do not take (and divides the rows of small test models
  // such as stories260K, whose 172-wide down_proj no group of 32 or 128 does).
  const std::vector<Granularity> grans = {
      Granularity{Granularity::Kind::kChannel, 0}, Granularity{Granularity::Kind::kTensor, 0},
      Granularity{Granularity::Kind::kGroup, 4}, Granularity{Granularity::Kind::kGroup, 32},
      Granularity{Granularity::Kind::kGroup, 128}};
  auto add = [&](quant::QuantScheme s, quant::QuantFormat f, const Granularity& g, bool static_acts) {
    list.checkpoints.push_back(
        CheckpointRow{quant::InfoOf(s), quant::InfoOf(f), g, static_acts, quant::CheckSupport(s, f, g, static_acts)});
  };
  for (const quant::SchemeInfo& i : quant::Schemes()) {
    list.schemes.push_back(i);
    for (const Granularity& g : grans) {
      if (!i.needs_calibration) add(i.scheme, quant::QuantFormat::kCompressedTensors, g, false);
      if (i.takes_calibration) add(i.scheme, quant::QuantFormat::kCompressedTensors, g, true);
    }
  }
  add(quant::QuantScheme::kW8A16, quant::QuantFormat::kGgufQ8_0, Granularity{Granularity::Kind::kGroup, 32}, false);
  for (const quant::FormatInfo& f : quant::Formats()) list.formats.push_back(f);
  return ToJson(list);
}

}  // namespace lmkit::present
