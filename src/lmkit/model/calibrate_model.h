// `lmkit calibrate --model`: activation ranges of every quantizable Linear's input, recorded while the model runs over
// a token file, through the same streaming histograms and calibrators as file-based calibration
// (quant::StreamingCalibrator), so the result is the same CALIB.json `lmkit quantize --calibration` reads.
//
// Contract: the token file is cut into windows of `seq_len` as in `lmkit eval`; each window is one forward pass and
// one calibration batch per Linear (rows = window tokens, so samples = tokens x in_features). The table's tensors are
// named by module (e.g. "model.layers.0.self_attn.q_proj", what quantize looks up), in forward order; q/k/v and
// gate/up see the same input, which is calibrated once and its range given to each. The nvidia flavour runs the windows
// twice (see StreamingCalibrator). A routed expert is calibrated on the rows routed to it (all rows with all_experts);
// one no token reaches takes a fallback range, with a warning naming it (docs/model.md). Errors: as Evaluate (token
// ids, seq_len) and Calibrate (options). Deterministic.
#pragma once

#include <cstdint>
#include <string>

#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/io/token_dtype.h"
#include "lmkit/quant/calibrate.h"

namespace lmkit::model {

struct CalibrateModelRequest {
  std::string model;
  std::string tokens;
  io::TokenDtype bin_dtype = io::TokenDtype::kU16;
  uint32_t seq_len = 0;           // 0 = min(max_position_embeddings, 1024)
  uint64_t max_tokens = 0;        // 0 = the whole file
  bool all_experts = false;       // MoE: every expert runs on (and is calibrated with) every token; logits unchanged
  quant::CalibrateRequest calib;  // method, flavor, percentile, bins, threads, output, trt_cache (inputs unused)
};

// Runs the model over the tokens, calibrates every Linear input and writes calib.output / calib.trt_cache as
// quant::Calibrate does.
Result<quant::CalibrationTable> CalibrateModel(const CalibrateModelRequest& options, ProgressSink* progress,
                                               const quant::RenderCalibrationOutput& render = {});

}  // namespace lmkit::model
