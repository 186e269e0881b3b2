// Layout search: every training layout of a model on a cluster (TP within a node, PP, CP, EP, DP from the GPU count,
// micro-batch, VPP, recomputation, ZeRO), the ones that fit ranked by predicted step time, why the rest fail, and for
// the fastest that do not fit the cheapest single change that would. Deterministic. Conventions: docs/accounting.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/memory.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/parallel_layout.h"

namespace lmkit::accounting {

struct LayoutSearchOptions {
  int64_t gpus = 8;
  int64_t gpus_per_node = 8;
  int64_t seq_len = 4096;
  int64_t global_batch = 0;  // sequences per step; required
  Dtype dtype = Dtype::kBf16;
  Optimizer optimizer = Optimizer::kAdamW;
  uint64_t overhead_bytes = 1ULL << 30;
  double capacity_bytes = 0;  // 0 = the GPU's memory
  double inter_node_bytes_per_s = 50e9;
  int64_t top = 10;         // fitting layouts listed
  int64_t near_misses = 3;  // fastest non-fitting layouts listed with their cheapest change
};

struct LayoutCandidate {
  ParallelLayout layout;
  std::string description;  // DescribeLayout
  uint64_t peak_bytes = 0;  // most loaded stage, per GPU
  double step_s = 0, mfu = 0, tokens_per_s_per_gpu = 0;
  std::string bound;
  std::string change;         // near misses: the cheapest single change that fits ("" = none found)
  std::string change_layout;  // its description
  double change_step_s = 0;
};

struct LayoutSearchResult {
  LayoutSearchOptions options;
  int64_t evaluated = 0;  // layouts enumerated
  int64_t valid = 0;      // that the model's shapes allow
  int64_t fitting = 0;
  std::vector<LayoutCandidate> best;         // fitting, fastest first (ties: less memory, then description)
  std::vector<LayoutCandidate> near_misses;  // valid but over capacity, fastest first, with their cheapest change
  std::vector<std::pair<std::string, int64_t>> rejected;  // why layouts failed, most frequent first
};

// Errors: kInvalidArgument naming gpus, global_batch, seq_len or capacity when they are not positive (or the GPU has
// no memory size), or gpus not a multiple of gpus_per_node above one node.
Result<LayoutSearchResult> SearchLayouts(const ModelSpec& m, const GpuSpec& gpu, const LayoutSearchOptions& o);

}  // namespace lmkit::accounting
