#include "lmkit/accounting/plan_what_if.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace lmkit::accounting {
namespace {

// The free bytes of the GPUs after the placement, largest first.
std::vector<double> FreeDescending(const PlanResult& r) {
  std::vector<double> free;
  for (size_t g = 0; g < r.gpu_use.size(); ++g)
    free.push_back(r.usable_bytes - static_cast<double>(r.gpu_use[g].models_bytes));
  std::sort(free.begin(), free.end(), std::greater<>());
  return free;
}

// Whether `pieces` pieces of `bytes` each fit the free space (one per GPU).
bool Fits(const std::vector<double>& free, uint64_t bytes, int64_t pieces) {
  if (pieces > static_cast<int64_t>(free.size()) || pieces <= 0) return false;
  return free[static_cast<size_t>(pieces - 1)] >= static_cast<double>(bytes);
}

}  // namespace

std::vector<WhatIf> CheapestChanges(const PlanResult& r, size_t i) {
  const ModelEstimate& e = r.models[i];
  const PlanModel& pm = e.entry;
  const std::vector<double> free = FreeDescending(r);
  const double runtime = r.plan.runtime_bytes_per_model;
  std::vector<WhatIf> out;
  // A variant of the model that would be placed: its footprint, if it fits beside the others.
  auto try_variant = [&](const PlanModel& v, const GpuSpec& gpu, double usable, const std::vector<double>& room,
                         WhatIf change) -> bool {
    if (gpu.PeakFlops(v.dtype) <= 0 || !ShardForTensorParallel(v.spec, v.tp, "tp").ok()) return false;
    auto fp = ModelFootprint(v, gpu, usable, runtime);
    if (!fp.ok() || fp->budget_short || static_cast<double>(fp->footprint) > usable) return false;
    if (!Fits(room, fp->footprint, v.tp)) return false;
    change.footprint = fp->footprint;
    change.tp = v.tp;
    out.push_back(std::move(change));
    return true;
  };
  auto from_to = [](WhatIfChange c, double from, double to) {
    WhatIf w;
    w.change = c;
    w.from = from;
    w.to = to;
    return w;
  };

  // 1. Fewer sequences at once: the footprint is linear in the batch (or, under gpu_memory_utilization, the share).
  if (pm.gpu_memory_utilization > 0) {
    if (pm.tp <= static_cast<int64_t>(free.size())) {
      const double room = free[static_cast<size_t>(pm.tp - 1)];
      const double share = std::floor(room / r.gpu.memory_bytes * 100.0) / 100.0;
      PlanModel v = pm;
      v.gpu_memory_utilization = share;
      if (share > 0 && share < pm.gpu_memory_utilization)
        try_variant(v, r.gpu, r.usable_bytes, free,
                    from_to(WhatIfChange::kGpuMemoryUtilization, pm.gpu_memory_utilization, share));
    }
  } else if (pm.batch > 1 && pm.tp <= static_cast<int64_t>(free.size())) {
    const double room = free[static_cast<size_t>(pm.tp - 1)];
    const double fixed = static_cast<double>(e.footprint - e.memory.activations - (pm.kv_tokens > 0 ? 0 : e.kv_budget));
    const double per_seq =
        static_cast<double>(e.memory.per_sequence) -
        (pm.kv_tokens > 0 ? static_cast<double>(e.memory.kv_cache) / static_cast<double>(pm.batch) : 0.0);
    const int64_t b = per_seq > 0 && room > fixed ? static_cast<int64_t>((room - fixed) / per_seq) : 0;
    if (b >= 1 && b < pm.batch) {
      PlanModel v = pm;
      v.batch = b;
      try_variant(v, r.gpu, r.usable_bytes, free,
                  from_to(WhatIfChange::kBatch, static_cast<double>(pm.batch), static_cast<double>(b)));
    }
  }
  // 2. The KV cache in fp8 (vLLM's kv_cache_dtype fp8).
  const Dtype kv = pm.kv_dtype.value_or(AutoKvDtype(pm.dtype));
  if (DtypeBytes(kv) > 1) {
    PlanModel v = pm;
    v.kv_dtype = Dtype::kFp8;
    try_variant(v, r.gpu, r.usable_bytes, free, from_to(WhatIfChange::kKvDtypeFp8, 0, 0));
  }
  // 3. 8-bit weights (Linear layers), where the GPU runs them.
  if (DtypeBytes(pm.dtype) > 1) {
    for (Dtype d : {Dtype::kFp8, Dtype::kInt8}) {
      PlanModel v = pm;
      v.dtype = d;
      WhatIf w;
      w.change = WhatIfChange::kDtype;
      w.dtype = d;
      if (try_variant(v, r.gpu, r.usable_bytes, free, w)) break;
    }
  }
  // 4. A higher tensor-parallel degree on the plan's GPUs.
  for (int64_t t = pm.tp + 1; t <= static_cast<int64_t>(free.size()); ++t) {
    PlanModel v = pm;
    v.tp = t;
    if (try_variant(v, r.gpu, r.usable_bytes, free,
                    from_to(WhatIfChange::kTp, static_cast<double>(pm.tp), static_cast<double>(t))))
      break;
  }
  // 5. More GPUs of the same kind: empty ones take it when it fits empty GPUs.
  if (e.fits_alone || pm.tp > r.gpus) {
    std::vector<double> more = free;
    const int64_t add = e.fits_alone ? pm.tp : pm.tp - r.gpus;
    more.insert(more.begin(), static_cast<size_t>(add), r.usable_bytes);
    try_variant(pm, r.gpu, r.usable_bytes, more,
                from_to(WhatIfChange::kGpus, static_cast<double>(r.gpus), static_cast<double>(r.gpus + add)));
  }
  // 6. A larger GPU from the table: the smallest on which the whole plan places this model and loses none of the
  // others (every GPU of the plan changes, so every model is placed again).
  if (auto table = LoadGpuTable(); table.ok()) {
    std::vector<GpuSpec> bigger;
    for (const auto& g : *table)
      if (g.memory_bytes > r.gpu.memory_bytes) bigger.push_back(g);
    std::stable_sort(bigger.begin(), bigger.end(),
                     [](const GpuSpec& a, const GpuSpec& b) { return a.memory_bytes < b.memory_bytes; });
    const int placed_now = static_cast<int>(r.models.size() - r.unplaced.size());
    for (const auto& g : bigger) {
      const double usable = std::floor(g.memory_bytes - g.memory_bytes * r.plan.fragmentation - r.plan.reserved_bytes);
      std::vector<PackItem> items;
      std::vector<size_t> which;
      for (size_t k = 0; k < r.models.size(); ++k) {
        const PlanModel& m = r.models[k].entry;
        if (g.PeakFlops(m.dtype) <= 0) continue;
        auto fp = ModelFootprint(m, g, usable, runtime);
        if (!fp.ok() || fp->budget_short || static_cast<double>(fp->footprint) > usable || m.tp > r.gpus) continue;
        items.push_back({fp->footprint, static_cast<int>(m.tp)});
        which.push_back(k);
      }
      const Packing p = PackItems(items, static_cast<uint64_t>(usable), static_cast<int>(r.gpus));
      bool placed = false;
      for (size_t c = 0; c < which.size(); ++c) placed = placed || (which[c] == i && !p.bins_of[c].empty());
      if (placed && p.placed > placed_now) {
        WhatIf w;
        w.change = WhatIfChange::kGpu;
        w.gpu = g.name;
        w.placed = p.placed;
        w.models = static_cast<int64_t>(r.models.size());
        w.gpus = r.gpus;
        out.push_back(std::move(w));
        break;
      }
    }
  }
  return out;
}

}  // namespace lmkit::accounting
