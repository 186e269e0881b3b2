// The report of `lmkit dataload trace`: per-step table, verdict, why and knob (text), and the JSON document
// (schema lmkit.dataload.trace/1, docs/dataload.md).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "lmkit/common/units.h"
#include "lmkit/present/dataload.h"
#include "lmkit/present/json_fields.h"

namespace lmkit::present {
namespace {

using dataload::LoaderKind;
using dataload::TraceFix;
using dataload::TraceResult;
using dataload::TraceStep;

std::string Ms(double us) { return Time(us * 1e-6); }

const char* LoaderName(LoaderKind k) {
  switch (k) {
    case LoaderKind::kNone:
      return "none";
    case LoaderKind::kSingleProcess:
      return "single-process";
    case LoaderKind::kMultiProcess:
      return "multi-process";
    case LoaderKind::kMixed:
      return "mixed";
  }
  return "none";
}

std::string LoaderLine(const TraceResult& r) {
  switch (r.loader) {
    case LoaderKind::kNone:
      return "no DataLoader on the training thread";
    case LoaderKind::kSingleProcess:
      return "single-process DataLoader (num_workers=0: batches are built in the training process)";
    case LoaderKind::kMultiProcess:
      return "multi-process DataLoader (num_workers > 0: batches are built in worker processes)";
    case LoaderKind::kMixed:
      return "two DataLoaders, one single-process and one with workers";
  }
  return "";
}

double PerStep(double total_us, const TraceResult& r) {
  return r.steps.empty() ? 0 : total_us / static_cast<double>(r.steps.size());
}

std::string StepsRange(const TraceResult& r) {
  const std::string first = std::to_string(r.steps.front().number), last = std::to_string(r.steps.back().number);
  if (r.steps.size() == 1) return "1 step (ProfilerStep#" + first + ")";
  return Grouped(r.steps.size()) + " steps (ProfilerStep#" + first + " to #" + last + ")";
}

uint64_t WaitingSteps(const TraceResult& r) {
  return static_cast<uint64_t>(std::llround(r.steps_waiting_share * static_cast<double>(r.steps.size())));
}

std::string Row(const std::string& label, const TraceStep& s, bool gpu) {
  char b[200];
  std::snprintf(b, sizeof b, "  %-10s %10s %11s %11s %11s %12s %11s %7s\n", label.c_str(), Ms(s.time_us).c_str(),
                Ms(s.data_wait_us).c_str(), gpu ? Ms(s.h2d_host_us).c_str() : "-", gpu ? Ms(s.h2d_gpu_us).c_str() : "-",
                gpu ? Ms(s.kernel_us).c_str() : "-", Ms(s.rest_us).c_str(), Percent(s.input_share, 1).c_str());
  return b;
}

}  // namespace

std::string TraceReason(const TraceResult& r) {
  const double data = PerStep(r.total.data_wait_us, r), rest = PerStep(r.total.rest_us, r);
  const std::string n = std::to_string(r.steps.size());
  switch (r.fix) {
    case TraceFix::kNone:
      return "the step waits " + Percent(r.input_share, 1) + " of its time for input, under the 5% threshold";
    case TraceFix::kPinMemory:
      return "host-to-device copies block the training thread " + Percent(r.h2d_share, 1) + " of step time; " +
             Grouped(r.h2d_pageable_copies) + " of the " + Grouped(r.h2d_copies) +
             " copies come from pageable memory, which the driver stages synchronously";
    case TraceFix::kFewerCopyBytes:
      return "host-to-device copies block the training thread " + Percent(r.h2d_share, 1) +
             " of step time, from pinned "
             "memory already (" +
             FormatBytes(static_cast<double>(r.h2d_bytes)) + " copied)";
    case TraceFix::kCollate:
      return "the DataLoader builds batches in the training process (num_workers=0) and collating them "
             "(aten::stack/cat) takes " +
             Percent(r.collate_share, 1) + " of its " + ShortTime(data * 1e-6) + " per step";
    case TraceFix::kWorkersFromZero:
      return "__getitem__ runs in the training process (num_workers=0): the DataLoader takes " +
             ShortTime(data * 1e-6) + " per step (collate " + Percent(r.collate_share, 1) +
             " of it), the rest of the step " + ShortTime(rest * 1e-6);
    case TraceFix::kMoreWorkers:
      return "the DataLoader's workers fall behind: " + Grouped(WaitingSteps(r)) + " of " + n +
             " steps wait for a batch, " + ShortTime(data * 1e-6) +
             " per step on average, while the rest of the step "
             "takes " +
             ShortTime(rest * 1e-6);
    case TraceFix::kPrefetchFactor:
      return "a few steps wait: " + Grouped(WaitingSteps(r)) + " of " + n + "; step #" + std::to_string(r.burst_step) +
             " waited " + ShortTime(r.burst_wait_us * 1e-6) + " for a batch while the rest of a step takes " +
             ShortTime(rest * 1e-6);
  }
  return "";
}

std::string TraceKnob(const TraceResult& r) {
  const double data = PerStep(r.total.data_wait_us, r), rest = PerStep(r.total.rest_us, r);
  switch (r.fix) {
    case TraceFix::kNone:
      return "none needed";
    case TraceFix::kPinMemory:
      return "pin_memory=True in the DataLoader, and .to(device, non_blocking=True): pinned batches copy while the "
             "GPU computes";
    case TraceFix::kFewerCopyBytes:
      return "batch bytes: copy narrow dtypes (uint16 token ids) and widen on the GPU, with "
             ".to(device, non_blocking=True)";
    case TraceFix::kCollate:
      return "collate_fn: build each batch with one indexing op (a batch sampler over a pre-stacked tensor) instead "
             "of stacking samples one by one, and num_workers >= 1 to take it off the training process";
    case TraceFix::kWorkersFromZero:
      return "num_workers=" + std::to_string(r.workers_needed) + " or more: " + std::to_string(r.workers_needed) +
             " worker processes, each making a batch in " + ShortTime(data * 1e-6) + ", keep up with a " +
             ShortTime(rest * 1e-6) + " step";
    case TraceFix::kMoreWorkers:
      return "num_workers: at least " + fmt::format("{:.1f}x", r.workers_factor) +
             " today's count, so that the workers make a "
             "batch every " +
             ShortTime(rest * 1e-6) + " instead of every " + ShortTime((rest + data) * 1e-6) +
             "; if the workers wait on reads rather than CPU, faster storage instead";
    case TraceFix::kPrefetchFactor:
      return "prefetch_factor: raise it (default 2) so bursts of slow batches find batches ready; if step #" +
             std::to_string(r.burst_step) +
             " is an epoch's first, persistent_workers=True keeps the workers (and "
             "their prefetched batches) across epochs";
  }
  return "";
}

std::string TraceText(const TraceResult& r) {
  std::string o;
  const TraceStep& t = r.total;
  o += "trace       " + r.path + ": " + (r.kineto ? "Kineto document" : "legacy event array (PyTorch without Kineto)") +
       ", " + Grouped(r.events_read) + " events, " + StepsRange(r) + ", " +
       (r.has_gpu_events ? "GPU events" : "no GPU events") + "\n";
  if (!r.gpus.empty()) {
    o += "gpus        ";
    for (size_t i = 0; i < r.gpus.size(); ++i) {
      if (i > 0) o += ", ";
      o += r.gpus[i];
    }
    o += "\n";
  }
  o += "loader      " + LoaderLine(r) + (r.dataloader_name.empty() ? "" : ": " + r.dataloader_name) + "\n\n";
  char b[200];
  std::snprintf(b, sizeof b, "  %-10s %10s %11s %11s %11s %12s %11s %7s\n", "step", "time", "data wait", "h2d host",
                "h2d gpu", "gpu kernels", "rest", "input");
  o += b;
  for (const auto& s : r.steps) o += Row(fmt::format("#{:.0f}", static_cast<double>(s.number)), s, r.has_gpu_events);
  o += Row("all", t, r.has_gpu_events);
  o += "  (data wait: enumerate(DataLoader)...__next__; h2d host: the training thread's copy calls; input: (data wait"
       " + h2d host) / time)\n\n";
  o += "verdict     " + std::string(dataload::InputBoundPhrase(r.level)) + ": the step waits " +
       Percent(r.input_share, 1) + " of its time for input (data " + Percent(r.data_share, 1) + ", host-to-device " +
       Percent(r.h2d_share, 1) + "); " + Percent(r.steps_waiting_share, 1) + " of steps waited 5% or more\n";
  o += "  why       " + TraceReason(r) + "\n";
  o += "  knob      " + TraceKnob(r) + "\n";
  return o;
}

namespace {

// A step's row and the overall row share the time breakdown (StepTimes) of their TraceStep `s`.
struct TraceStepRow {
  const TraceStep& s;
};

struct TraceOverallRow {
  const TraceStep& s;
  size_t steps;
};

auto StepTimes() {
  using namespace fields;
  return If([](const auto&) { return true; },  //
            Computed("time_ms", [](const auto& v) { return v.s.time_us / 1e3; }),
            Computed("data_wait_ms", [](const auto& v) { return v.s.data_wait_us / 1e3; }),
            Computed("collate_ms", [](const auto& v) { return v.s.collate_us / 1e3; }),
            Computed("pin_memory_ms", [](const auto& v) { return v.s.pin_us / 1e3; }),
            Computed("h2d_host_ms", [](const auto& v) { return v.s.h2d_host_us / 1e3; }),
            Computed("h2d_gpu_ms", [](const auto& v) { return v.s.h2d_gpu_us / 1e3; }),
            Computed("gpu_kernels_ms", [](const auto& v) { return v.s.kernel_us / 1e3; }),
            Computed("rest_ms", [](const auto& v) { return v.s.rest_us / 1e3; }),
            Computed("input_share", [](const auto& v) { return v.s.input_share; }));
}

}  // namespace

LMKIT_JSON_FIELDS(TraceStepRow,  //
                  Computed("step", [](const T& v) { return v.s.number; }),
                  Computed("start_us", [](const T& v) { return v.s.start_us; }), StepTimes(),
                  Computed("level", [](const T& v) {
                    return dataload::InputBoundName(dataload::ClassifyWaitShare(v.s.input_share));
                  }));

LMKIT_JSON_FIELDS(TraceOverallRow, Field("steps", &T::steps), StepTimes());

LMKIT_JSON_FIELDS(
    TraceResult,  //
    Computed("schema", [](const T&) { return kDataloadTraceSchema; }), Field("path", &T::path),
    Computed("format", [](const T& r) { return r.kineto ? "kineto" : "legacy"; }), Field("events", &T::events_read),
    Field("gpus", &T::gpus), Field("gpu_events", &T::has_gpu_events),
    Object("loader",  //
           Computed("kind", [](const T& r) { return LoaderName(r.loader); }),
           Computed("record_function",
                    [](const T& r) {
                      return r.dataloader_name.empty() ? std::nullopt : std::optional(r.dataloader_name);
                    })),
    Object("host_to_device",  //
           Field("copies", &T::h2d_copies), Field("pageable_copies", &T::h2d_pageable_copies),
           Field("bytes", &T::h2d_bytes)),
    Computed("steps",
             [](const T& r) {
               std::vector<TraceStepRow> rows;
               for (const auto& s : r.steps) rows.push_back({s});
               return ToJsonValue(rows);
             }),
    Computed("overall",
             [](const T& r) {
               return ToJson(TraceOverallRow{r.total, r.steps.size()});
             }),
    Object("verdict",  //
           Computed("level", [](const T& r) { return dataload::InputBoundName(r.level); }),
           Field("input_share", &T::input_share), Field("data_share", &T::data_share),
           Field("h2d_share", &T::h2d_share), Field("steps_waiting_share", &T::steps_waiting_share),
           Computed("knob",
                    [](const T& r) {
                      const char* knob = TraceFixKnob(r.fix);
                      return knob[0] ? std::optional<std::string>(knob) : std::nullopt;
                    }),
           Computed("reason", [](const T& r) { return TraceReason(r); }),
           Computed("advice", [](const T& r) { return TraceKnob(r); }),
           Object("evidence",  //
                  Field("collate_share", &T::collate_share),
                  Computed("workers_needed",
                           [](const T& r) {
                             return r.workers_needed > 0 ? std::optional(r.workers_needed) : std::nullopt;
                           }),
                  Computed("workers_factor",
                           [](const T& r) {
                             return r.workers_factor > 0 ? std::optional(r.workers_factor) : std::nullopt;
                           }),
                  Computed("burst_step",
                           [](const T& r) { return r.burst_step >= 0 ? std::optional(r.burst_step) : std::nullopt; }),
                  Computed("burst_wait_ms",
                           [](const T& r) {
                             return r.burst_step >= 0 ? std::optional(r.burst_wait_us / 1e3) : std::nullopt;
                           }))),
    Field("notes", &T::notes));

Json TraceJson(const TraceResult& r) { return ToJson(r); }

}  // namespace lmkit::present
