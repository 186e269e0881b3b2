// GPU memory of training or serving a ModelSpec: weights, gradients, optimizer state, activations, KV cache, overhead,
// per GPU under ZeRO (training) or tensor parallelism (inference); whether it fits and the largest batch that does.
// Conventions and sources: docs/accounting.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/params.h"
#include "lmkit/accounting/roofline.h"
#include "lmkit/common/name_table.h"

namespace lmkit::accounting {

enum class Mode { kTraining, kInference };
enum class Optimizer { kAdamW, kAdamW8bit, kSgd };
enum class ActivationModel { kKorthikanti, kCs336 };
std::span<const EnumName<Mode>> ModeNames();                        // training, inference
std::span<const EnumName<Optimizer>> OptimizerNames();              // adamw, adamw8bit, sgd
std::span<const EnumName<ActivationModel>> ActivationModelNames();  // korthikanti, cs336
const char* ModeName(Mode m);
const char* OptimizerName(Optimizer o);
const char* ActivationModelName(ActivationModel a);

struct MemoryOptions {
  Mode mode = Mode::kTraining;
  Dtype dtype = Dtype::kBf16;
  Optimizer optimizer = Optimizer::kAdamW;
  Recompute recompute = Recompute::kNone;
  ActivationModel activations = ActivationModel::kKorthikanti;
  int zero = 0;            // 0..3
  int64_t gpus = 1;        // data-parallel ranks (training); tensor-parallel degree (inference)
  int64_t batch = 1;       // sequences per GPU (training) / served together (inference)
  int64_t seq_len = 1024;  // training sequence / inference context (prompt + generated)
  uint64_t overhead_bytes = 1ULL << 30;
  double capacity_bytes = 0;                     // GPU memory; 0 = unknown (no fit verdict)
  std::optional<Dtype> kv_dtype;                 // inference KV cache; nullopt = AutoKvDtype(dtype)
  QuantScope quant_scope = QuantScope::kLinear;  // which weights an fp8/int8 dtype applies to (inference)
};

struct MemoryReport {
  MemoryOptions options;
  ParameterCounts params;
  double weight_bytes_per_param = 0, grad_bytes_per_param = 0, optimizer_bytes_per_param = 0;
  // Per GPU, bytes.
  uint64_t weights = 0, gradients = 0, optimizer = 0, activations = 0, kv_cache = 0, overhead = 0, total = 0;
  uint64_t kv_bytes_per_token = 0;      // whole model, one sequence, uncapped by windows, at the KV dtype
  uint64_t kv_bytes_per_token_gpu = 0;  // the same on one GPU under tensor parallelism
  Dtype kv_dtype = Dtype::kBf16;        // the KV cache's dtype (inference)
  int64_t kv_heads_per_gpu = 0;         // inference: KV heads each GPU caches (replicated when gpus > kv heads)
  uint64_t per_sequence = 0;            // bytes added by one more sequence in the per-GPU batch
  uint64_t fixed = 0;                   // bytes independent of the batch
  bool capacity_known = false;
  bool fits = false;
  int64_t max_batch = 0;            // largest per-GPU batch that fits (0 when even one does not)
  std::string activations_counted;  // which tensors the activation term counts
  std::string weights_counted;      // which weights the dtype applies to (inference with fp8/int8)
};

// Pure arithmetic, exact uint64 bytes, linear in the batch. Errors: kInvalidArgument naming the request field
// (batch, seq_len, gpus, zero; fp8/int8 training; gpus that do not divide the heads in inference).
Result<MemoryReport> EstimateMemory(const ModelSpec& m, const MemoryOptions& o);

// KV-cache bytes of one sequence of `tokens` tokens at `bytes_per_element` (windows and MLA applied).
uint64_t KvCacheBytes(const ModelSpec& m, int64_t tokens, double bytes_per_element);

// Inference weight bytes of `m` at `dtype`: 8-bit dtypes apply to `scope` (plus one fp16 scale per output channel of
// each quantized matrix), every other weight stays 16-bit.
uint64_t InferenceWeightBytes(const ModelSpec& m, Dtype dtype, QuantScope scope);

}  // namespace lmkit::accounting
