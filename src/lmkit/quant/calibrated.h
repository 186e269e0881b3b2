// Internal to `lmkit quantize`: the calibration run behind GPTQ and SmoothQuant, and the weights they change.
//
// Contract: CalibrationStats::Collect loads the model (model::LlamaModel, a Llama-family directory), runs it over the
// calibration windows once and keeps, per shared Linear input (q/k/v, o, gate/up, down of each layer), the Hessian
// 2 X Xᵀ / n (GPTQ; only for inputs whose Linears are selected) and the per-channel range (SmoothQuant; the inputs
// after input_layernorm and post_attention_layernorm). Build turns them into replaced tensors: the smoothed norms and
// Linear weights (rounded to the checkpoint's dtype, as the checkpoint stores them) and, for GPTQ, every selected
// Linear's codes and scales. All Hessians are of the float model's inputs from the one run: GPTQ is not sequential
// (a block does not see the outputs of the blocks quantized before it), and everything is in memory at once. Errors
// name the token file, the checkpoint or the request's fields. Deterministic for any thread count.
#pragma once

#include <map>
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

struct Prepared {
  std::map<std::string, PreparedTensor> tensors;
  std::vector<SmoothReport> smooth;
};

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

  // One Linear input shared by the Linears that read it.
  struct Input {
    std::string key;                   // "model.layers.0.self_attn.qkv" etc.
    std::vector<std::string> linears;  // module names that read it, in forward order
    std::vector<bool> selected;        // by linear: quantized (quantize_plan.h's selection)
    std::string norm;                  // the norm whose output it is ("" when not smoothable)
    uint64_t cols = 0;
    std::optional<HessianAccumulator> hessian;
    std::optional<ChannelRange> range;
  };

 private:
  const Plan* plan_ = nullptr;
  std::vector<Input> inputs_;
  CalibrationRunReport report_;
  std::vector<uint32_t> held_out_;
};

}  // namespace lmkit::quant::detail
