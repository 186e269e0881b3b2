#include "lmkit/accounting/run_training.h"

#include <cmath>

#include "lmkit/common/output_check.h"

namespace lmkit::accounting {
namespace {
constexpr EnumName<MemoryConvention> kConventionNames[] = {{MemoryConvention::kLmkit, "lmkit"},
                                                           {MemoryConvention::kMegatron, "megatron"}};
}  // namespace

std::span<const EnumName<MemoryConvention>> MemoryConventionNames() { return kConventionNames; }

Result<TrainingResult> RunTraining(const TrainingRequest& req) {
  LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput(ModelSourceFiles(req.source, {}), req.svg_path, "svg"));
  constexpr double kMaxGb = 1e9;
  if (!(req.overhead_gib >= 0 && req.overhead_gib <= kMaxGb))
    return Status::InvalidArgument(Field("overhead_gib") + " must be a number from 0 to 1e9");
  if (!(req.capacity_gb >= 0 && req.capacity_gb <= kMaxGb))
    return Status::InvalidArgument(Field("capacity_gb") + " must be a number from 0 to 1e9");
  if (!(req.inter_node_gb_s > 0 && req.inter_node_gb_s <= 1e6))
    return Status::InvalidArgument(Field("inter_node_gb_s") + " must be a number above 0 (GB/s per GPU)");
  if (req.top < 1) return Status::InvalidArgument(Field("top") + " must be positive");
  TrainingResult r;
  r.request = req;
  LMKIT_ASSIGN_OR_RETURN(r.gpu, ResolveGpu(req.gpu, req.gpu_spec));
  LMKIT_ASSIGN_OR_RETURN(r.model, ResolveModelSource(req.source));
  const uint64_t overhead = static_cast<uint64_t>(std::llround(req.overhead_gib * 1073741824.0));
  double capacity = req.capacity_gb * 1e9;
  if (r.gpu && capacity == 0) capacity = r.gpu->memory_bytes;

  if (req.search) {
    if (!r.gpu) return Status::InvalidArgument(Field("search") + " needs " + Field("gpu"));
    if (req.layout.gpus < 1) return Status::InvalidArgument(Field("search") + " needs " + Field("gpus"));
    LayoutSearchOptions so;
    so.gpus = req.layout.gpus;
    so.gpus_per_node = req.layout.gpus_per_node;
    so.seq_len = req.seq_len;
    so.global_batch = req.layout.global_batch;
    so.dtype = req.dtype;
    so.optimizer = req.optimizer;
    so.overhead_bytes = overhead;
    so.capacity_bytes = capacity;
    so.inter_node_bytes_per_s = req.inter_node_gb_s * 1e9;
    so.top = req.top;
    LMKIT_ASSIGN_OR_RETURN(r.search, SearchLayouts(r.model, *r.gpu, so));
    return r;
  }
  TrainingMemoryOptions mo;
  mo.layout = req.layout;
  mo.seq_len = req.seq_len;
  mo.dtype = req.dtype;
  mo.optimizer = req.optimizer;
  mo.overhead_bytes = overhead;
  mo.capacity_bytes = capacity;
  LMKIT_ASSIGN_OR_RETURN(r.memory, EstimateTrainingMemory(r.model, mo));
  if (r.gpu) {
    TrainingStepOptions so;
    so.layout = req.layout;
    so.seq_len = req.seq_len;
    so.dtype = req.dtype;
    so.mfu = req.mfu;
    so.inter_node_bytes_per_s = req.inter_node_gb_s * 1e9;
    so.overlap = req.overlap;
    so.causal_half = req.causal_half;
    LMKIT_ASSIGN_OR_RETURN(r.step, EstimateTrainingStep(r.model, *r.gpu, so));
  } else if (req.mfu) {
    return Status::InvalidArgument(Field("mfu") + " needs " + Field("gpu"));
  }
  return r;
}

}  // namespace lmkit::accounting
