// GPTQ (Frantar et al., "GPTQ: Accurate Post-Training Quantization for Generative Pre-trained Transformers", ICLR
// 2023): weights are quantized one input column at a time, and each column's rounding error is spread over the columns
// not yet quantized through the inverse Hessian of the layer's reconstruction loss ||W X - Ŵ X||^2, H = 2 X Xᵀ. The
// order of operations and the defaults follow llm-compressor's gptq_quantize.py (docs/quant.md, "GPTQ"): scales from
// the original weights, dead columns (H_jj = 0) zeroed, dampening of a fraction of mean(diag H), the upper Cholesky
// factor of H⁻¹, lazy batches of 128 columns, optional activation order. Pure computation; no I/O.
#pragma once

#include <cstdint>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/io/dtype.h"
#include "lmkit/quant/granularity.h"

namespace lmkit::quant {

// Sums x xᵀ over the rows fed to it. The rows are taken in chunks of kChunkRows, whatever the calls' split: each
// chunk's products are summed in fp32 on the GEMM kernels (model/gemm_f32.h; fp32, as llm-compressor accumulates), and
// the chunks' sums in fp64, so that 10^5 tokens do not lose H's small eigenvalues to one long fp32 sum. Not
// thread-safe; the chunk's work is split over `pool` in tiles of the upper triangle, so the bytes do not depend on it.
class HessianAccumulator {
 public:
  static constexpr uint64_t kChunkRows = 512;
  explicit HessianAccumulator(uint64_t cols) : cols_(cols), sum_(cols * cols, 0.0) {}
  uint64_t cols() const { return cols_; }
  uint64_t samples() const { return samples_; }
  // Adds `rows` input rows of `cols` values each (row-major).
  void Add(const float* x, uint64_t rows, ThreadPool* pool);
  // H = 2 Σ x xᵀ / samples, full and symmetric, [cols, cols] row-major (all zeros before any Add).
  std::vector<double> Hessian(ThreadPool* pool = nullptr) const;

 private:
  // Adds the chunk `xt` ([cols, rows] column-major rows, i.e. the transposed chunk) to `sum`.
  static void AddChunk(const float* xt, uint64_t rows, uint64_t cols, double* sum, ThreadPool* pool);
  uint64_t cols_ = 0, samples_ = 0;
  std::vector<double> sum_;     // upper triangle filled by Add, mirrored by Hessian()
  std::vector<float> pending_;  // rows not yet in a full chunk, transposed: [cols, kChunkRows]
  uint64_t pending_rows_ = 0;
};

// The integer grid a symmetric scheme codes to: codes in [lo, hi], scale = absmax / divisor.
struct IntGrid {
  float divisor = 127.5f;
  float lo = -128.0f, hi = 127.0f;
};
// compressed-tensors' symmetric grid for `bits` (2..8): [-2^(b-1), 2^(b-1) - 1], divisor (hi - lo) / 2.
IntGrid SymmetricGrid(int bits);

struct GptqOptions {
  int bits = 8;             // 4 or 8
  Granularity granularity;  // channel, tensor or group:G
  io::DType scale_dtype = io::DType::kF32;
  double dampening = 0.01;    // fraction of mean(diag H) added to the diagonal (llm-compressor's dampening_frac)
  uint32_t block_size = 128;  // columns per lazy batch; the result does not depend on it beyond fp rounding
  bool act_order = false;     // quantize columns in descending diag H; scales stay those of the original groups
  // Group scales from the weights as GPTQ has updated them when it reaches the group's first column (AutoGPTQ), not
  // from the original weights (llm-compressor). Changes nothing for channel and tensor scales.
  bool group_scales_at_group_start = false;
};

struct GptqResult {
  std::vector<int8_t> codes;  // [rows, cols], in the original column order
  std::vector<float> scales;  // granularity.ScaleCount(rows, cols), stored-dtype values
  // ||(W - Ŵ) X||^2 / ||W X||^2 over the calibration inputs (computed from H rounded to fp32, fp64 sums), for GPTQ's
  // and round-to-nearest's codes with the same scales.
  double error = 0, rtn_error = 0;
  uint64_t dead_columns = 0;     // input channels no calibration token reached (diag H = 0): their weights become 0
  bool cholesky_failed = false;  // H + damp I was not positive definite: the codes are round-to-nearest's
};

// What GPTQ needs from H, shared by every Linear that reads the same input (q/k/v, gate/up): the column order, the
// dead columns and U, the upper Cholesky factor of (H + damp I)⁻¹ in that order (H⁻¹ = Uᵀ U).
struct GptqFactor {
  uint64_t cols = 0;
  std::vector<uint64_t> perm;    // position -> original column (identity without act order)
  std::vector<bool> dead;        // by original column: diag H = 0
  std::vector<double> upper;     // [cols, cols] row-major, by position; identity when the Cholesky failed
  bool cholesky_failed = false;  // H + damp I was not positive definite: GPTQ reduces to round-to-nearest
};

// Factors `hessian` ([cols, cols] symmetric fp64, as HessianAccumulator::Hessian): act order sorts by descending
// diag H (ties by column), dead columns get diag 1, then damp = dampening * mean(diag H) is added. Errors:
// kInvalidArgument for a dampening < 0; kInvalidInput for a non-finite entry. Same bytes for any pool.
Result<GptqFactor> FactorHessian(const double* hessian, uint64_t cols, double dampening, bool act_order,
                                 ThreadPool* pool);

// Quantizes `w` ([rows, cols] fp32, row-major) with `factor` (options.dampening and act_order are the factor's; the
// others apply). `hessian` (may be null) is the undamped H, used only for the errors of the result. Errors
// (kInvalidArgument, no subject; the caller names the tensor): bits not 4 or 8, a group size that does not divide cols,
// a zero block size, act order with group_scales_at_group_start; (kInvalidInput) a non-finite weight. Rows are
// independent given the scales, so rows are split over `pool` (may be null); same bytes for any thread count.
Result<GptqResult> GptqQuantize(const float* w, uint64_t rows, uint64_t cols, const GptqFactor& factor,
                                const double* hessian, const GptqOptions& options, ThreadPool* pool);
// FactorHessian then GptqQuantize.
Result<GptqResult> GptqQuantize(const float* w, uint64_t rows, uint64_t cols, const double* hessian,
                                const GptqOptions& options, ThreadPool* pool);

// Round-to-nearest with the same scales and grid (GptqQuantize with H = I up to its dead-column rule): for tests and
// for schemes without calibration. Same errors as GptqQuantize's option checks.
Status RtnQuantize(const float* w, uint64_t rows, uint64_t cols, const GptqOptions& options, int8_t* codes,
                   float* scales);

// The relative reconstruction error ||(W - Ŵ) X||^2 / ||W X||^2 of codes * scales against w under `hessian` (0 when
// ||W X|| is 0): the products on the fp32 GEMM kernels with H rounded to fp32, each row's sum in fp64.
double ReconstructionError(const float* w, const int8_t* codes, const float* scales, uint64_t rows, uint64_t cols,
                           const Granularity& granularity, const double* hessian, ThreadPool* pool);

}  // namespace lmkit::quant
