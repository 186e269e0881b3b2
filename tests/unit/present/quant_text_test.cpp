// `lmkit quantize` and `lmkit calibrate` as text: the table row of a tensor, the totals line, the calibration lines,
// and the scheme listing's rows.
#include <catch2/catch.hpp>
#include <sstream>

#include "lmkit/present/quant.h"

using namespace lmkit;
using namespace lmkit::quant;

namespace {

std::string QuantTextLine(const std::string& text, const std::string& start) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(start, 0) == 0) return line;
  return "";
}

}  // namespace

TEST_CASE("quant text: a row per tensor and the totals line", "[present][quant]") {
  QuantizeResult r;
  TensorReport t;
  t.name = "layer.proj.weight";
  t.shape = {4096, 11008};
  t.dtype = "BF16";
  t.scale_min = 0.25f;
  t.scale_max = 0.5f;
  // SQNR 10 log10(4 / 0.5) = 9.03 dB; cosine 4 / sqrt(4 x 4.5); 1 of 4 codes clipped.
  t.stats.count = 4;
  t.stats.clipped = 1;
  t.stats.sum_x2 = 4;
  t.stats.sum_err2 = 0.5;
  t.stats.sum_x_xhat = 4;
  t.stats.sum_xhat2 = 4.5;
  t.stats.max_abs_err = 0.5;
  r.tensors = {t};
  r.total = t.stats;
  r.params_quantized = 45088768;
  r.tensors_copied = 3;
  r.bytes_before = 2000000;
  r.bytes_after = 1000000;
  r.seconds = 0.5;
  const std::string text = present::QuantizeReportText(r);
  CHECK(QuantTextLine(text, "tensor ").find("SQNR dB") != std::string::npos);
  CHECK(QuantTextLine(text, "layer.proj.weight") ==
        "layer.proj.weight     4096x11008  BF16        0.25         0.5      9.03   0.9428090         0.5  25.0000%");
  CHECK(QuantTextLine(text, "1 tensors") ==
        "1 tensors quantized (45088768 params), 3 copied; 2.00 MB -> 1.00 MB; SQNR 9.03 dB, cosine 0.9428090; 0.50 s, "
        "0.01 GB/s");
  r.kept_unquantized = {"a.weight", "b.weight"};
  CHECK(QuantTextLine(present::QuantizeReportText(r), "2 selected") ==
        "2 selected weights kept in full precision (rows not a multiple of 32 long): a.weight b.weight");
}

TEST_CASE("quant text: calibration lines name the method and the output", "[present][quant]") {
  CalibrationTable table;
  table.method = CalibMethod::kMinMax;
  TensorRange r;
  r.name = "layers.0.q_proj";
  r.amax = 2.5;
  r.lo = -2.5;
  r.hi = 2.5;
  r.samples = 100;
  table.tensors = {r};
  table.bytes_read = 4096;
  table.seconds = 1.25;
  const std::string text = present::CalibrationReportText(table, "calib.json");
  CHECK(QuantTextLine(text, "layers.0.q_proj") ==
        "layers.0.q_proj  amax 2.500000  range [-2.500000, 2.500000]  samples "
        "100  trt " +
            TrtScaleHex(2.5));
  CHECK(QuantTextLine(text, "1 tensors") == "1 tensors, minmax  (4.10 kB), 1.25 s -> calib.json");
}

TEST_CASE("quant text: the scheme listing has a row per checkpoint kind", "[present][quant]") {
  const std::string text = present::SchemeListText();
  const Json j = present::SchemeListJson();
  CHECK(text.rfind("schemes:\n  w8a16 ", 0) == 0);
  size_t rows = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    for (const Json& s : j["schemes"])
      if (line.rfind(s["name"].get<std::string>() + " ", 0) == 0) {
        ++rows;
        break;
      }
  CHECK(rows == j["checkpoints"].size());
}
