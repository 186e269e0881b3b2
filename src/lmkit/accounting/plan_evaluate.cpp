// A parsed plan evaluated: every model estimated with the accounting code (no second copy of its arithmetic), placed,
// and explained.
#include <algorithm>
#include <cmath>
#include <map>

#include "lmkit/accounting/plan.h"
#include "lmkit/accounting/plan_what_if.h"
#include "lmkit/common/output_check.h"
#include "lmkit/common/units.h"

namespace lmkit::accounting {
namespace {

std::string Where(const PlanModel& pm) { return "models[" + std::to_string(pm.index) + "] '" + pm.name + "'"; }

// A model given by its weights: latency_ms when measured; else one batch's flops at the GPU's peak or the read of its
// weights and activations at the GPU's bandwidth, whichever is longer (a roofline of the whole batch).
Status WeightsModelSpeed(const PlanModel& pm, const GpuSpec& gpu, ModelEstimate* e) {
  Roofline& rl = e->prefill;
  rl.peak = gpu.PeakFlops(pm.dtype);
  rl.bandwidth = gpu.bandwidth_bytes_per_s;
  rl.flops = pm.flops_per_request * static_cast<double>(pm.batch);
  rl.bytes = static_cast<double>(e->memory.weights + e->memory.activations);
  rl.compute_s = rl.peak > 0 ? rl.flops / rl.peak : 0;
  rl.memory_s = rl.bandwidth > 0 ? rl.bytes / rl.bandwidth : 0;
  rl.time_s = std::max(rl.compute_s, rl.memory_s);
  if (pm.latency_ms > 0) {
    e->prefill_s = pm.latency_ms / 1000;
    e->bound = LatencyBound::kMeasured;
  } else {
    e->prefill_s = rl.time_s;
    e->bound = rl.compute_s >= rl.memory_s ? LatencyBound::kCompute : LatencyBound::kMemory;
    if (pm.flops_per_request <= 0)
      e->warnings.push_back("no flops_per_request or latency_ms: its latency is the read of its weights only");
  }
  e->prefill_bound = e->bound;
  return Status::Ok();
}

}  // namespace

std::span<const EnumName<LatencyBound>> LatencyBoundNames() {
  static constexpr EnumName<LatencyBound> kNames[] = {{LatencyBound::kCompute, "compute"},
                                                      {LatencyBound::kMemory, "memory"},
                                                      {LatencyBound::kCommunication, "communication"},
                                                      {LatencyBound::kMeasured, "measured"}};
  return kNames;
}

Result<Footprint> ModelFootprint(const PlanModel& pm, const GpuSpec& gpu, double usable, double runtime) {
  if (pm.weights_only) {
    // Its tensors, activation_bytes per request of the batch, the runtime.
    Footprint f;
    MemoryReport& m = f.memory;
    m.params.total = static_cast<int64_t>(pm.weight_params);
    m.weights = pm.weight_bytes;
    m.activations = pm.activation_bytes * static_cast<uint64_t>(pm.batch);
    m.overhead = static_cast<uint64_t>(runtime);
    m.total = m.weights + m.activations + m.overhead;
    m.per_sequence = pm.activation_bytes;
    m.fixed = m.weights + m.overhead;
    m.kv_dtype = pm.dtype;
    f.footprint = m.total;
    f.max_sequences = pm.batch;
    const double room = usable - static_cast<double>(m.fixed);
    const int64_t cap = int64_t{1} << 31;
    f.max_batch_alone =
        room < 0 ? 0
        : pm.activation_bytes == 0
            ? cap
            : std::min<int64_t>(cap, static_cast<int64_t>(room / static_cast<double>(pm.activation_bytes)));
    m.max_batch = f.max_batch_alone;
    return f;
  }
  MemoryOptions o;
  o.mode = Mode::kInference;
  o.dtype = pm.dtype;
  o.kv_dtype = pm.kv_dtype;
  o.quant_scope = pm.quant_scope;
  o.gpus = pm.tp;
  o.batch = pm.batch;
  o.seq_len = pm.seq_len;
  o.overhead_bytes = static_cast<uint64_t>(runtime);
  o.capacity_bytes = usable;
  Footprint f;
  LMKIT_ASSIGN_OR_RETURN(f.memory, EstimateMemory(pm.spec, o));
  const MemoryReport& m = f.memory;
  const uint64_t without_kv = m.total - m.kv_cache;
  const uint64_t act_per_seq = m.activations / static_cast<uint64_t>(pm.batch);
  const double room = usable - static_cast<double>(m.weights + m.overhead);
  auto floor_div = [](double a, double b) { return a <= 0 || b <= 0 ? int64_t{0} : static_cast<int64_t>(a / b); };
  if (pm.gpu_memory_utilization > 0) {
    // vLLM: the instance takes this share of each GPU; the KV cache gets what weights, activations and the runtime
    // leave of it.
    const double share = std::floor(pm.gpu_memory_utilization * gpu.memory_bytes);
    f.footprint = static_cast<uint64_t>(share);
    f.kv_budget = share > static_cast<double>(without_kv) ? static_cast<uint64_t>(share) - without_kv : 0;
    f.budget_short = share < static_cast<double>(without_kv);
    f.kv_tokens = m.kv_bytes_per_token_gpu > 0 ? f.kv_budget / m.kv_bytes_per_token_gpu : 0;
    f.max_sequences = static_cast<int64_t>(f.kv_tokens / static_cast<uint64_t>(pm.seq_len));
    f.max_batch_alone = f.budget_short || static_cast<double>(f.footprint) > usable ? 0 : f.max_sequences;
  } else if (pm.kv_tokens > 0) {
    f.kv_budget = m.kv_bytes_per_token_gpu * static_cast<uint64_t>(pm.kv_tokens);
    f.footprint = without_kv + f.kv_budget;
    f.kv_tokens = static_cast<uint64_t>(pm.kv_tokens);
    f.max_sequences = pm.kv_tokens / pm.seq_len;
    f.max_batch_alone = floor_div(room - static_cast<double>(f.kv_budget), static_cast<double>(act_per_seq));
  } else {
    f.kv_budget = m.kv_cache;
    f.footprint = m.total;
    f.kv_tokens = static_cast<uint64_t>(pm.batch) * static_cast<uint64_t>(pm.seq_len);
    f.max_sequences = pm.batch;
    f.max_batch_alone = m.max_batch;
  }
  return f;
}

Result<PlanResult> EvaluatePlan(Plan plan, const std::string& gpu_override, int64_t gpus_override, bool what_if,
                                const std::string& gpu_spec) {
  PlanResult r;
  const std::string subject = plan.path;
  const std::string gpu_name = gpu_override.empty() && gpu_spec.empty() ? plan.gpu : gpu_override;
  if (gpu_name.empty() && gpu_spec.empty())
    return Status::InvalidArgument("no GPU: give " + Field("gpu") + " NAME or \"gpu\" in the plan");
  LMKIT_ASSIGN_OR_RETURN(auto gpu, ResolveGpu(gpu_name, gpu_spec));
  r.gpu = *gpu;
  r.gpus = gpus_override > 0 ? gpus_override : plan.gpus > 0 ? plan.gpus : 1;
  if (r.gpus > 4096) return Status::InvalidArgument(Field("gpus") + " must be at most 4096");
  const double capacity = r.gpu.memory_bytes;
  const double margin = capacity * plan.fragmentation;
  r.usable_bytes = std::floor(capacity - margin - plan.reserved_bytes);
  if (r.usable_bytes <= 0)
    return Status::InvalidInput(subject, "reserved_gib and fragmentation leave no usable memory on " + r.gpu.name);

  std::map<std::string, int> group_of;
  for (size_t i = 0; i < plan.models.size(); ++i) {
    const PlanModel& pm = plan.models[i];
    const std::string where = Where(pm);
    ModelEstimate e;
    e.entry = pm;
    if (r.gpu.PeakFlops(pm.dtype) <= 0)
      return Status::InvalidInput(subject, where + ": " + r.gpu.name + " has no " + DtypeName(pm.dtype) +
                                               " peak in the GPU table; choose another dtype or GPU");
    Result<ModelSpec> shard = pm.spec;
    if (!pm.weights_only) shard = ShardForTensorParallel(pm.spec, pm.tp, "tp");
    if (!shard.ok()) return Status::InvalidInput(subject, where + ": " + shard.status().ToString());
    auto fp = ModelFootprint(pm, r.gpu, r.usable_bytes, plan.runtime_bytes_per_model);
    if (!fp.ok()) return Status::InvalidInput(subject, where + ": " + fp.status().ToString());
    e.memory = fp->memory;
    e.runtime = e.memory.overhead;
    e.footprint = fp->footprint;
    e.kv_budget = fp->kv_budget;
    e.kv_budget_tokens = fp->kv_tokens;
    e.max_sequences = fp->max_sequences;
    e.max_batch_alone = fp->max_batch_alone;
    if (pm.weights_only) {
      LMKIT_RETURN_IF_ERROR(WeightsModelSpeed(pm, r.gpu, &e));
    } else {
      // Speed: roofline of the prefill (or the single forward pass) plus output_tokens decode steps at the mean
      // context, on one GPU's slice, plus the tensor-parallel all-reduces.
      const Precision prec{pm.dtype, pm.kv_dtype.value_or(AutoKvDtype(pm.dtype)), pm.quant_scope};
      FlopsOptions fo;
      fo.batch = pm.batch;
      fo.seq_len = pm.seq_len - pm.output_tokens;
      auto ops = BuildMatmuls(*shard, fo);
      if (!ops.ok()) return Status::InvalidInput(subject, where + ": " + ops.status().ToString());
      LMKIT_ASSIGN_OR_RETURN(e.prefill, ComputeRoofline(*ops, r.gpu, prec));
      const double link = r.gpu.interconnect_bytes_per_s, alpha = plan.host.allreduce_latency_s;
      e.prefill_comm =
          TensorParallelAllReduce(pm.spec, pm.tp, pm.batch * fo.seq_len, prec.ActivationBytes(), link, alpha);
      e.prefill_s = e.prefill.time_s + e.prefill_comm.seconds;
      auto bound_of = [](const Roofline& rl, const AllReduceCost& c) {
        if (c.seconds > rl.time_s) return LatencyBound::kCommunication;
        return rl.compute_s >= rl.memory_s ? LatencyBound::kCompute : LatencyBound::kMemory;
      };
      e.prefill_bound = bound_of(e.prefill, e.prefill_comm);
      e.bound = e.prefill_bound;
      if (pm.output_tokens > 0) {
        auto dec = BuildDecodeMatmuls(*shard, pm.batch, fo.seq_len + pm.output_tokens / 2);
        if (!dec.ok()) return Status::InvalidInput(subject, where + ": " + dec.status().ToString());
        LMKIT_ASSIGN_OR_RETURN(e.decode, ComputeRoofline(*dec, r.gpu, prec));
        e.decode_comm = TensorParallelAllReduce(pm.spec, pm.tp, pm.batch, prec.ActivationBytes(), link, alpha);
        e.decode_s = (e.decode.time_s + e.decode_comm.seconds) * static_cast<double>(pm.output_tokens);
        e.decode_bound = bound_of(e.decode, e.decode_comm);
        if (e.decode_s > e.prefill_s) e.bound = *e.decode_bound;
      }
    }
    e.latency_s = e.prefill_s + e.decode_s;
    // Every GPU of a tensor-parallel model copies its own slice at once; the disk reads all the slices.
    const double w = static_cast<double>(e.memory.weights);
    e.switch_s = w / plan.host.pcie_bytes_per_s();
    e.cold_load_s = w * static_cast<double>(pm.tp) / plan.host.disk_bytes_per_s + e.switch_s;
    e.utilisation = pm.requests_per_s * e.latency_s / static_cast<double>(pm.batch);
    if (pm.gpu_memory_utilization > 0 && !fp->budget_short && e.max_sequences < pm.batch)
      e.warnings.push_back("its KV budget holds " + std::to_string(e.max_sequences) + " sequences of " +
                           std::to_string(pm.seq_len) + " tokens, fewer than its batch " + std::to_string(pm.batch));

    // Why it cannot go on empty GPUs, if it cannot.
    const double fixed = static_cast<double>(e.memory.weights + e.memory.overhead);
    if (pm.tp > r.gpus) {
      e.unplaced = Unplaced::kTooFewGpus;
    } else if (fixed > r.usable_bytes) {
      e.unplaced = Unplaced::kWeightsExceedGpu;
    } else if (fp->budget_short) {
      e.unplaced = Unplaced::kBudgetShort;
    } else if (static_cast<double>(e.footprint) > r.usable_bytes) {
      e.unplaced = pm.gpu_memory_utilization > 0 ? Unplaced::kShareExceedsUsable : Unplaced::kBatchExceedsUsable;
    } else {
      e.fits_alone = true;
    }

    e.architecture = pm.weights_only ? pm.weights_signature + "; " + Grouped(pm.weight_params) + " parameters; " +
                                           HumanBytes(static_cast<double>(pm.weight_bytes))
                                     : DescribeModel(pm.spec) + "; " +
                                           Grouped(static_cast<uint64_t>(e.memory.params.total)) + " parameters; " +
                                           DtypeName(pm.dtype) + (pm.tp > 1 ? "; tp " + std::to_string(pm.tp) : "");
    auto [it, fresh] = group_of.emplace(e.architecture, static_cast<int>(r.groups.size()));
    if (fresh) r.groups.push_back(ArchGroup{e.architecture, {}, e.memory.weights});
    e.group = it->second;
    r.groups[static_cast<size_t>(e.group)].members.push_back(static_cast<int>(i));
    r.models.push_back(std::move(e));
  }

  // Only models that fit empty GPUs take part in the placement.
  std::vector<int> candidates;
  std::vector<PackItem> items;
  for (size_t i = 0; i < r.models.size(); ++i) {
    if (!r.models[i].fits_alone) continue;
    candidates.push_back(static_cast<int>(i));
    items.push_back({r.models[i].footprint, static_cast<int>(r.models[i].entry.tp)});
  }
  Packing pk = PackItems(items, static_cast<uint64_t>(r.usable_bytes), static_cast<int>(r.gpus));
  r.packing_method = pk.method;
  r.packing_optimal = pk.optimal;
  r.gpu_use.resize(static_cast<size_t>(r.gpus));
  for (size_t b = 0; b < r.gpu_use.size(); ++b) {
    GpuUse& g = r.gpu_use[b];
    g.capacity = capacity;
    g.reserved = plan.reserved_bytes;
    g.margin = margin;
    g.models_bytes = pk.used[b];
    g.free = std::max(0.0, capacity - margin - plan.reserved_bytes - static_cast<double>(pk.used[b]));
  }
  for (size_t c = 0; c < candidates.size(); ++c) r.models[static_cast<size_t>(candidates[c])].gpus = pk.bins_of[c];
  // Each GPU lists its models largest first, ties in plan order.
  std::vector<size_t> order(r.models.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return r.models[a].footprint > r.models[b].footprint; });
  for (const auto& g : r.gpu_use) r.most_free_bytes = std::max(r.most_free_bytes, g.free);
  for (size_t i : order) {
    ModelEstimate& m = r.models[i];
    for (int g : m.gpus) {
      GpuUse& u = r.gpu_use[static_cast<size_t>(g)];
      u.models.push_back(static_cast<int>(i));
      // Every GPU of a tensor-parallel model is busy for the whole of each request.
      u.utilisation += m.utilisation;
    }
  }
  for (size_t i = 0; i < r.models.size(); ++i) {
    ModelEstimate& m = r.models[i];
    if (!m.gpus.empty()) continue;
    r.unplaced.push_back(static_cast<int>(i));
    if (m.fits_alone) m.unplaced = Unplaced::kNoRoomBesideOthers;
  }
  r.plan = std::move(plan);
  if (what_if)
    for (int i : r.unplaced)
      if (!r.models[static_cast<size_t>(i)].entry.weights_only)
        r.models[static_cast<size_t>(i)].what_if = CheapestChanges(r, static_cast<size_t>(i));
  return r;
}

Result<PlanResult> RunPlan(const PlanRequest& req) {
  // The chart and the trace replace their destinations: not the plan file they are drawn from, the day replayed,
  // nor a model config the plan reads; the trace not the chart either.
  if (!req.trace_path.empty() && req.timeline_path.empty() && req.generate_events <= 0)
    return Status::InvalidArgument(Field("trace_path") + " needs " + Field("timeline_path") + " or " +
                                   Field("generate_events"));
  LMKIT_RETURN_IF_ERROR(
      CheckOutputIsNotAnInput({req.plan_path, req.timeline_path, req.svg_path}, req.trace_path, "trace_path"));
  LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput({req.plan_path, req.timeline_path}, req.svg_path, "svg"));
  LMKIT_ASSIGN_OR_RETURN(Plan plan, LoadPlan(req.plan_path));
  LMKIT_ASSIGN_OR_RETURN(PlanResult r, EvaluatePlan(std::move(plan), req.gpu, req.gpus, req.what_if, req.gpu_spec));
  std::vector<std::string> configs;
  for (const auto& m : r.plan.models)
    if (!m.config_file.empty()) configs.push_back(m.config_file);
  LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput(configs, req.svg_path, "svg"));
  LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput(configs, req.trace_path, "trace_path"));
  r.svg_path = req.svg_path;
  r.trace_path = req.trace_path;
  return r;
}

}  // namespace lmkit::accounting
