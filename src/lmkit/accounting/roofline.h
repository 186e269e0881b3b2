// Step time on a GPU: the MFU estimate (FLOPs / (peak x MFU)) and a per-matmul roofline (compute- or memory-bound).
//
// Contract: pure arithmetic. Roofline: each matmul moves its A (M x K) and C (M x N) operands once per run and its B
// operand (K x N: a weight, or cached keys/values) b_reads times, at `dtype` bytes per element; its time is
// max(FLOPs / peak, bytes / bandwidth) (Williams et al. 2009) and it is compute-bound when the first term is larger,
// i.e. when its arithmetic intensity (FLOPs per byte) exceeds the GPU's ridge point peak / bandwidth. Kernels are
// assumed to reach the peaks and nothing overlaps across matmuls, so the sum is an optimistic lower bound for unfused
// code. Thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"

namespace lmkit::accounting {

struct StepTime {
  double flops = 0;         // FLOPs of one step
  double peak = 0;          // FLOP/s at the dtype
  double mfu = 0;           // model FLOPs utilisation assumed
  double seconds = 0;       // flops / (peak * mfu)
  double tokens_per_s = 0;  // tokens per step / seconds
};
// Errors: kInvalidArgument when the GPU has no peak for `dtype` or mfu is not in (0, 1].
Result<StepTime> EstimateStepTime(double flops, double tokens, const GpuSpec& gpu, Dtype dtype, double mfu);

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
};
Result<Roofline> ComputeRoofline(const std::vector<Matmul>& ops, const GpuSpec& gpu, Dtype dtype);

}  // namespace lmkit::accounting
