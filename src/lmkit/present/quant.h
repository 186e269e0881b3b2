// What `lmkit quantize` and `lmkit calibrate` print: the reports as JSON (--json, --report; the same dicts the Python
// package returns) and as text, and the scheme listing of `lmkit quantize --list-schemes`. Compute code
// (src/lmkit/quant) never includes this; it only turns result structs into documents.
#pragma once

#include <string>

#include "lmkit/common/json.h"
#include "lmkit/quant/calibrate.h"
#include "lmkit/quant/quantize.h"

namespace lmkit::present {

// The quantize report: {"input", "output", "scheme", "granularity", "format", "tensors": [{"name", "shape", "dtype",
// "scale_min", "scale_max", "sqnr_db" (null when infinite), "cosine", "max_abs_err", "mse", "clipped_share"}],
// "kept_unquantized", "warnings", "totals": {...}} (docs/cli.md).
Json QuantizeReportJson(const quant::QuantizeResult& report);
// One table row per quantized tensor and a totals line.
std::string QuantizeReportText(const quant::QuantizeResult& report);

// CALIB.json's document plus the run's "seconds", "bytes_read", "peak_rss_bytes" and "warnings".
Json CalibrationReportJson(const quant::CalibrationTable& table);
// One line per tensor and a summary naming `output`.
std::string CalibrationReportText(const quant::CalibrationTable& table, const std::string& output);

// The files a front end asks for beside the result, added to the request's extra_outputs: quantize's report (the
// QuantizeReportJson document) and chart (QuantizeSvg), calibrate's chart (CalibrationSvg); an empty path adds none.
// Returns the renderer the core calls for them, so the CLI and Python write the same bytes.
quant::RenderQuantizeOutput AddQuantizeOutputs(quant::QuantizeRequest* req, const std::string& report_path,
                                               const std::string& svg_path);
quant::RenderCalibrationOutput AddCalibrationOutputs(quant::CalibrateRequest* req, const std::string& svg_path);

// Every scheme x format x granularity (channel, tensor, group:4, group:32, group:128) x activation mode lmkit can be
// asked for, with its policy and what each loader does (loader_rules.h): {"schemes": [{"name", "summary", ...}],
// "checkpoints": [{"scheme", "format", "granularity", "static_activations", "policy": "write"|"warn"|"refuse",
// "message", "loaders": {"vLLM": {"serves", "why"}, "transformers": ..., "llama.cpp": ...}}]}. A stable document for
// scripts (scripts/interop-check.sh) that exercise every scheme.
Json SchemeListJson();
// The same as a table.
std::string SchemeListText();

}  // namespace lmkit::present
