#include "lmkit/accounting/layout_search.h"

#include <algorithm>
#include <map>

#include "lmkit/accounting/step_time.h"
#include "lmkit/accounting/training_memory.h"

namespace lmkit::accounting {
namespace {

std::vector<int64_t> Divisors(int64_t n, int64_t cap) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= std::min(n, cap); ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

struct Evaluation {
  bool valid = false;
  std::string reason;
  uint64_t peak = 0;
  bool fits = false;
  TrainingStepReport step;
};

// The rejection reason without its numbers, so that layouts failing for the same rule count together.
std::string Category(const std::string& msg) {
  std::string out;
  bool in_number = false;
  for (char c : msg) {
    if (c >= '0' && c <= '9') {
      if (!in_number) out += 'N';
      in_number = true;
    } else {
      in_number = false;
      out += c;
    }
  }
  return out;
}

bool Better(const LayoutCandidate& a, const LayoutCandidate& b) {
  if (a.step_s != b.step_s) return a.step_s < b.step_s;
  if (a.peak_bytes != b.peak_bytes) return a.peak_bytes < b.peak_bytes;
  return a.description < b.description;
}

}  // namespace

Result<LayoutSearchResult> SearchLayouts(const ModelSpec& m, const GpuSpec& gpu, const LayoutSearchOptions& in) {
  LayoutSearchOptions o = in;
  if (o.gpus < 1 || o.gpus > (int64_t{1} << 20))
    return Status::InvalidArgument(Field("gpus") + " must be from 1 to 1048576");
  if (o.global_batch < 1) return Status::InvalidArgument(Field("global_batch") + " must be given (sequences per step)");
  if (o.seq_len < 1) return Status::InvalidArgument(Field("seq_len") + " must be positive");
  if (o.gpus_per_node < 1) return Status::InvalidArgument(Field("gpus_per_node") + " must be positive");
  if (o.gpus > o.gpus_per_node && o.gpus % o.gpus_per_node != 0)
    return Status::InvalidArgument(Field("gpus") + " (" + std::to_string(o.gpus) + ") is not whole nodes of " +
                                   std::to_string(o.gpus_per_node));
  if (o.capacity_bytes <= 0) o.capacity_bytes = gpu.memory_bytes;
  if (!(o.capacity_bytes > 0))
    return Status::InvalidArgument(gpu.name + " has no memory size; give " + Field("capacity_gb"));
  LayoutSearchResult res;
  res.options = o;

  LMKIT_ASSIGN_OR_RETURN(const LayerFlops flops, ComputeLayerFlops(m, o.seq_len, false));
  auto evaluate = [&](const ParallelLayout& l) {
    Evaluation e;
    TrainingMemoryOptions mo;
    mo.layout = l;
    mo.seq_len = o.seq_len;
    mo.dtype = o.dtype;
    mo.optimizer = o.optimizer;
    mo.overhead_bytes = o.overhead_bytes;
    mo.capacity_bytes = o.capacity_bytes;
    auto mem = EstimateTrainingMemory(m, mo);
    if (!mem.ok()) {
      e.reason = mem.status().message();
      return e;
    }
    e.valid = true;
    e.peak = mem->stages[static_cast<size_t>(mem->most_loaded)].total;
    e.fits = mem->fits;
    TrainingStepOptions so;
    so.layout = l;
    so.seq_len = o.seq_len;
    so.dtype = o.dtype;
    so.inter_node_bytes_per_s = o.inter_node_bytes_per_s;
    auto step = EstimateTrainingStep(m, gpu, so, &flops, &*mem);
    if (!step.ok()) {
      e.valid = false;
      e.reason = step.status().message();
      return e;
    }
    e.step = *step;
    return e;
  };
  auto candidate = [&](const Evaluation& e) {
    LayoutCandidate c;
    c.layout = e.step.layout.layout;
    c.description = DescribeLayout(e.step.layout);
    c.peak_bytes = e.peak;
    c.step_s = e.step.step_s;
    c.mfu = e.step.mfu;
    c.tokens_per_s_per_gpu = e.step.tokens_per_s_per_gpu;
    c.bound = e.step.bound;
    return c;
  };

  std::map<std::string, int64_t> reasons;
  std::vector<LayoutCandidate> fitting, over;
  const int64_t experts = m.is_moe() ? m.moe.routed_experts : 1;
  const Recompute recomputes[] = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  for (int64_t tp : Divisors(o.gpus_per_node, o.gpus_per_node)) {
    if (o.gpus % tp != 0) continue;
    for (int64_t pp : Divisors(o.gpus / tp, m.layers)) {
      for (int64_t cp : Divisors(o.gpus / (tp * pp), 64)) {
        if ((cp & (cp - 1)) != 0) continue;  // powers of two only
        const int64_t dp = o.gpus / (tp * pp * cp);
        for (int64_t ep : Divisors(experts, experts)) {
          for (int64_t mb : {1, 2, 4}) {
            for (int64_t vpp : {1, 2, 4}) {
              if (vpp > 1 && pp == 1) continue;
              for (Recompute rc : recomputes) {
                for (int zero : {0, 1, 3}) {
                  if (zero == 3 && pp > 1) continue;  // ZeRO-3 shards what PP already splits; not combined here
                  ParallelLayout l;
                  l.tp = tp;
                  l.pp = pp;
                  l.vpp = vpp;
                  l.cp = cp;
                  l.ep = ep;
                  l.dp = dp;
                  l.gpus = o.gpus;
                  l.sequence_parallel = tp > 1;
                  l.micro_batch = mb;
                  l.global_batch = o.global_batch;
                  l.zero = zero;
                  l.recompute = rc;
                  l.gpus_per_node = o.gpus_per_node;
                  ++res.evaluated;
                  Evaluation e = evaluate(l);
                  if (!e.valid) {
                    ++reasons[Category(e.reason)];
                    continue;
                  }
                  ++res.valid;
                  if (e.fits) {
                    ++res.fitting;
                    fitting.push_back(candidate(e));
                  } else {
                    ++reasons["the most loaded stage needs more than the GPU's memory"];
                    over.push_back(candidate(e));
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  std::sort(fitting.begin(), fitting.end(), Better);
  std::sort(over.begin(), over.end(), Better);
  if (static_cast<int64_t>(fitting.size()) > o.top) fitting.resize(static_cast<size_t>(o.top));
  res.best = std::move(fitting);

  // The cheapest single change for the fastest layouts that do not fit: each change that keeps the GPU count, the
  // fastest of those that fit wins.
  for (const auto& c : over) {
    if (static_cast<int64_t>(res.near_misses.size()) >= o.near_misses) break;
    LayoutCandidate nm = c;
    const ParallelLayout& b = c.layout;
    std::vector<std::pair<std::string, ParallelLayout>> changes;
    if (b.recompute != Recompute::kFull) {
      ParallelLayout l = b;
      l.recompute = b.recompute == Recompute::kNone ? Recompute::kSelective : Recompute::kFull;
      changes.push_back({std::string("recompute ") + RecomputeName(l.recompute), l});
    }
    if (b.zero < 1 || (b.zero < 3 && b.pp == 1)) {
      ParallelLayout l = b;
      l.zero = b.zero < 1 ? 1 : 3;
      changes.push_back({"ZeRO-" + std::to_string(l.zero), l});
    }
    if (b.micro_batch > 1) {
      ParallelLayout l = b;
      l.micro_batch /= 2;
      changes.push_back({"micro-batch " + std::to_string(l.micro_batch), l});
    }
    for (auto [name, field] : {std::pair<const char*, int64_t ParallelLayout::*>{"PP", &ParallelLayout::pp},
                               {"TP", &ParallelLayout::tp},
                               {"CP", &ParallelLayout::cp}}) {
      if (b.dp % 2 != 0) break;
      ParallelLayout l = b;
      l.*field *= 2;
      l.dp /= 2;
      l.sequence_parallel = l.tp > 1;
      changes.push_back({std::string(name) + " " + std::to_string(l.*field) + " (DP " + std::to_string(l.dp) + ")", l});
    }
    for (const auto& [name, l] : changes) {
      Evaluation e = evaluate(l);
      if (!e.valid || !e.fits) continue;
      if (nm.change.empty() || e.step.step_s < nm.change_step_s) {
        nm.change = name;
        nm.change_layout = DescribeLayout(e.step.layout);
        nm.change_step_s = e.step.step_s;
      }
    }
    res.near_misses.push_back(nm);
  }
  for (const auto& [k, v] : reasons) res.rejected.push_back({k, v});
  std::stable_sort(res.rejected.begin(), res.rejected.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return res;
}

}  // namespace lmkit::accounting
