// Time of one training step under a ParallelLayout: compute from the matmul inventory (at the GPU's peak: the
// roofline's compute-bound time, or end to end at a given MFU), the pipeline bubble (pp − 1)/(vpp · m), and the
// collectives each parallelism adds, from message sizes and the link each group crosses (the GPU table's intra-node
// bandwidth, an inter-node bandwidth per GPU). Conventions and sources: docs/accounting.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/parallel_layout.h"

namespace lmkit::accounting {

struct TrainingStepOptions {
  ParallelLayout layout;
  int64_t seq_len = 1024;
  Dtype dtype = Dtype::kBf16;
  std::optional<double> mfu;             // also report the end-to-end step at this MFU, in (0, 1]
  double inter_node_bytes_per_s = 50e9;  // per GPU, per direction (one 400 Gb/s NIC per GPU)
  bool overlap = true;                   // DP/ZeRO collectives overlap the first/last micro-batch's compute
  bool causal_half = false;              // FLOP convention for causal attention (FlopsOptions::causal_half)
};

// One part of the step on the slowest pipeline stage, seconds (exposed: what the step waits for).
struct StepPart {
  std::string name;             // "compute", "pipeline bubble", "TP collectives", "CP ring exchange", "EP all-to-all",
                                // "PP send/recv", "DP gradient sync"
  double seconds = 0;           // exposed time in the step
  double bytes = 0;             // bytes each GPU sends for it per step (0 for compute and bubble)
  double link_bytes_per_s = 0;  // the link it crosses (0 for compute and bubble)
  bool inter_node = false;
};

struct TrainingStepReport {
  ResolvedLayout layout;
  TrainingStepOptions options;
  double model_flops = 0;     // one step, all GPUs: forward + backward (what MFU divides)
  double hardware_flops = 0;  // the same with recomputation
  double peak = 0;            // per GPU at the dtype
  double intra_node_bytes_per_s = 0;
  int64_t slowest_stage = 0;
  double bubble_fraction = 0;  // (pp − 1) / (vpp · m)
  std::vector<StepPart> parts;
  double step_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;     // model FLOPs / (step · GPUs · peak)
  std::string bound;  // the name of the largest part
  // With options.mfu: the step at that end-to-end MFU and its throughput.
  double at_mfu_step_s = 0, at_mfu_tokens_per_s_per_gpu = 0;
};

// Forward FLOPs of one sequence per decoder layer (in LayerOrder) and for the LM head, and the attention core's share
// of each layer (what selective recomputation runs again). Errors as BuildMatmuls.
struct LayerFlops {
  int64_t seq_len = 0;
  bool causal_half = false;
  std::vector<double> layer, attention_core;
  std::vector<double> mla_up;  // MLA's up-projections (q_b_proj, kv_b_proj): what --recompute deepseek adds
  double head = 0;
};
Result<LayerFlops> ComputeLayerFlops(const ModelSpec& m, int64_t seq_len, bool causal_half);

struct TrainingMemoryReport;
// Errors: ResolveLayout's; kInvalidArgument when the GPU has no peak for the dtype, mfu outside (0, 1] or the
// inter-node bandwidth not positive (naming the fields); ComputeFlops' errors. `flops` and `memory` (the same model,
// sequence and layout; the parameters per stage are taken from it) may be given to skip computing them again, as the
// layout search does.
Result<TrainingStepReport> EstimateTrainingStep(const ModelSpec& m, const GpuSpec& gpu, const TrainingStepOptions& o,
                                                const LayerFlops* flops = nullptr,
                                                const TrainingMemoryReport* memory = nullptr);

}  // namespace lmkit::accounting
