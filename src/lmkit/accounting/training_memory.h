// GPU memory of a training step under a ParallelLayout, per pipeline stage: the weights, gradients and optimizer state
// of the stage's shard and the activations of the micro-batches it holds in flight under 1F1B or interleaved 1F1B;
// beside it, Megatron-LM's own estimate (megatron/training/theoretical_memory_usage.py) reproduced term for term.
// Conventions and sources: docs/accounting.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/memory.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/parallel_layout.h"

namespace lmkit::accounting {

struct TrainingMemoryOptions {
  ParallelLayout layout;
  int64_t seq_len = 1024;
  Dtype dtype = Dtype::kBf16;
  Optimizer optimizer = Optimizer::kAdamW;
  uint64_t overhead_bytes = 1ULL << 30;
  double capacity_bytes = 0;  // 0 = unknown (no fit verdict)
};

// One pipeline stage (rank), per GPU, bytes.
struct StageMemory {
  int64_t stage = 0;
  int64_t layers = 0;
  bool embedding = false, lm_head = false;  // holds the input embedding / the output layer
  int64_t params = 0;                       // parameters on one GPU of the stage
  int64_t expert_params = 0;                // of which routed-expert parameters (sharded over the expert DP group)
  uint64_t weights = 0, gradients = 0, optimizer = 0;
  int64_t in_flight = 0;     // micro-batches (interleaved: model-chunk micro-batches) whose activations it holds
  uint64_t activations = 0;  // the decoder layers' stored activations of those in flight
  uint64_t logits = 0;       // last stage: final norm input and fp32 logits of one micro-batch
  uint64_t overhead = 0;
  uint64_t total = 0;
};

// Megatron-LM's theoretical_memory_usage.py for the same model and layout (bf16 weights, fp32 main gradients and
// Adam: 18 bytes per parameter, 6 + 12/DP with the distributed optimizer, experts over their own DP group; the
// vocabulary padded to a multiple of 128·TP; activations of the first stage after Korthikanti et al. Table 2). Exact
// to the byte (rounded to the nearest).
struct MegatronMemory {
  double params_most_loaded = 0;  // parameters of the most loaded shard
  uint64_t weight_and_optimizer = 0;
  uint64_t activations = 0;
  bool sp_selective_path = false;  // its formula with SP and selective recomputation; else the one without SP
  int64_t padded_vocab = 0;
};

struct TrainingMemoryReport {
  ResolvedLayout layout;
  TrainingMemoryOptions options;
  double weight_bytes_per_param = 0, grad_bytes_per_param = 0, optimizer_bytes_per_param = 0;
  std::vector<StageMemory> stages;  // one per pipeline rank
  int64_t most_loaded = 0;          // index of the stage with the largest total (the first on ties)
  MegatronMemory megatron;
  uint64_t activation_bytes_per_layer = 0;  // one dense decoder layer, one micro-batch, per GPU (MoE layer if none)
  bool capacity_known = false, fits = false;
  std::string activations_counted;
};

// Errors: ResolveLayout's; kInvalidArgument for fp8/int8 training or a total past 1e18 bytes.
Result<TrainingMemoryReport> EstimateTrainingMemory(const ModelSpec& m, const TrainingMemoryOptions& o);

// Megatron-LM's estimate alone (see MegatronMemory) for a resolved layout. Pure.
MegatronMemory MegatronTheoreticalMemory(const ModelSpec& m, const ResolvedLayout& r);

// The model's layers in order as (moe?, window) of each; kinds in their listed order (DeepSeek: dense first).
struct LayerSlot {
  bool moe = false;
  int64_t window = 0;
};
std::vector<LayerSlot> LayerOrder(const ModelSpec& m);

}  // namespace lmkit::accounting
