// The chart of `lmkit eval --compare` (present/chart.h): KL(model || compare) by position in the window. Returns the
// SVG document; the caller writes it (the CLI through AtomicFile). Deterministic; thread-safe.
#pragma once

#include <string>

#include "lmkit/model/eval.h"

namespace lmkit::present {

// Mean and max over the windows of the KL at each position (EvalResult::kl_*_by_position), on a log axis when the
// values span more than two decades and none is 0; the summary (mean, p99, top-1 agreement) under the title. A
// result without a comparison gives a chart with no panel.
std::string EvalKlSvg(const model::EvalResult& r);

}  // namespace lmkit::present
