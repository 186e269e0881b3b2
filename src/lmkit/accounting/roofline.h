// Step time on a GPU: the MFU estimate (model FLOPs / (peak x MFU), with the HFU it implies) and a per-matmul roofline
// (Williams et al. 2009: each op takes max(FLOPs / peak, bytes / bandwidth)). Conventions: docs/accounting.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/common/name_table.h"

namespace lmkit::accounting {

// Which tensors a weight dtype of fp8/int8 applies to. kLinear: the Linear layers of the decoder blocks (attention
// projections, MLPs, experts), as llm-compressor's and vLLM's FP8/INT8 recipes do (they ignore lm_head and the MoE
// router gates); embeddings, LM head, routers and norms stay 16-bit. kAll: every weight.
enum class QuantScope { kLinear, kAll };
std::span<const EnumName<QuantScope>> QuantScopeNames();  // linear, all

// How attention runs in the roofline: kFused (FlashAttention-style: reads Q, K, V once, writes the output; the score
// matrix never reaches memory) or kUnfused (QKᵀ written, read back by attention × V).
enum class Attention { kFused, kUnfused };
std::span<const EnumName<Attention>> AttentionNames();  // fused, unfused

// Bytes per element of the tensors a step moves. Activations are 16-bit when the weights are 8-bit.
struct Precision {
  Dtype dtype = Dtype::kBf16;     // weights of the quantized scope, and the peak the matmuls run at
  Dtype kv_dtype = Dtype::kBf16;  // the KV cache
  QuantScope scope = QuantScope::kLinear;
  double WeightBytes(bool linear) const;  // `linear`: a decoder Linear weight
  double ActivationBytes() const;
  double KvBytes() const;
};
// The bytes per element of `op`'s B operand under `p`: the KV cache's, the activations', or a weight's (LM head and
// router gates are outside the linear scope).
double BOperandBytes(const Matmul& op, const Precision& p);
// The KV cache dtype that "auto" means (vLLM's kv_cache_dtype auto: the activations' dtype): fp32 for fp32 weights,
// else bf16 (fp16 for fp16 weights).
Dtype AutoKvDtype(Dtype weights);

struct StepTime {
  double flops = 0;           // model FLOPs of one step (no recomputation)
  double hardware_flops = 0;  // FLOPs the GPU runs (recomputation included)
  double peak = 0;            // FLOP/s at the dtype
  double mfu = 0;             // model FLOPs utilisation assumed
  double hfu = 0;             // hardware FLOPs utilisation it implies: hardware_flops / (peak x seconds)
  double seconds = 0;         // flops / (peak x mfu)
  double tokens_per_s = 0;    // tokens per step / seconds
};
// Errors: kInvalidArgument when the GPU has no peak for `dtype` or mfu is not in (0, 1] (naming the field "mfu").
Result<StepTime> EstimateStepTime(double model_flops, double hardware_flops, double tokens, const GpuSpec& gpu,
                                  Dtype dtype, double mfu);

struct RooflineRow {
  Matmul op;
  double bytes = 0;
  double intensity = 0;  // FLOPs per byte
  double compute_s = 0, memory_s = 0, time_s = 0;
  bool compute_bound = false;
};

struct Roofline {
  std::vector<RooflineRow> rows;
  double flops = 0, bytes = 0, compute_s = 0, memory_s = 0, time_s = 0;
  double ridge = 0;  // peak / bandwidth, FLOPs per byte
  double peak = 0, bandwidth = 0;
  Attention attention = Attention::kFused;
};
// Each op moves its A (M x K) and C (M x N) operands once per run at the activations' bytes and its B operand b_reads
// times at the bytes of what it is (a weight in or out of the quantized scope, the KV cache, activations). Fused
// attention merges each layer kind's QKᵀ (softmax) and attention × V rows into one that moves Q, K, V and the output
// only. Nothing overlaps across rows. Errors: kInvalidArgument when the GPU has no peak for p.dtype.
Result<Roofline> ComputeRoofline(const std::vector<Matmul>& ops, const GpuSpec& gpu, const Precision& p,
                                 Attention attention = Attention::kFused);

}  // namespace lmkit::accounting
