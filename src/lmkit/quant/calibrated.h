// Internal to `lmkit quantize`: the calibration run behind GPTQ and SmoothQuant, and the weights they change.
//
// Sequential (the default, RunSequential): as llm-compressor 0.14's `oneshot` with SmoothQuantModifier and
// GPTQModifier (its default independent pipeline: a sequential pipeline per modifier, SmoothQuant's first;
// docs/quant.md, "Sequential"). The calibration windows are embedded; then for each decoder layer in turn, read alone
// from the checkpoint (model::ModelParts): the float stream of hidden states goes through the float layer collecting
// the norms' channel ranges (SmoothQuant's statistics are the float model's), the quantized stream goes through it
// collecting the Linears' Hessians; the scales are folded in and the smoothed weights quantized with the Hessians of
// the smoothed inputs (D⁻¹ H D⁻¹); the layer is read again with the smoothed norms and the dequantized weights and
// the quantized stream goes through it to become the next layer's inputs (activations unquantized, as under
// llm-compressor's DisableQuantization). In memory at once: one layer's weights, its Hessians, the hidden states of
// the windows [samples, seq_len, hidden] (two streams when both methods run) and, unless `keep_in_memory`, nothing
// of the finished layers: their replaced tensors go to an unlinked scratch file beside the output and are read back
// one at a time by Find.
//
// One pass (CalibrationStats, `QuantizeRequest::sequential` false): CalibrationStats::Collect loads the model
// (model::LlamaModel, a Llama-family directory), runs it over the calibration windows once and keeps, per shared Linear
// input (q/k/v, o, gate/up, down of each layer), the Hessian 2 X Xᵀ / n (GPTQ; only for inputs whose Linears are
// selected) and the per-channel range (SmoothQuant; the inputs that are a norm's whole output, quant/smooth_mapping.h).
// Build turns them into replaced tensors: the smoothed norms and Linear weights (rounded to the checkpoint's dtype, as
// the checkpoint stores them) and, for GPTQ, every selected Linear's codes and scales. All Hessians are of the float
// model's inputs from the one run: GPTQ is not sequential (a block does not see the outputs of the blocks quantized
// before it), and everything is in memory at once. Errors name the token file, the checkpoint or the request's fields.
// Deterministic for any thread count.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/quant/gptq.h"
#include "lmkit/quant/quantize.h"
#include "lmkit/quant/quantize_plan.h"
#include "lmkit/quant/smoothquant.h"

namespace lmkit::quant::detail {

// A tensor the calibrated methods replace, by tensor name ("...weight").
struct PreparedTensor {
  std::vector<float> values;  // the weights to write (a norm) or to quantize (a Linear); empty: the file's
  bool has_codes = false;     // GPTQ's codes and scales (scale dtype: the tensor's), used instead of rounding
  std::vector<int8_t> codes;
  std::vector<float> scales;
  std::optional<double> gptq_error, rtn_error;
  uint64_t dead_columns = 0;
  bool cholesky_failed = false;
};

class SpillFile;

struct Prepared {
  std::map<std::string, PreparedTensor> tensors;
  std::vector<SmoothReport> smooth;
  std::vector<std::string> unsmoothed;  // SmoothQuant: what the mapping leaves unsmoothed (smooth_mapping.h)

  // Moves every tensor of `tensors` into the scratch file (created on the first call as an unlinked file in the
  // directory of `near`), keeping only its small fields in memory. Errors: kIo naming the scratch file.
  Status Spill(const std::string& near);
  // The tensor `name`, or null: from `tensors`, or read back from the scratch file (the pointer is valid until the
  // next Find). Errors: kIo from reading the scratch file.
  Result<const PreparedTensor*> Find(const std::string& name) const;

 private:
  struct Spilled {
    PreparedTensor small;  // without values, codes and scales
    uint64_t offset = 0, values = 0, codes = 0, scales = 0;
  };
  std::shared_ptr<SpillFile> spill_;
  std::map<std::string, Spilled> spilled_;
  mutable PreparedTensor loaded_;
};

// The calibration windows: `samples` windows of `seq_len` tokens, then the held-out tokens (alpha sweep).
struct CalibrationWindows {
  uint32_t seq_len = 0;
  uint64_t samples = 0, held_out = 0;
  std::vector<uint32_t> ids;              // samples * seq_len
  std::vector<uint32_t> held_out_tokens;  // held_out * seq_len
};

// Reads the windows of o.calibration_tokens (errors naming the file or the request's fields, as Collect).
Result<CalibrationWindows> ReadCalibrationWindows(const QuantizeRequest& o, uint32_t max_positions, uint32_t vocab,
                                                  bool hold_out);

// Sequential SmoothQuant (`alpha`, none: no smoothing) and GPTQ (o.method), layer by layer (above).
Result<Prepared> RunSequential(const QuantizeRequest& o, const Plan& plan, const Matchers& matchers,
                               std::optional<double> alpha, const CalibrationWindows& windows, bool keep_in_memory,
                               ThreadPool& pool, ProgressSink* progress);

class CalibrationStats {
 public:
  // `hold_out`: keep the last fifth of the windows (at least one) out of the statistics, for the alpha sweep.
  static Result<CalibrationStats> Collect(const QuantizeRequest& o, const Plan& plan, const Matchers& matchers,
                                          bool hold_out, ThreadPool& pool, ProgressSink* progress);
  // The replaced tensors for SmoothQuant strength `alpha` (none: no smoothing) and, with GPTQ, the codes.
  Result<Prepared> Build(const QuantizeRequest& o, std::optional<double> alpha, ThreadPool& pool) const;
  const CalibrationRunReport& report() const { return report_; }
  // The held-out tokens (ids, in file order); empty without hold_out.
  const std::vector<uint32_t>& held_out_tokens() const { return held_out_; }

  // One Linear input shared by the Linears that read it (LlamaModel::LinearInputSource).
  struct Input {
    std::string key;                   // "model.layers.0.self_attn.q_proj input" etc.
    std::vector<std::string> linears;  // module names that read it, in forward order
    std::vector<bool> selected;        // by linear: quantized (quantize_plan.h's selection)
    size_t first = 0;                  // its first reader's index in LinearNames(): the observer records there
    // SmoothQuant (smooth_mapping.h): the norm whose whole output this input is, when smoothed ("" otherwise; a
    // routed expert's input is part of a norm's output and takes the scales of the input that holds the norm).
    std::string norm;
    bool unit_offset = false;       // the norm multiplies by (1 + w)
    size_t smoothed_by = SIZE_MAX;  // the index of the input holding the norm whose scales this one takes
    uint64_t cols = 0;
    std::optional<HessianAccumulator> hessian;
    std::optional<ChannelRange> range;
  };

 private:
  const Plan* plan_ = nullptr;
  std::vector<Input> inputs_;
  std::vector<std::string> unsmoothed_;
  CalibrationRunReport report_;
  std::vector<uint32_t> held_out_;
};

}  // namespace lmkit::quant::detail
