// The extra outputs of quantize and calibrate: AddQuantizeOutputs/AddCalibrationOutputs add the paths the front end was
// given, in order, and the renderer they return gives each its document (the bytes --report and --svg write).
#include <catch2/catch.hpp>

#include "lmkit/present/quant.h"
#include "lmkit/present/quant_svg.h"

using namespace lmkit;

TEST_CASE("quant outputs: the report and the chart go into the request with their renderer", "[present][quant]") {
  quant::QuantizeResult r;
  r.input = "in.safetensors";
  r.output = "out.safetensors";
  r.scheme = "w8a16";
  quant::QuantizeRequest req;
  auto render = present::AddQuantizeOutputs(&req, "report.json", "chart.svg");
  REQUIRE(req.extra_outputs.size() == 2);
  CHECK(req.extra_outputs[0].path == "report.json");
  CHECK(req.extra_outputs[0].field == "report");
  CHECK(req.extra_outputs[1].path == "chart.svg");
  CHECK(req.extra_outputs[1].field == "svg");
  CHECK(render(r, 0) == DumpJson(present::QuantizeReportJson(r)) + "\n");
  CHECK(render(r, 1) == present::QuantizeSvg(r));

  // Only the chart: it is output 0; an empty path adds nothing.
  quant::QuantizeRequest svg_only;
  auto render_svg = present::AddQuantizeOutputs(&svg_only, "", "chart.svg");
  REQUIRE(svg_only.extra_outputs.size() == 1);
  CHECK(svg_only.extra_outputs[0].field == "svg");
  CHECK(render_svg(r, 0) == present::QuantizeSvg(r));
  quant::QuantizeRequest neither;
  present::AddQuantizeOutputs(&neither, "", "");
  CHECK(neither.extra_outputs.empty());

  quant::CalibrationTable t;
  quant::CalibrateRequest c;
  auto chart = present::AddCalibrationOutputs(&c, "calib.svg");
  REQUIRE(c.extra_outputs.size() == 1);
  CHECK(c.extra_outputs[0].field == "svg");
  CHECK(chart(t, 0) == present::CalibrationSvg(t));
  quant::CalibrateRequest no_chart;
  present::AddCalibrationOutputs(&no_chart, "");
  CHECK(no_chart.extra_outputs.empty());
}
