// GPU memory of training or serving a ModelSpec: weights, gradients, optimizer state, activations, KV cache, overhead,
// per GPU under ZeRO and data parallelism; whether it fits and the largest batch that does.
//
// Contract: EstimateMemory is pure arithmetic (exact uint64 bytes, per GPU). Every term is linear in the per-GPU batch,
// so the report also gives the line total(batch) = per_sequence·batch + fixed and, when a capacity is known, the
// largest batch with total ≤ capacity. Conventions (documented in docs/accounting.md with sources):
//   * bytes per parameter (weights + gradients + optimizer): fp32 AdamW 4+4+8 = 16 (CS336 adamwAccounting); mixed
//     precision bf16/fp16 AdamW 2+2+12 (fp32 master, m, v) = 16, 8-bit AdamW 2+2+2 = 6, SGD+momentum 2+2+4 = 8.
//     Training in fp8/int8 is not modelled (kInvalidArgument).
//   * ZeRO-1 shards optimizer state, ZeRO-2 also gradients, ZeRO-3 also weights, over `gpus` data-parallel ranks.
//   * activations (training): Korthikanti et al. 2022 per layer s·b·h·(34 + 5·a·s/h) bytes at 16 bits (selective
//     recomputation drops 5·a·s/h, full keeps 2·s·b·h per layer plus one layer's working set), plus the final norm
//     input 2·s·b·h and fp32 logits 4·s·b·V; other dtypes scale by bytes/2. ActivationModel::kCs336 counts instead the
//     tensors CS336's adamwAccounting lists, at the dtype's size.
//   * KV cache (inference only): 2·layers·kv_heads·head_dim·tokens·bytes (MLA: (kv_lora_rank + qk_rope_head_dim) per
//     layer and token); sliding-window layers cache at most the window.
//   * overhead: a fixed allowance for the CUDA context, library workspaces and fragmentation (default 1 GiB).
// Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/params.h"

namespace lmkit::accounting {

enum class Mode { kTraining, kInference };
enum class Optimizer { kAdamW, kAdamW8bit, kSgd };
enum class ActivationModel { kKorthikanti, kCs336 };

Result<Mode> ParseMode(const std::string& s);
Result<Optimizer> ParseOptimizer(const std::string& s);
Result<ActivationModel> ParseActivationModel(const std::string& s);
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
  int64_t gpus = 1;        // data-parallel ranks (training); tensor-parallel split of weights and cache (inference)
  int64_t batch = 1;       // sequences per GPU
  int64_t seq_len = 1024;  // training sequence / inference context (prompt + generated)
  uint64_t overhead_bytes = 1ULL << 30;
  double capacity_bytes = 0;  // GPU memory; 0 = unknown (no fit verdict)
};

struct MemoryReport {
  MemoryOptions options;
  ParameterCounts params;
  double weight_bytes_per_param = 0, grad_bytes_per_param = 0, optimizer_bytes_per_param = 0;
  // Per GPU, bytes.
  uint64_t weights = 0, gradients = 0, optimizer = 0, activations = 0, kv_cache = 0, overhead = 0, total = 0;
  uint64_t kv_bytes_per_token = 0;  // whole model, one sequence, uncapped by windows
  uint64_t per_sequence = 0;        // bytes added by one more sequence in the per-GPU batch
  uint64_t fixed = 0;               // bytes independent of the batch
  bool capacity_known = false;
  bool fits = false;
  int64_t max_batch = 0;            // largest per-GPU batch that fits (0 when even one does not)
  std::string activations_counted;  // which tensors the activation term counts
};

Result<MemoryReport> EstimateMemory(const ModelSpec& m, const MemoryOptions& o);

// KV-cache bytes of one sequence of `tokens` tokens at `bytes_per_element` (windows and MLA applied).
uint64_t KvCacheBytes(const ModelSpec& m, int64_t tokens, double bytes_per_element);

}  // namespace lmkit::accounting
