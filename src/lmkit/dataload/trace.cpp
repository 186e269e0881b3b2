#include "lmkit/dataload/trace.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace lmkit::dataload {
namespace {

constexpr std::string_view kNoLoaderNote =
    "no enumerate(DataLoader)#...__next__ events on the training thread: the loop does not iterate a torch DataLoader "
    "there, so data wait is 0 and any input work counts as rest";
constexpr std::string_view kNoGpuNote =
    "no GPU events (a CPU-only run, or ProfilerActivity.CUDA not recorded): no host-to-device or kernel figures; the "
    "verdict stands on the data wait";

struct Interval {
  double a, b;
};

// The union of `iv` (sorted by start on return).
std::vector<Interval> Union(std::vector<Interval> iv) {
  std::sort(iv.begin(), iv.end(), [](const Interval& x, const Interval& y) { return x.a < y.a; });
  std::vector<Interval> out;
  for (const auto& i : iv) {
    if (!out.empty() && i.a <= out.back().b) {
      out.back().b = std::max(out.back().b, i.b);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

// Length of the overlap of [a, b) with a sorted, disjoint interval list.
double Overlap(const std::vector<Interval>& u, double a, double b) {
  auto it = std::lower_bound(u.begin(), u.end(), a, [](const Interval& x, double t) { return x.b <= t; });
  double sum = 0;
  for (; it != u.end() && it->a < b; ++it) sum += std::max(0.0, std::min(b, it->b) - std::max(a, it->a));
  return sum;
}

// The step whose [start, start + time) holds t, or -1.
int64_t StepAt(const std::vector<TraceStep>& steps, double t) {
  auto it =
      std::upper_bound(steps.begin(), steps.end(), t, [](double x, const TraceStep& s) { return x < s.start_us; });
  if (it == steps.begin()) return -1;
  --it;
  if (t >= it->start_us + it->time_us) return -1;
  return it - steps.begin();
}

void Add(TraceStep* total, const TraceStep& s) {
  total->time_us += s.time_us;
  total->data_wait_us += s.data_wait_us;
  total->collate_us += s.collate_us;
  total->pin_us += s.pin_us;
  total->h2d_host_us += s.h2d_host_us;
  total->h2d_gpu_us += s.h2d_gpu_us;
  total->kernel_us += s.kernel_us;
  total->rest_us += s.rest_us;
}

void Decide(TraceResult* r, double single_wait_us, double multi_wait_us) {
  const TraceStep& t = r->total;
  if (r->level == InputBound::kNot) {
    r->fix = TraceFix::kNone;
    return;
  }
  if (t.h2d_host_us > t.data_wait_us) {
    r->fix = r->h2d_pageable_copies > 0 ? TraceFix::kPinMemory : TraceFix::kFewerCopyBytes;
    return;
  }
  const double rest = std::max(t.rest_us, 1e-9);
  if (single_wait_us >= multi_wait_us) {
    r->collate_share = t.data_wait_us > 0 ? t.collate_us / t.data_wait_us : 0;
    if (r->collate_share >= 0.5) {
      r->fix = TraceFix::kCollate;
      return;
    }
    r->fix = TraceFix::kWorkersFromZero;
    // K workers each make a batch in (data wait per step); the step consumes one per (rest per step).
    r->workers_needed = static_cast<unsigned>(std::clamp(std::ceil(t.data_wait_us / rest), 1.0, 64.0));
    return;
  }
  if (r->steps_waiting_share >= 0.5) {
    r->fix = TraceFix::kMoreWorkers;
    r->workers_factor = (rest + t.data_wait_us) / rest;
    return;
  }
  r->fix = TraceFix::kPrefetchFactor;
  for (const auto& s : r->steps) {
    if (s.data_wait_us > r->burst_wait_us) {
      r->burst_wait_us = s.data_wait_us;
      r->burst_step = s.number;
    }
  }
}

}  // namespace

const char* TraceFixKnob(TraceFix fix) {
  switch (fix) {
    case TraceFix::kNone:
      return "";
    case TraceFix::kPinMemory:
      return "pin_memory";
    case TraceFix::kFewerCopyBytes:
      return "batch bytes";
    case TraceFix::kCollate:
      return "collate_fn";
    case TraceFix::kWorkersFromZero:
    case TraceFix::kMoreWorkers:
      return "num_workers";
    case TraceFix::kPrefetchFactor:
      return "prefetch_factor";
  }
  return "";
}

Result<TraceResult> AnalyzeTrace(const TraceEvents& ev, const std::string& path) {
  TraceResult r;
  r.path = path;
  r.kineto = ev.kineto;
  r.events_read = ev.events_read;
  r.gpus = ev.gpus;
  r.dataloader_name = ev.dataloader_name;

  // The steps live on the thread that called prof.step(): the one with the most of them.
  std::vector<uint64_t> per_thread(ev.threads.size(), 0);
  for (const auto& e : ev.events)
    if (e.kind == TraceEventKind::kStep) ++per_thread[e.thread];
  if (per_thread.empty() || *std::max_element(per_thread.begin(), per_thread.end()) == 0) {
    return Status::InvalidInput(path,
                                "no ProfilerStep#N events: profile with a schedule (torch.profiler.schedule) "
                                "and call prof.step() once per training step");
  }
  const uint32_t main =
      static_cast<uint32_t>(std::max_element(per_thread.begin(), per_thread.end()) - per_thread.begin());
  for (const auto& e : ev.events) {
    if (e.kind != TraceEventKind::kStep || e.thread != main) continue;
    TraceStep s;
    s.number = e.step;
    s.start_us = e.ts_us;
    s.time_us = e.dur_us;
    r.steps.push_back(s);
  }
  std::sort(r.steps.begin(), r.steps.end(),
            [](const TraceStep& a, const TraceStep& b) { return a.start_us < b.start_us; });

  // Data wait, and for single-process loaders the collate and pin_memory ops inside it.
  std::vector<Interval> collate, pin;
  for (const auto& e : ev.events) {
    if (e.thread != main) continue;
    if (e.kind == TraceEventKind::kCollate) collate.push_back({e.ts_us, e.ts_us + e.dur_us});
    if (e.kind == TraceEventKind::kPin) pin.push_back({e.ts_us, e.ts_us + e.dur_us});
  }
  collate = Union(std::move(collate));
  pin = Union(std::move(pin));
  double single_wait = 0, multi_wait = 0;
  bool any_single = false, any_multi = false;
  for (const auto& e : ev.events) {
    if (e.kind != TraceEventKind::kDataLoaderNext || e.thread != main) continue;
    const int64_t i = StepAt(r.steps, e.ts_us);
    if (i < 0) continue;
    TraceStep& s = r.steps[static_cast<size_t>(i)];
    const double a = e.ts_us, b = std::min(e.ts_us + e.dur_us, s.start_us + s.time_us);
    s.data_wait_us += b - a;
    if (e.pageable) {
      any_single = true;
      single_wait += b - a;
      s.collate_us += Overlap(collate, a, b);
      s.pin_us += Overlap(pin, a, b);
    } else {
      any_multi = true;
      multi_wait += b - a;
    }
  }
  r.loader = any_single && any_multi ? LoaderKind::kMixed
             : any_single            ? LoaderKind::kSingleProcess
             : any_multi             ? LoaderKind::kMultiProcess
                                     : LoaderKind::kNone;

  // Host-to-device copies: the GPU side by time, the host side through the call's correlation id.
  std::unordered_map<int64_t, const TraceEvent*> htod;
  std::vector<Interval> htod_gpu, kernels;
  for (const auto& e : ev.events) {
    if (e.kind == TraceEventKind::kHtoD) {
      ++r.h2d_copies;
      r.h2d_pageable_copies += e.pageable ? 1 : 0;
      r.h2d_bytes += e.bytes;
      htod_gpu.push_back({e.ts_us, e.ts_us + e.dur_us});
      if (e.correlation >= 0) htod[e.correlation] = &e;
    } else if (e.kind == TraceEventKind::kKernel) {
      kernels.push_back({e.ts_us, e.ts_us + e.dur_us});
    }
  }
  r.has_gpu_events = !htod_gpu.empty() || !kernels.empty();
  for (const auto& e : ev.events) {
    if (e.kind != TraceEventKind::kCopyCall || e.thread != main || !htod.count(e.correlation)) continue;
    const int64_t i = StepAt(r.steps, e.ts_us);
    if (i < 0) continue;
    TraceStep& s = r.steps[static_cast<size_t>(i)];
    s.h2d_host_us += std::min(e.ts_us + e.dur_us, s.start_us + s.time_us) - e.ts_us;
  }
  htod_gpu = Union(std::move(htod_gpu));
  kernels = Union(std::move(kernels));

  uint64_t waiting = 0;
  for (auto& s : r.steps) {
    const double end = s.start_us + s.time_us;
    s.h2d_gpu_us = Overlap(htod_gpu, s.start_us, end);
    s.kernel_us = Overlap(kernels, s.start_us, end);
    s.rest_us = std::max(0.0, s.time_us - s.data_wait_us - s.h2d_host_us);
    s.input_share = s.time_us > 0 ? (s.data_wait_us + s.h2d_host_us) / s.time_us : 0;
    if (s.input_share >= kModeratelyInputBound) ++waiting;
    Add(&r.total, s);
  }
  r.total.number = static_cast<int64_t>(r.steps.size());
  const TraceStep& t = r.total;
  if (t.time_us > 0) {
    r.data_share = t.data_wait_us / t.time_us;
    r.h2d_share = t.h2d_host_us / t.time_us;
    r.input_share = r.data_share + r.h2d_share;
    r.total.input_share = r.input_share;
  }
  r.steps_waiting_share = static_cast<double>(waiting) / static_cast<double>(r.steps.size());
  r.level = ClassifyWaitShare(r.input_share);
  Decide(&r, single_wait, multi_wait);

  // (string_views: GCC 12 at -O3 misreads a long literal pushed into a vector<string> as an out-of-bounds copy.)
  if (r.loader == LoaderKind::kNone) r.notes.emplace_back(kNoLoaderNote);
  if (!r.has_gpu_events) r.notes.emplace_back(kNoGpuNote);
  return r;
}

Result<TraceResult> RunTrace(const std::string& path) {
  LMKIT_ASSIGN_OR_RETURN(TraceEvents ev, ReadTrace(path));
  return AnalyzeTrace(ev, path);
}

}  // namespace lmkit::dataload
