// A training layout: how a ModelSpec's step is split over GPUs by tensor (TP, with sequence parallelism), pipeline
// (PP, interleaved with VPP virtual stages), context (CP), expert (EP) and data parallelism (DP, ZeRO / distributed
// optimizer), with micro-batches and recomputation. Resolving checks every divisibility the frameworks require and
// fills in what follows (DP from the GPU count, micro-batches, the layers of each pipeline chunk). Conventions:
// docs/accounting.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/model.h"
#include "lmkit/common/status.h"

namespace lmkit::accounting {

// As the request gives it; 0 means "derive" where noted.
struct ParallelLayout {
  int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1;
  int64_t etp = 0;   // expert tensor parallelism (Megatron's expert_tensor_parallel_size); 0 = tp
  int64_t dp = 0;    // 0 = gpus / (tp·pp·cp), or 1 when gpus is 0 too
  int64_t gpus = 0;  // 0 = tp·pp·cp·dp
  bool sequence_parallel = false;
  int64_t micro_batch = 1;   // sequences per micro-batch per data-parallel rank
  int64_t global_batch = 0;  // sequences per step over all ranks; 0 = micro_batch·dp (one micro-batch)
  int zero = 0;              // 0..3; Megatron's distributed optimizer is 1
  Recompute recompute = Recompute::kNone;
  int64_t gpus_per_node = 8;  // for which collectives leave the node
};

struct ResolvedLayout {
  ParallelLayout layout;      // every 0 filled in
  int64_t world = 1;          // tp·pp·cp·dp
  int64_t micro_batches = 1;  // per pipeline per step: global_batch / (micro_batch·dp)
  int64_t expert_dp = 1;      // data-parallel ranks of an expert shard: tp·cp·dp / (etp·ep)
  int64_t seq_len = 0;
  std::vector<int64_t> chunk_layers;         // layers of each model chunk, chunk c on pipeline rank c % pp
  int64_t StageLayers(int64_t stage) const;  // layers on pipeline rank `stage` (all its chunks)
};

// Resolves and validates `l` for `m` at `seq_len` tokens per sequence. The layers are split as evenly as the
// pp·vpp chunks allow; chunks with one layer fewer go first to the first and last chunk, then inwards (Llama 3 405B:
// 126 layers over 16 stages gives 7 to the first and last stage). Errors (kInvalidArgument naming the fields): a
// degree below 1; heads, KV heads or the MLP width not divisible by tp; experts by ep; the expert ranks (etp·ep) not
// dividing tp·cp·dp; seq_len not divisible by 2·cp (load-balanced causal CP) or, with sequence parallelism, the
// per-CP-rank sequence by tp; fewer layers than pp·vpp chunks; vpp > 1 without pp > 1 or with micro-batches not a
// multiple of pp; gpus not a multiple of tp·pp·cp or disagreeing with dp; global_batch not a multiple of
// micro_batch·dp; ep > 1 on a dense model; sequence parallelism without tp > 1 is allowed (a no-op).
Result<ResolvedLayout> ResolveLayout(const ModelSpec& m, const ParallelLayout& l, int64_t seq_len);

// "TP 8 x PP 16 (VPP 2) x CP 1 x DP 128, EP 1, SP, mb 1 x 16, ZeRO-1, selective".
std::string DescribeLayout(const ResolvedLayout& r);

}  // namespace lmkit::accounting
