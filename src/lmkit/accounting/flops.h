// Matmul inventory and FLOP counts of a transformer step (forward, backward, recomputation, training). The conventions
// and their sources are listed in docs/accounting.md; each is a FlopsOptions field.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lmkit/accounting/model.h"
#include "lmkit/accounting/params.h"
#include "lmkit/common/name_table.h"

namespace lmkit::accounting {

// Activation recomputation in training: none; selective (Korthikanti et al. 2022: the attention core QKᵀ, softmax and
// attention × V again); full (every decoder layer's forward again; the LM head is not checkpointed); deepseek (the
// DeepSeek-V3 report's §3.2.3 and §3.3.2: selective, plus the RMSNorm outputs, MLA's up-projections and the SwiGLU
// outputs recomputed, with the attention output cached in 12-bit E5M6 and the MoE dispatch and SwiGLU inputs in FP8).
enum class Recompute { kNone, kSelective, kFull, kDeepSeek };
std::span<const EnumName<Recompute>> RecomputeNames();  // none, selective, full, deepseek
const char* RecomputeName(Recompute r);

struct FlopsOptions {
  int64_t seq_len = 1024;
  int64_t batch = 1;
  bool causal_half = false;    // halve causal QKᵀ and attention × V (Megatron, FlashAttention); else full T × T
  bool lm_head = true;         // count the LM head matmul
  bool softmax_flops = false;  // add Chinchilla's 3 FLOPs per attention score
  bool macs = false;           // report MACs (= FLOPs / 2) in the printed rows; totals stay FLOPs
  Recompute recompute = Recompute::kNone;
};

// The components every matmul belongs to (the order is the report's).
enum class Component { kAttnProj, kAttnScores, kAttnValues, kFfn, kRouter, kLmHead, kSoftmax };
constexpr int kComponentCount = 7;
// "attention projections", "attention scores", "attention x V", "FFN/experts", "router", "LM head", "softmax".
const char* ComponentName(Component c);

// What a matmul's B operand is, for the roofline's bytes: a weight, the cached keys/values (decode), or activations
// computed in the same pass (prefill's K and V).
enum class Operand { kWeight, kKvCache, kActivation };

struct Matmul {
  std::string name;        // "q_proj", "scores (QK^T)", "experts w1 (gate)" ...
  std::string layer_kind;  // LayerKind::name, or "head"
  Component component = Component::kAttnProj;
  int64_t m = 0, k = 0, n = 0;  // one product (M x K)·(K x N)
  int64_t count = 0;            // how many times it runs per step (layers x heads x batch ...)
  uint64_t flops = 0;           // 2·M·K·N·count, halved for causal-half score/AV rows
  // A (M x K) and C (M x N) move once per run; the B operand (K x N) moves b_reads times.
  double b_reads = 0;
  Operand b = Operand::kWeight;
};

struct FlopsReport {
  FlopsOptions options;
  std::vector<Matmul> matmuls;
  uint64_t component[kComponentCount] = {};
  uint64_t forward = 0;
  uint64_t backward = 0;   // 2 x forward
  uint64_t recompute = 0;  // forward FLOPs run again under recomputation (see Recompute), else 0
  uint64_t model = 0;      // forward + backward: what MFU divides (PaLM's model FLOPs exclude recomputation)
  uint64_t training = 0;   // forward + backward + recompute: the hardware FLOPs HFU divides
  uint64_t tokens = 0;     // batch x seq_len
  ParameterCounts params;
  // Estimates beside the full count, for the same tokens: 6·N·D with N = active parameters (all for dense models),
  // 6·N·D with N = non-embedding active parameters (Kaplan), and PaLM's (6N + 12·L·H·Q·T)·D with N = PalmParameters.
  double six_nd = 0;
  double six_nd_non_embedding = 0;
  double palm = 0;
};

// Every matrix multiply of one forward pass over `batch` sequences of `seq_len` tokens, one row per matmul per layer
// kind, exact integer FLOPs. Errors: kInvalidArgument naming batch/seq_len when not positive or over 2^40 tokens;
// kInvalidInput when a count overflows 64 bits. MLA is counted in its training ("naive") form.
Result<std::vector<Matmul>> BuildMatmuls(const ModelSpec& m, const FlopsOptions& o);
// BuildMatmuls plus the totals and estimates of FlopsReport. Errors as BuildMatmuls.
Result<FlopsReport> ComputeFlops(const ModelSpec& m, const FlopsOptions& o);

// Decode step: `batch` new tokens each attending to a KV cache of `context` tokens (weight-absorbed MLA). Errors as
// BuildMatmuls.
Result<std::vector<Matmul>> BuildDecodeMatmuls(const ModelSpec& m, int64_t batch, int64_t context);

// PaLM's N: the active parameters less the input tables no matmul reads — an untied model's token embedding and any
// learned position table (torchtitan excludes nn.Embedding parameters; nanoGPT's estimate_mfu the position table).
int64_t PalmParameters(const ModelSpec& m);
// Training FLOPs per token at context T in the PaLM convention: 6·N + 12·L·H·Q·T with N = PalmParameters (for MLA
// 6·L·H·T·(Q_k + Q_v)). Forward + backward, causal attention in full, no recomputation.
double TrainingFlopsPerTokenPalm(const ModelSpec& m, int64_t seq_len);
// The exact matmul count per token of a training step (forward + backward = 3 x forward) at context T, default
// conventions. Errors as ComputeFlops.
Result<double> TrainingFlopsPerTokenExact(const ModelSpec& m, int64_t seq_len);

}  // namespace lmkit::accounting
