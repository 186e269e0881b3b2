// What one plan model takes per GPU, and the cheapest single change that would let a model left out be placed.
#pragma once

#include <cstdint>
#include <vector>

#include "lmkit/accounting/plan.h"

namespace lmkit::accounting {

struct Footprint {
  MemoryReport memory;        // per GPU (EstimateMemory, inference, its tensor-parallel degree)
  uint64_t footprint = 0;     // per GPU: weights + KV budget + activations + runtime
  uint64_t kv_budget = 0;     // per GPU
  uint64_t kv_tokens = 0;     // tokens the budget holds
  int64_t max_sequences = 0;  // sequences of seq_len the budget holds
  int64_t max_batch_alone = 0;
  bool budget_short = false;  // gpu_memory_utilization leaves nothing for the KV cache
};
// The footprint of `pm` on `gpu` with `usable` bytes per GPU and `runtime` bytes of its own. Errors: EstimateMemory's.
Result<Footprint> ModelFootprint(const PlanModel& pm, const GpuSpec& gpu, double usable, double runtime);

// For model `i` of `r` (not placed), the single changes that would place it with every other model where it is,
// cheapest first: a smaller batch (or share), the KV cache in fp8, 8-bit weights, a higher tensor-parallel degree,
// more GPUs, a larger GPU from the table. Empty when none does.
std::vector<WhatIf> CheapestChanges(const PlanResult& r, size_t i);

}  // namespace lmkit::accounting
