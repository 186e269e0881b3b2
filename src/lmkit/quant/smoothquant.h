// SmoothQuant (Xiao et al., "SmoothQuant: Accurate and Efficient Post-Training Quantization for Large Language
// Models", ICML 2023): activation outliers live in a few input channels, so each channel j of the input the Linear
// layers after one norm share is divided by s_j (folded into the norm's weight) and the same channel of every one of
// those Linear weights multiplied by s_j; the float model computes the same function, but the activations are easier
// to quantize. Rules as llm-compressor's SmoothQuantModifier applies them (docs/quant.md, "SmoothQuant"): the
// activation statistic is the channel's dynamic range max_j - min_j over the calibration tokens, the weight statistic
// twice the largest |W_kj| over all the balanced layers, s_j = range_j^α / (2 max|W_j|)^(1-α), s_j = range_j where
// the weights are all zero, and s_j >= 1e-5. Pure computation.
#pragma once

#include <cstdint>
#include <vector>

namespace lmkit::quant {

// Per-channel minimum and maximum over the rows fed to it (llm-compressor's hook on the norm's output).
class ChannelRange {
 public:
  explicit ChannelRange(uint64_t cols) : min_(cols, 0.0f), max_(cols, 0.0f) {}
  void Add(const float* x, uint64_t rows);
  uint64_t rows() const { return rows_; }
  // max_j - min_j (all 0 before any Add).
  std::vector<float> Range() const;

 private:
  std::vector<float> min_, max_;
  uint64_t rows_ = 0;
};

constexpr float kMinSmoothingScale = 1e-5f;

// A Linear weight that the smoothing balances: [rows, cols] fp32, row-major, cols = the shared input's channels.
struct BalancedWeight {
  const float* data;
  uint64_t rows;
};

// s_j for `alpha` in [0, 1] (computed in fp64, returned as fp32) from the input's per-channel range and the weights.
std::vector<float> SmoothingScales(const std::vector<float>& range, const std::vector<BalancedWeight>& weights,
                                   double alpha);

// Folds `scales` in: norm[j] /= s_j, and w[k, j] *= s_j for each weight (fp32 arithmetic, as torch's in-place ops).
void FoldIntoNorm(const std::vector<float>& scales, float* norm);
void FoldIntoWeight(const std::vector<float>& scales, float* w, uint64_t rows);

// H' = D⁻¹ H D⁻¹ with D = diag(s): the Hessian 2 X Xᵀ of the smoothed input X / s, from the unsmoothed one, so GPTQ can
// run after SmoothQuant on statistics from one calibration pass. `h` is [cols, cols].
void SmoothHessian(const std::vector<float>& scales, double* h);

}  // namespace lmkit::quant
