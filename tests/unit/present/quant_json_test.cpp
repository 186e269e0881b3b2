// The JSON documents of `lmkit quantize` (the report) and `lmkit calibrate`, and the scheme listing scripts read.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "lmkit/present/quant.h"

using namespace lmkit;
using namespace lmkit::quant;

namespace {

// x = 1, 1, 1, 1 against xhat = 0.5, 1.5, 1, 1 (sums as quant/metrics.h keeps them), one code clipped.
ErrorStats QuantJsonStats() {
  ErrorStats s;
  s.count = 4;
  s.clipped = 1;
  s.sum_x2 = 4;
  s.sum_err2 = 0.5;
  s.sum_x_xhat = 4;
  s.sum_xhat2 = 4.5;
  s.max_abs_err = 0.5;
  return s;
}

}  // namespace

TEST_CASE("quant json: the quantize report's tensors and totals, infinite SQNR as null", "[present][quant]") {
  QuantizeResult r;
  r.input = "in";
  r.output = "out";
  r.scheme = "w8a16";
  r.granularity = "channel";
  r.format = "compressed-tensors";
  TensorReport t;
  t.name = "layer.proj.weight";
  t.shape = {2, 2};
  t.dtype = "F32";
  t.scale_min = 0.25f;
  t.scale_max = 0.5f;
  t.stats = QuantJsonStats();
  TensorReport exact = t;
  exact.name = "layer.exact.weight";
  exact.stats.sum_err2 = 0;
  r.tensors = {t, exact};
  r.total = t.stats;
  r.params_quantized = 8;
  r.bytes_before = 2000;
  r.bytes_after = 1000;
  r.seconds = 0.5;
  const Json j = present::QuantizeReportJson(r);
  CHECK(j["scheme"] == "w8a16");
  REQUIRE(j["tensors"].size() == 2);
  const Json& a = j["tensors"][0];
  CHECK(a["name"] == "layer.proj.weight");
  CHECK(a["shape"] == Json::array({2, 2}));
  CHECK(a["sqnr_db"].get<double>() == Approx(10 * std::log10(8.0)));
  CHECK(a["cosine"].get<double>() == Approx(4 / std::sqrt(18.0)));
  CHECK(a["mse"].get<double>() == 0.125);
  CHECK(a["clipped_share"].get<double>() == 0.25);
  CHECK(a["scale_max"].get<double>() == 0.5);
  CHECK(j["tensors"][1]["sqnr_db"].is_null());  // JSON has no infinity
  CHECK(j["totals"]["tensors_quantized"] == 2);
  CHECK(j["totals"]["params_quantized"] == 8);
  CHECK(j["totals"]["gb_per_s"].get<double>() == Approx(3000 / 0.5 / 1e9));
  CHECK(j["kept_unquantized"].empty());
}

TEST_CASE("quant json: the calibration document carries the run's figures", "[present][quant]") {
  CalibrationTable table;
  table.method = CalibMethod::kMinMax;
  TensorRange r;
  r.name = "layers.0.q_proj";
  r.amax = 2.5;
  r.lo = -2.5;
  r.hi = 2.5;
  r.samples = 100;
  table.tensors = {r};
  table.seconds = 1.5;
  table.bytes_read = 4096;
  const Json j = present::CalibrationReportJson(table);
  CHECK(j["seconds"] == 1.5);
  CHECK(j["bytes_read"] == 4096);
  CHECK_FALSE(j.contains("warnings"));  // only when there are some
  table.warnings = {"tensor x has amax 0"};
  CHECK(present::CalibrationReportJson(table)["warnings"] == Json::array({"tensor x has amax 0"}));
  // The CALIB.json part is the same document CalibrationToJson writes.
  const Json calib = CalibrationToJson(table);
  for (const auto& [key, value] : calib.items()) CHECK(j[key] == value);
}

TEST_CASE("quant json: the scheme listing covers every scheme and format once per checkpoint kind",
          "[present][quant]") {
  const Json j = present::SchemeListJson();
  REQUIRE(j["schemes"].size() == Schemes().size());
  REQUIRE(j["formats"].size() == Formats().size());
  std::set<std::string> seen;
  for (const Json& c : j["checkpoints"]) {
    const std::string policy = c["policy"].get<std::string>();
    CHECK((policy == "write" || policy == "warn" || policy == "refuse"));
    CHECK(c["loaders"].contains("vLLM"));
    CHECK(c["loaders"].contains("transformers"));
    CHECK(c["loaders"].contains("llama.cpp"));
    const std::string key = c["scheme"].get<std::string>() + "/" + c["format"].get<std::string>() + "/" +
                            c["granularity"].get<std::string>() + "/" +
                            (c["static_activations"].get<bool>() ? "s" : "d");
    CHECK(seen.insert(key).second);                                                   // no kind listed twice
    CHECK(c["message"].get<std::string>().find(Field("x")[0]) == std::string::npos);  // fields rendered bare
  }
  for (const Json& s : j["schemes"]) {
    const std::string name = s["name"].get<std::string>();
    const char* want = name == "fp8-static" ? "required" : name == "w8a8" ? "optional" : "none";
    CHECK(s["calibration"] == want);
  }
}
