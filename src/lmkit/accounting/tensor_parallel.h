// Tensor parallelism (Megatron-LM / vLLM) of a ModelSpec over the GPUs of one node: what each GPU holds and the
// all-reduces a step costs. Conventions: docs/accounting.md.
#pragma once

#include <cstdint>
#include <string>

#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/model.h"

namespace lmkit::accounting {

// The slice of `m` one of `tp` GPUs holds, as a ModelSpec: heads / tp query heads, max(1, kv_heads / tp) KV heads (KV
// heads are replicated when tp > kv_heads, as vLLM does), MLP, expert and shared-expert widths and the vocabulary
// (embedding and LM head) / tp rounded up; norms, routers, position tables and MLA's down-projections and latent
// cache replicated. tp 1 returns `m`. Errors (kInvalidArgument, `field` naming the degree in the caller's terms):
// tp not dividing the heads, or the KV heads not spreading evenly (kv_heads % tp, or tp % kv_heads when tp is larger).
Result<ModelSpec> ShardForTensorParallel(const ModelSpec& m, int64_t tp, const std::string& field);

// The all-reduces of one forward pass of `tokens` tokens under tensor parallelism: one per layer after a parallel
// attention/MLP block, else two (after attention and after the MLP), plus one for the vocabulary-parallel embedding;
// each of tokens × d_model activations at `act_bytes`. A ring all-reduce moves 2·(tp − 1)/tp of the message per GPU
// over the interconnect (per direction) and costs `latency_s` more per call.
struct AllReduceCost {
  int64_t count = 0;      // all-reduces per forward pass
  double bytes_each = 0;  // message size
  double seconds = 0;     // total time (0 when tp is 1)
};
AllReduceCost TensorParallelAllReduce(const ModelSpec& m, int64_t tp, int64_t tokens, double act_bytes,
                                      double link_bytes_per_s, double latency_s);

// The per-call latency assumed for a small NCCL all-reduce within a node (docs/accounting.md: an assumption, not a
// measurement; nccl-tests report single-digit microseconds on NVLink).
constexpr double kAllReduceLatencyS = 10e-6;

}  // namespace lmkit::accounting
