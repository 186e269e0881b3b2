// The extra outputs of quantize and calibrate (--report, --svg; Python's report= and svg=) and their renderer.
#include <vector>

#include "lmkit/present/quant.h"
#include "lmkit/present/quant_svg.h"

namespace lmkit::present {

quant::RenderQuantizeOutput AddQuantizeOutputs(quant::QuantizeRequest* req, const std::string& report_path,
                                               const std::string& svg_path) {
  using Render = std::string (*)(const quant::QuantizeResult&);
  // One renderer per extra output this call adds, in the order added (after any the request already had).
  std::vector<Render> renderers;
  const size_t first = req->extra_outputs.size();
  if (!report_path.empty()) {
    req->extra_outputs.push_back({report_path, "report"});
    renderers.push_back([](const quant::QuantizeResult& r) { return DumpJson(QuantizeReportJson(r)) + "\n"; });
  }
  if (!svg_path.empty()) {
    req->extra_outputs.push_back({svg_path, "svg"});
    renderers.push_back(&QuantizeSvg);
  }
  return [renderers, first](const quant::QuantizeResult& r, size_t i) {
    return i >= first && i - first < renderers.size() ? renderers[i - first](r) : std::string();
  };
}

quant::RenderCalibrationOutput AddCalibrationOutputs(quant::CalibrateRequest* req, const std::string& svg_path) {
  const size_t index = req->extra_outputs.size();
  if (!svg_path.empty()) req->extra_outputs.push_back({svg_path, "svg"});
  return [index](const quant::CalibrationTable& t, size_t i) { return i == index ? CalibrationSvg(t) : std::string(); };
}

}  // namespace lmkit::present
