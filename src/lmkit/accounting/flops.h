// Matmul inventory and FLOP counts of a transformer step (forward, backward, training), with the conventions stated.
//
// Contract: BuildMatmuls lists every matrix multiply of one forward pass over `batch` sequences of `seq_len` tokens,
// one row per matmul per layer kind, with exact integer FLOPs. Conventions (defaults; FlopsOptions changes them):
//   * FLOP = 2 x MAC: (M x K)·(K x N) costs 2·M·K·N (CS336, Megatron, PyTorch FlopCounterMode). `macs` reports MACs.
//   * causal attention counts the full T x T score and attention x V products (CS336, nanoGPT, Chinchilla, PaLM);
//     `causal_half` halves them (Megatron, FlashAttention, MaxText). A sliding window caps the keys per query.
//   * the embedding lookup costs nothing; the LM head (d x V) is counted (`lm_head` = false drops it).
//   * softmax, norms and elementwise work are not counted; `softmax_flops` adds Chinchilla's 3·heads·T² per layer.
//   * backward = 2 x forward (Kaplan, Chinchilla); full activation recomputation adds one more forward (Megatron eq.
//   3).
// Attention is the unfused form (scores materialised); MLA is counted in its training ("naive") form for prefill and
// in the weight-absorbed form for decode. Counts are exact uint64; a count that overflows is a kInvalidInput error.
// Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/accounting/model.h"
#include "lmkit/accounting/params.h"

namespace lmkit::accounting {

enum class Recompute { kNone, kSelective, kFull };
Result<Recompute> ParseRecompute(const std::string& name);
const char* RecomputeName(Recompute r);

struct FlopsOptions {
  int64_t seq_len = 1024;
  int64_t batch = 1;
  bool causal_half = false;
  bool lm_head = true;
  bool softmax_flops = false;
  bool macs = false;  // report MACs (= FLOPs / 2) in the printed rows; totals stay FLOPs
  Recompute recompute = Recompute::kNone;
};

// The components every matmul belongs to (the order is the report's).
enum class Component { kAttnProj, kAttnScores, kAttnValues, kFfn, kRouter, kLmHead, kSoftmax };
constexpr int kComponentCount = 7;
const char* ComponentName(Component c);  // "attention projections", "attention scores", "attention x V", "FFN/experts",
                                         // "router", "LM head", "softmax"

struct Matmul {
  std::string name;        // "q_proj", "scores (QK^T)", "experts w1 (gate)" ...
  std::string layer_kind;  // LayerKind::name, or "head"
  Component component = Component::kAttnProj;
  int64_t m = 0, k = 0, n = 0;  // one product (M x K)·(K x N)
  int64_t count = 0;            // how many times it runs per step (layers x heads x batch ...)
  uint64_t flops = 0;           // 2·M·K·N·count, halved for causal-half score/AV rows
  // Memory traffic for the roofline (bytes at the step's dtype are bytes_elems x dtype bytes):
  // A (M x K) and C (M x N) move once per run; the B operand (K x N: a weight or the cached K/V) moves b_reads times.
  double b_reads = 0;
};

struct FlopsReport {
  FlopsOptions options;
  std::vector<Matmul> matmuls;
  uint64_t component[kComponentCount] = {};
  uint64_t forward = 0;
  uint64_t backward = 0;   // 2 x forward
  uint64_t recompute = 0;  // forward again under full recomputation, else 0
  uint64_t training = 0;   // forward + backward + recompute
  uint64_t tokens = 0;     // batch x seq_len
  ParameterCounts params;
  // Estimates beside the full count, for the same tokens: 6·N·D with N = active parameters (all for dense models),
  // 6·N·D with N = non-embedding active parameters (Kaplan), and PaLM's (6N + 12·L·H·Q·T)·D (N = active parameters).
  double six_nd = 0;
  double six_nd_non_embedding = 0;
  double palm = 0;
};

Result<std::vector<Matmul>> BuildMatmuls(const ModelSpec& m, const FlopsOptions& o);
Result<FlopsReport> ComputeFlops(const ModelSpec& m, const FlopsOptions& o);

// Decode step: `batch` new tokens each attending to a KV cache of `context` tokens (weight-absorbed MLA).
Result<std::vector<Matmul>> BuildDecodeMatmuls(const ModelSpec& m, int64_t batch, int64_t context);

// ---- entry points other areas use (dataload's MFU) --------------------------------------------------------------
// Training FLOPs per token at context T in the PaLM / nanoGPT convention: 6·N + 12·L·H·Q·T, N = active parameters
// (all parameters for dense models), L layers, H heads, Q head_dim (for MLA: qk head dim). Forward+backward, causal
// attention counted in full, no recomputation.
double TrainingFlopsPerTokenPalm(const ModelSpec& m, int64_t seq_len);
// The exact matmul count per token of a training step (forward + backward = 3 x forward) at context T, default
// conventions. Errors as ComputeFlops.
Result<double> TrainingFlopsPerTokenExact(const ModelSpec& m, int64_t seq_len);

}  // namespace lmkit::accounting
