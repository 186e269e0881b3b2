// Charts of `lmkit calibrate` and `lmkit quantize` (present/chart.h). Each returns the SVG document; the caller writes
// it (the CLI through AtomicFile). Deterministic; thread-safe.
#pragma once

#include <string>

#include "lmkit/quant/calibrate.h"
#include "lmkit/quant/quantize.h"

namespace lmkit::present {

// One panel per surveyed tensor (CalibrateRequest::survey): its |x| histogram with log counts (the bins summed in
// groups to at most 256 bars) and a vertical line at each method's threshold (minmax, percentile, entropy, mse), the
// values under the panel's title. Tensors without a survey are left out.
std::string CalibrationSvg(const quant::CalibrationTable& table);

// SQNR (dB) and max |w - w_hat| of every quantized tensor, in two panels. When the names carry layer numbers
// ("model.layers.3.mlp.up_proj.weight") x is the layer and each kind of tensor ("mlp.up_proj") is one line; otherwise
// x is the tensor's position in the input. Tensors left out (no layer number, or an exact SQNR of +inf) are named in
// a note.
std::string QuantizeSvg(const quant::QuantizeResult& report);

}  // namespace lmkit::present
