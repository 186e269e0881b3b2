// A day of loads, unloads, switches and bursts replayed on the allocator simulation, once per policy.
#include "lmkit/accounting/plan_timeline.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>

#include "lmkit/common/file_reader.h"
#include "lmkit/common/units.h"

namespace lmkit::accounting {
namespace {

constexpr double kTimelineGib = 1073741824.0;

constexpr EnumName<TimelineOp> kOpNames[] = {{TimelineOp::kLoad, "load"},
                                             {TimelineOp::kUnload, "unload"},
                                             {TimelineOp::kSwitch, "switch"},
                                             {TimelineOp::kRequest, "request"},
                                             {TimelineOp::kEmptyCache, "empty_cache"}};

// SplitMix64 (Steele, Lea, Flood 2014): the same stream on every platform, unlike <random>'s distributions.
struct SplitMix {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  size_t Below(size_t n) { return static_cast<size_t>(Unit() * static_cast<double>(n)); }
};

int FindModel(const PlanResult& plan, const std::string& name) {
  for (size_t i = 0; i < plan.models.size(); ++i)
    if (plan.models[i].entry.name == name) return static_cast<int>(i);
  return -1;
}

// Splits `total` bytes over pieces in proportion to `weights`, the rounding going to the first piece.
void Spread(uint64_t total, const std::vector<double>& weights, std::vector<uint64_t>* out) {
  double sum = 0;
  for (double w : weights) sum += w;
  if (total == 0 || sum <= 0) return;
  const size_t first = out->size();
  uint64_t given = 0;
  for (double w : weights) {
    const uint64_t b = static_cast<uint64_t>(std::floor(static_cast<double>(total) * w / sum));
    out->push_back(b);
    given += b;
  }
  (*out)[first] += total - given;
}

bool PreallocatedKv(const ModelEstimate& m) { return m.entry.kv_tokens > 0 || m.entry.gpu_memory_utilization > 0; }

// A KV budget vLLM allocates with the model: one K and one V tensor per layer.
std::vector<uint64_t> KvPoolTensors(const ModelEstimate& m) {
  std::vector<uint64_t> out;
  if (!m.entry.weights_only && PreallocatedKv(m) && m.kv_budget > 0)
    Spread(m.kv_budget, std::vector<double>(static_cast<size_t>(2 * std::max<int64_t>(1, m.entry.spec.layers)), 1.0),
           &out);
  return out;
}

}  // namespace

std::span<const EnumName<TimelineOp>> TimelineOpNames() { return kOpNames; }

std::vector<uint64_t> LoadTensors(const ModelEstimate& m) {
  const PlanModel& pm = m.entry;
  std::vector<uint64_t> out;
  if (pm.weights_only) {
    for (uint64_t b : pm.tensor_bytes)
      if (b > 0) out.push_back(b);
    return out;
  }
  // The decoder's tensors from its parameter counts, scaled to its weight bytes on this GPU: embedding, LM head, per
  // layer q/k/v/o, the MLP's matrices (an MoE layer's experts stacked as gate_up and down, as transformers 5 and vLLM
  // store them), the router and the norms; the final norm.
  const ParameterCounts& p = m.memory.params;
  const ModelSpec& s = pm.spec;
  const double total = static_cast<double>(std::max<int64_t>(1, p.total));
  const double per_param = static_cast<double>(m.memory.weights) / total;
  std::vector<double> parts;  // parameters per tensor
  parts.push_back(static_cast<double>(p.embedding));
  if (p.lm_head > 0) parts.push_back(static_cast<double>(p.lm_head));
  const double layers = static_cast<double>(std::max<int64_t>(1, s.layers));
  const double q = static_cast<double>(std::max<int64_t>(1, s.q_dim())), kv = static_cast<double>(s.kv_dim());
  const double attn = static_cast<double>(p.attention) / layers, ffn = static_cast<double>(p.ffn) / layers;
  const double router = static_cast<double>(p.router) / layers;
  const double norms = static_cast<double>(p.norms) / (layers * s.norms_per_layer + 1);
  for (int64_t l = 0; l < s.layers; ++l) {
    if (s.mla) {
      for (int k = 0; k < 4; ++k) parts.push_back(attn / 4);
    } else {
      for (double w : {q, kv, kv, q}) parts.push_back(attn * w / (2 * q + 2 * kv));
    }
    if (s.is_moe()) {
      parts.push_back(ffn * 2 / 3);
      parts.push_back(ffn / 3);
    } else {
      const int mats = s.ffn == FfnKind::kSwiGlu ? 3 : 2;
      for (int k = 0; k < mats; ++k) parts.push_back(ffn / mats);
    }
    if (router > 0) parts.push_back(router);
    for (int k = 0; k < s.norms_per_layer; ++k) parts.push_back(norms);
  }
  parts.push_back(norms);
  std::vector<double> bytes;
  for (double x : parts)
    if (x > 0) bytes.push_back(x * per_param);
  Spread(m.memory.weights, bytes, &out);
  for (uint64_t b : KvPoolTensors(m)) out.push_back(b);
  return out;
}

std::vector<uint64_t> BurstTensors(const ModelEstimate& m, int64_t batch) {
  const PlanModel& pm = m.entry;
  std::vector<uint64_t> out;
  const double share = static_cast<double>(batch) / static_cast<double>(pm.batch);
  if (!pm.weights_only && !PreallocatedKv(m) && m.memory.kv_cache > 0) {
    const uint64_t kv = static_cast<uint64_t>(std::llround(static_cast<double>(m.memory.kv_cache) * share));
    Spread(kv, std::vector<double>(static_cast<size_t>(2 * std::max<int64_t>(1, pm.spec.layers)), 1.0), &out);
  }
  const uint64_t act = static_cast<uint64_t>(std::llround(static_cast<double>(m.memory.activations) * share));
  Spread(act, {1.0, 1.0}, &out);
  return out;
}

Result<Timeline> ParseTimeline(const Json& doc, const std::string& subject, const PlanResult& plan) {
  auto err = [&](const std::string& m) { return Status::InvalidInput(subject, m); };
  if (!doc.is_object()) return err("a timeline is a JSON object with an \"events\" array");
  for (const auto& [k, v] : doc.items())
    if (k != "about" && k != "capacity_gib" && k != "max_split_size_mb" && k != "pinned_pool_gib" && k != "events")
      return err("unknown key '" + k + "' (known: about, capacity_gib, max_split_size_mb, pinned_pool_gib, events)");
  Timeline tl;
  tl.source = subject;
  tl.capacity_bytes = plan.gpu.memory_bytes - plan.plan.reserved_bytes;
  auto num = [&](const Json& o, const char* key, double lo, double hi, const std::string& where, double* out) {
    if (!o.contains(key) || o.at(key).is_null()) return Status::Ok();
    const Json& v = o.at(key);
    if (!v.is_number() || !(v.get<double>() >= lo) || !(v.get<double>() <= hi))
      return err(where + key + " must be a number from " + Fixed(lo, 0) + " to " + Fixed(hi, 0) + " (got " +
                 DumpJson(v, -1) + ")");
    *out = v.get<double>();
    return Status::Ok();
  };
  double cap = 0, split = 0, pool = 0;
  LMKIT_RETURN_IF_ERROR(num(doc, "capacity_gib", 0, 1e6, "", &cap));
  LMKIT_RETURN_IF_ERROR(num(doc, "max_split_size_mb", 0, 1e9, "", &split));
  LMKIT_RETURN_IF_ERROR(num(doc, "pinned_pool_gib", 0, 1e6, "", &pool));
  if (cap > 0) tl.capacity_bytes = std::floor(cap * kTimelineGib);
  if (tl.capacity_bytes <= 0) return err("the GPU leaves no capacity after reserved_gib");
  if (split > 0) tl.max_split_size = static_cast<uint64_t>(split) * kMiB;
  tl.pinned_pool_bytes = pool * kTimelineGib;
  if (!doc.contains("events") || !doc.at("events").is_array()) return err("needs an \"events\" array");
  const Json& evs = doc.at("events");
  double last_t = 0;
  for (size_t i = 0; i < evs.size(); ++i) {
    const Json& e = evs[i];
    const std::string where = "events[" + std::to_string(i) + "]: ";
    if (!e.is_object()) return err(where + "must be an object");
    for (const auto& [k, v] : e.items())
      if (k != "t" && k != "op" && k != "model" && k != "from" && k != "to" && k != "batch" && k != "duration_s")
        return err(where + "unknown key '" + k + "' (known: t, op, model, from, to, batch, duration_s)");
    TimelineEvent ev;
    if (!e.contains("t") || !e.at("t").is_number()) return err(where + "needs a time \"t\" in seconds");
    LMKIT_RETURN_IF_ERROR(num(e, "t", 0, 1e9, where, &ev.t_s));
    if (ev.t_s < last_t)
      return err(where + "t " + Fixed(ev.t_s, 3) + " is before the previous event's " + Fixed(last_t, 3));
    last_t = ev.t_s;
    if (!e.contains("op") || !e.at("op").is_string())
      return err(where + "needs an \"op\" (" + EnumChoices(TimelineOpNames()) + ")");
    auto op = FindEnum(TimelineOpNames(), e.at("op").get<std::string>());
    if (!op)
      return err(where + "op must be " + EnumChoices(TimelineOpNames()) + " (got '" + e.at("op").get<std::string>() +
                 "')");
    ev.op = *op;
    auto model = [&](const char* key, int* out) -> Status {
      if (!e.contains(key) || !e.at(key).is_string())
        return err(where + std::string(key) + " must name a model of the plan");
      *out = FindModel(plan, e.at(key).get<std::string>());
      if (*out < 0) return err(where + "no model '" + e.at(key).get<std::string>() + "' in the plan");
      return Status::Ok();
    };
    if (ev.op == TimelineOp::kSwitch) {
      LMKIT_RETURN_IF_ERROR(model("from", &ev.from));
      LMKIT_RETURN_IF_ERROR(model("to", &ev.model));
      if (ev.from == ev.model) return err(where + "switch from a model to itself");
    } else if (ev.op != TimelineOp::kEmptyCache) {
      LMKIT_RETURN_IF_ERROR(model("model", &ev.model));
    }
    if (ev.op == TimelineOp::kRequest) {
      const ModelEstimate& m = plan.models[static_cast<size_t>(ev.model)];
      double b = static_cast<double>(m.entry.batch), d = m.latency_s;
      LMKIT_RETURN_IF_ERROR(num(e, "batch", 1, 1 << 24, where, &b));
      LMKIT_RETURN_IF_ERROR(num(e, "duration_s", 0, 1e6, where, &d));
      if (b != std::floor(b)) return err(where + "batch must be a whole number");
      ev.batch = static_cast<int64_t>(b);
      ev.duration_s = d;
    } else if (e.contains("batch") || e.contains("duration_s")) {
      return err(where + "batch and duration_s are for a request");
    }
    tl.events.push_back(ev);
  }
  if (tl.events.empty()) return err("the events array is empty");
  return tl;
}

Result<Timeline> LoadTimeline(const std::string& path, const PlanResult& plan) {
  LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  LMKIT_ASSIGN_OR_RETURN(Json doc, ParseJson(text, path));
  return ParseTimeline(doc, path, plan);
}

Timeline GenerateTimeline(const PlanResult& plan, int64_t events, uint64_t seed) {
  Timeline tl;
  tl.source = "generated: " + std::to_string(events) + " events, seed " + std::to_string(seed);
  tl.capacity_bytes = plan.gpu.memory_bytes - plan.plan.reserved_bytes;
  SplitMix rng{seed};
  const size_t n = plan.models.size();
  std::vector<bool> resident(n, false);
  double held = 0, t = 0;
  const double step = 86400.0 / static_cast<double>(std::max<int64_t>(1, events));
  auto weights = [&](size_t i) { return static_cast<double>(plan.models[i].memory.weights); };
  auto pick = [&](bool want_resident) -> int {
    std::vector<int> c;
    for (size_t i = 0; i < n; ++i)
      if (resident[i] == want_resident) c.push_back(static_cast<int>(i));
    return c.empty() ? -1 : c[rng.Below(c.size())];
  };
  for (int64_t k = 0; k < events; ++k) {
    t += step * (0.5 + rng.Unit());
    TimelineEvent ev;
    ev.t_s = std::round(t * 1000) / 1000;
    const double r = rng.Unit();
    const int on = pick(true), off = pick(false);
    auto fits = [&](int add, int drop) {
      return held + weights(static_cast<size_t>(add)) - (drop >= 0 ? weights(static_cast<size_t>(drop)) : 0) <=
             0.85 * tl.capacity_bytes;
    };
    if (on < 0) {
      if (off < 0) break;  // no models at all
      ev.op = TimelineOp::kLoad;
      ev.model = off;
    } else if (r < 0.55) {
      const ModelEstimate& m = plan.models[static_cast<size_t>(on)];
      ev.op = TimelineOp::kRequest;
      ev.model = on;
      ev.batch = 1 + static_cast<int64_t>(rng.Below(static_cast<size_t>(m.entry.batch)));
      ev.duration_s = std::round(std::max(0.05, m.latency_s) * (1 + 4 * rng.Unit()) * 1000) / 1000;
    } else if (r < 0.70 && off >= 0) {
      // Half of the switches stay within the architecture when another member is down.
      int to = off;
      if (rng.Unit() < 0.5) {
        std::vector<int> same;
        for (size_t i = 0; i < n; ++i)
          if (!resident[i] && plan.models[i].group == plan.models[static_cast<size_t>(on)].group)
            same.push_back(static_cast<int>(i));
        if (!same.empty()) to = same[rng.Below(same.size())];
      }
      ev.op = fits(to, on) ? TimelineOp::kSwitch : TimelineOp::kUnload;
      ev.from = ev.op == TimelineOp::kSwitch ? on : -1;
      ev.model = ev.op == TimelineOp::kSwitch ? to : on;
    } else if (r < 0.82 && off >= 0) {
      ev.op = fits(off, -1) ? TimelineOp::kLoad : TimelineOp::kUnload;
      ev.model = ev.op == TimelineOp::kLoad ? off : on;
    } else if (r < 0.97) {
      ev.op = TimelineOp::kUnload;
      ev.model = on;
    } else {
      ev.op = TimelineOp::kEmptyCache;
    }
    switch (ev.op) {
      case TimelineOp::kLoad:
        resident[static_cast<size_t>(ev.model)] = true, held += weights(static_cast<size_t>(ev.model));
        break;
      case TimelineOp::kUnload:
        resident[static_cast<size_t>(ev.model)] = false, held -= weights(static_cast<size_t>(ev.model));
        break;
      case TimelineOp::kSwitch:
        resident[static_cast<size_t>(ev.from)] = false, held -= weights(static_cast<size_t>(ev.from));
        resident[static_cast<size_t>(ev.model)] = true, held += weights(static_cast<size_t>(ev.model));
        break;
      default:
        break;
    }
    tl.events.push_back(ev);
  }
  return tl;
}

namespace {

struct PolicyName {
  const char* name;
  const char* description;
};
constexpr PolicyName kPolicyNames[] = {
    {"default", "PyTorch's caching allocator as configured (every tensor allocated and freed)"},
    {"expandable_segments", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"},
    {"arch_buffer",
     "one weight buffer per architecture, kept across unloads (given back when the device is full); same-architecture "
     "models swap into it"},
    {"pinned_pool", "the default allocator, with the hot set's weights kept in pinned host memory"},
};

// One policy's replay.
class PolicyReplay {
 public:
  PolicyReplay(const PlanResult& plan, const Timeline& tl, Policy policy, bool trace)
      : plan_(plan), tl_(tl), policy_(policy), trace_(trace), alloc_(Config(tl, policy)) {
    const size_t n = plan.models.size();
    resident_.assign(n, false);
    loaded_before_.assign(n, false);
    weights_.resize(n);
    buffer_of_.assign(n, -1);
  }

  PolicyRun Run() {
    PolicyRun run;
    run.policy = policy_;
    run.name = kPolicyNames[static_cast<int>(policy_)].name;
    run.description = kPolicyNames[static_cast<int>(policy_)].description;
    for (size_t i = 0; i < tl_.events.size(); ++i) {
      const TimelineEvent& ev = tl_.events[i];
      event_ = static_cast<int>(i);
      EndBursts(ev.t_s);
      EventState st;
      switch (ev.op) {
        case TimelineOp::kLoad:
          Load(ev.model, &st);
          break;
        case TimelineOp::kUnload:
          st.skipped = !Unload(ev.model);
          break;
        case TimelineOp::kSwitch:
          Unload(ev.from);
          Load(ev.model, &st);
          break;
        case TimelineOp::kRequest:
          Burst(ev, &st);
          break;
        case TimelineOp::kEmptyCache:
          alloc_.EmptyCache();
          Trace('e', 0, 0, true);
          break;
      }
      st.allocated = alloc_.allocated();
      st.reserved = alloc_.reserved();
      st.largest_free = alloc_.LargestObtainable();
      st.free = alloc_.capacity() - std::min(alloc_.capacity(), st.allocated);
      st.fragmentation =
          st.free > 0 ? 1.0 - static_cast<double>(std::min(st.largest_free, st.free)) / static_cast<double>(st.free)
                      : 0;
      st.idle_buffer_bytes = idle_bytes_;
      run.failures += st.failed;
      run.peak_reserved = std::max(run.peak_reserved, st.reserved);
      run.peak_allocated = std::max(run.peak_allocated, st.allocated);
      run.peak_idle_buffers = std::max(run.peak_idle_buffers, idle_bytes_);
      run.load_s += st.latency_s;
      run.events.push_back(std::move(st));
    }
    run.num_device_alloc = alloc_.num_device_alloc();
    run.num_alloc_retries = alloc_.num_alloc_retries();
    run.trace = std::move(ops_);
    return run;
  }

 private:
  static AllocatorConfig Config(const Timeline& tl, Policy p) {
    AllocatorConfig c;
    c.capacity = static_cast<uint64_t>(tl.capacity_bytes);
    c.max_split_size = tl.max_split_size;
    c.expandable_segments = p == Policy::kExpandable;
    return c;
  }

  void Trace(char op, uint64_t id, uint64_t bytes, bool ok) {
    if (trace_) ops_.push_back({event_, op, id, bytes, ok});
  }
  // arch_buffer gives idle buffers back when the device is full, then tries once more.
  uint64_t Malloc(uint64_t bytes) {
    uint64_t h = alloc_.Malloc(bytes);
    Trace('a', h, bytes, h != 0);
    if (h == 0 && policy_ == Policy::kArchBuffer && FreeIdleBuffers()) {
      h = alloc_.Malloc(bytes);
      Trace('a', h, bytes, h != 0);
    }
    return h;
  }
  bool FreeIdleBuffers() {
    bool any = false;
    for (Buffer& b : buffers_)
      if (!b.busy && b.handle != 0) {
        Free(b.handle);
        idle_bytes_ -= b.bytes;
        b.handle = 0;
        any = true;
      }
    return any;
  }
  void Free(uint64_t h) {
    alloc_.Free(h);
    Trace('f', h, 0, true);
  }
  // Allocates every tensor or none.
  bool MallocAll(const std::vector<uint64_t>& sizes, std::vector<uint64_t>* handles, uint64_t* asked) {
    for (uint64_t b : sizes) {
      *asked += b;
      const uint64_t h = Malloc(b);
      if (h == 0) {
        for (auto it = handles->rbegin(); it != handles->rend(); ++it) Free(*it);
        handles->clear();
        return false;
      }
      handles->push_back(h);
    }
    return true;
  }

  void Load(int m, EventState* st) {
    const size_t i = static_cast<size_t>(m);
    if (resident_[i]) {
      st->skipped = true;
      return;
    }
    const ModelEstimate& e = plan_.models[i];
    bool ok = false;
    if (policy_ == Policy::kArchBuffer) {
      ok = TakeBuffer(m, st);
    } else {
      ok = MallocAll(LoadTensors(e), &weights_[i], &st->request_bytes);
    }
    if (!ok) {
      st->failed = true;
      return;
    }
    resident_[i] = true;
    // Where the weights come from: the page cache after a first read, else the disk (the pinned pool's hot set is
    // set afterwards, on the default's replay).
    const double w = static_cast<double>(e.memory.weights);
    const HostFacts& h = plan_.plan.host;
    if (loaded_before_[i]) {
      st->source = "page cache";
      st->latency_s = w / h.pcie_pageable_bytes_per_s;
    } else {
      st->source = "disk";
      st->latency_s = w / h.disk_bytes_per_s + w / h.pcie_pageable_bytes_per_s;
    }
    loaded_before_[i] = true;
  }

  // The architecture's idle buffer, else a new one; when the device is full, idle buffers of other architectures are
  // given back first. A preallocated KV budget is allocated beside it.
  bool TakeBuffer(int m, EventState* st) {
    const size_t i = static_cast<size_t>(m);
    const ModelEstimate& e = plan_.models[i];
    const int g = e.group;
    const uint64_t wbytes = e.memory.weights;
    const std::vector<uint64_t> extra = KvPoolTensors(e);  // a vLLM KV pool stays per model
    int buf = -1;
    for (size_t b = 0; b < buffers_.size(); ++b)
      if (buffers_[b].group == g && !buffers_[b].busy && buffers_[b].handle != 0) buf = static_cast<int>(b);
    if (buf < 0) {
      st->request_bytes += wbytes;
      const uint64_t h = Malloc(wbytes);
      if (h == 0) return false;
      buffers_.push_back({g, h, wbytes, false});
      buf = static_cast<int>(buffers_.size() - 1);
    } else {
      idle_bytes_ -= buffers_[static_cast<size_t>(buf)].bytes;
    }
    std::vector<uint64_t> handles;
    if (!MallocAll(extra, &handles, &st->request_bytes)) {
      Buffer& b = buffers_[static_cast<size_t>(buf)];
      b.busy = false;
      idle_bytes_ += b.bytes;
      return false;
    }
    buffers_[static_cast<size_t>(buf)].busy = true;
    buffer_of_[i] = buf;
    weights_[i] = std::move(handles);
    return true;
  }

  bool Unload(int m) {
    const size_t i = static_cast<size_t>(m);
    if (!resident_[i]) return false;
    for (auto it = weights_[i].rbegin(); it != weights_[i].rend(); ++it) Free(*it);
    weights_[i].clear();
    if (buffer_of_[i] >= 0) {
      Buffer& b = buffers_[static_cast<size_t>(buffer_of_[i])];
      b.busy = false;
      idle_bytes_ += b.bytes;
      buffer_of_[i] = -1;
    }
    resident_[i] = false;
    return true;
  }

  void Burst(const TimelineEvent& ev, EventState* st) {
    if (!resident_[static_cast<size_t>(ev.model)]) {
      st->skipped = true;
      return;
    }
    std::vector<uint64_t> handles;
    if (!MallocAll(BurstTensors(plan_.models[static_cast<size_t>(ev.model)], ev.batch), &handles, &st->request_bytes)) {
      st->failed = true;
      return;
    }
    bursts_.push({ev.t_s + ev.duration_s, seq_++, std::move(handles)});
  }

  void EndBursts(double t) {
    while (!bursts_.empty() && bursts_.top().end <= t) {
      const auto& b = bursts_.top();
      for (auto it = b.handles.rbegin(); it != b.handles.rend(); ++it) Free(*it);
      bursts_.pop();
    }
  }

  struct Buffer {
    int group;
    uint64_t handle, bytes;
    bool busy;
  };
  struct Running {
    double end;
    uint64_t seq;  // ties end in start order
    std::vector<uint64_t> handles;
    bool operator>(const Running& o) const { return end != o.end ? end > o.end : seq > o.seq; }
  };

  const PlanResult& plan_;
  const Timeline& tl_;
  Policy policy_;
  bool trace_;
  CudaAllocatorSim alloc_;
  std::vector<bool> resident_, loaded_before_;
  std::vector<std::vector<uint64_t>> weights_;
  std::vector<int> buffer_of_;
  std::vector<Buffer> buffers_;
  uint64_t idle_bytes_ = 0;
  std::priority_queue<Running, std::vector<Running>, std::greater<>> bursts_;
  uint64_t seq_ = 0;
  int event_ = 0;
  std::vector<AllocOp> ops_;
};

}  // namespace

TimelineResult SimulateTimeline(const PlanResult& plan, const Timeline& tl, bool trace) {
  TimelineResult r;
  r.timeline = tl;
  // The hot set: models brought up twice or more, most often first, while they fit the pool (when one is given).
  const size_t n = plan.models.size();
  std::vector<int> loads(n, 0);
  for (const auto& ev : tl.events)
    if (ev.op == TimelineOp::kLoad || ev.op == TimelineOp::kSwitch) ++loads[static_cast<size_t>(ev.model)];
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return loads[a] > loads[b]; });
  std::vector<bool> hot(n, false);
  double pinned = 0;
  for (size_t i : order) {
    if (loads[i] < 2) break;
    const double w = static_cast<double>(plan.models[i].memory.weights);
    if (tl.pinned_pool_bytes > 0 && pinned + w > tl.pinned_pool_bytes) continue;
    hot[i] = true;
    pinned += w;
    r.hot_set.push_back(plan.models[i].entry.name);
  }
  for (Policy p : {Policy::kDefault, Policy::kExpandable, Policy::kArchBuffer, Policy::kPinnedPool}) {
    if (p == Policy::kPinnedPool) {
      // The GPU side is the default allocator's: only where the hot set's weights come from changes.
      PolicyRun run = r.runs[0];
      run.policy = p;
      run.name = kPolicyNames[static_cast<int>(p)].name;
      run.description = kPolicyNames[static_cast<int>(p)].description;
      run.trace.clear();
      run.pinned_host_bytes = pinned;
      run.load_s = 0;
      for (size_t i = 0; i < run.events.size(); ++i) {
        EventState& st = run.events[i];
        const size_t m = static_cast<size_t>(tl.events[i].model);
        if (!st.source.empty() && hot[m]) {
          st.source = "pinned pool";
          st.latency_s = static_cast<double>(plan.models[m].memory.weights) / plan.plan.host.pcie_pinned_bytes_per_s;
        }
        run.load_s += st.latency_s;
      }
      r.runs.push_back(std::move(run));
      continue;
    }
    r.runs.push_back(PolicyReplay(plan, tl, p, trace).Run());
  }
  const PolicyRun& def = r.runs[0];
  for (size_t i = 0; i < def.events.size(); ++i) {
    if (!def.events[i].failed) continue;
    TimelineFailure f;
    f.event = i;
    for (size_t k = 1; k < r.runs.size(); ++k)
      if (!r.runs[k].events[i].failed && !r.runs[k].events[i].skipped) f.avoided_by.push_back(r.runs[k].name);
    r.default_failures.push_back(std::move(f));
  }
  return r;
}

Result<PlanResult> RunPlanWithTimeline(const PlanRequest& req) {
  LMKIT_ASSIGN_OR_RETURN(PlanResult r, RunPlan(req));
  if (req.timeline_path.empty() && req.generate_events <= 0) return r;
  if (!req.timeline_path.empty() && req.generate_events > 0)
    return Status::InvalidArgument("give " + Field("timeline_path") + " or " + Field("generate_events") + ", not both");
  Timeline tl;
  if (!req.timeline_path.empty()) {
    LMKIT_ASSIGN_OR_RETURN(tl, LoadTimeline(req.timeline_path, r));
  } else {
    tl = GenerateTimeline(r, req.generate_events, req.seed);
  }
  r.timeline = std::make_shared<const TimelineResult>(SimulateTimeline(r, tl, !req.trace_path.empty()));
  return r;
}

}  // namespace lmkit::accounting
