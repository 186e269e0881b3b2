// The charts of `lmkit calibrate` and `lmkit quantize`: which tensors become which points and panels, and valid SVG.
#include "lmkit/present/quant_svg.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "support/svg_check.h"

using namespace lmkit::quant;

namespace {

bool QuantSvgHas(const std::string& svg, const std::string& what) { return svg.find(what) != std::string::npos; }

// sum x^2 / sum err^2 = 10^(db / 10).
TensorReport QuantSvgTensor(const std::string& name, double db, double max_err) {
  TensorReport t;
  t.name = name;
  t.stats.count = 100;
  t.stats.sum_x2 = 1.0;
  t.stats.sum_err2 = db == 0 ? 0.0 : std::pow(10.0, -db / 10);
  t.stats.max_abs_err = max_err;
  return t;
}

}  // namespace

TEST_CASE("quant svg: per layer, one line per kind of tensor, the rest named in a note", "[present][quant][svg]") {
  QuantizeResult rep;
  rep.input = "in";
  rep.scheme = "w8a16";
  rep.granularity = "channel";
  rep.format = "compressed-tensors";
  rep.tensors = {QuantSvgTensor("model.layers.0.mlp.up_proj.weight", 40, 0.01),
                 QuantSvgTensor("model.layers.1.mlp.up_proj.weight", 30, 0.02),
                 QuantSvgTensor("model.layers.1.self_attn.q_proj.weight", 20, 0.04),
                 QuantSvgTensor("lm_head.weight", 35, 0.01)};
  const std::string svg = lmkit::present::QuantizeSvg(rep);
  lmkit::test::TempDir dir;
  lmkit::test::CheckSvgText(svg, dir, "quant.svg");
  CHECK(QuantSvgHas(svg, "data-series=\"mlp.up_proj\""));
  CHECK(QuantSvgHas(svg, "data-series=\"self_attn.q_proj\""));
  CHECK(QuantSvgHas(svg, "<title>mlp.up_proj: 1, 30</title>"));  // x is the layer, y the SQNR in dB
  CHECK(QuantSvgHas(svg, "<title>self_attn.q_proj: 1, 0.04</title>"));
  CHECK(QuantSvgHas(svg, "lm_head.weight (no layer number)"));
  CHECK_FALSE(QuantSvgHas(svg, "data-series=\"tensors\""));
}

TEST_CASE("quant svg: without layers x is the position, histogram panels only for surveyed tensors",
          "[present][quant][svg]") {
  QuantizeResult rep;
  rep.input = "in";
  rep.tensors = {QuantSvgTensor("a.weight", 40, 0.01), QuantSvgTensor("b.weight", 25, 0.03)};
  const std::string q = lmkit::present::QuantizeSvg(rep);
  CHECK(QuantSvgHas(q, "<title>tensors: 1, 25</title>"));
  CHECK(QuantSvgHas(q, "tensor (position in the input)"));

  CalibrationTable table;
  table.method = CalibMethod::kMinMax;
  TensorRange shown, hidden;
  shown.name = "layers.0.q_proj";
  shown.amax = 3.5;
  shown.samples = 1000;
  shown.survey.counts = {500, 300, 150, 50};
  shown.survey.abs_max = 4;
  shown.survey.percentile = 99.9;
  shown.survey.minmax = 3.5;
  shown.survey.percentile_amax = 3.0;
  shown.survey.entropy = 2.5;
  shown.survey.mse = 2.0;
  hidden.name = "layers.0.o_proj";  // no survey
  table.tensors = {shown, hidden};
  const std::string c = lmkit::present::CalibrationSvg(table);
  lmkit::test::TempDir dir;
  lmkit::test::CheckSvgText(c, dir, "calib.svg");
  CHECK(QuantSvgHas(c, "layers.0.q_proj"));
  CHECK_FALSE(QuantSvgHas(c, "layers.0.o_proj"));
  CHECK(QuantSvgHas(c, "<title>minmax: 3.5</title>"));
  CHECK(QuantSvgHas(c, "<title>percentile 99.9%: 3</title>"));
  CHECK(QuantSvgHas(c, "<title>entropy: 2.5</title>"));
  CHECK(QuantSvgHas(c, "(4 bins, log counts)"));
}
