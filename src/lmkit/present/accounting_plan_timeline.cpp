// `plan --timeline` as text, JSON and the memory-over-the-day chart.
#include <algorithm>

#include "lmkit/accounting/plan_timeline.h"
#include "lmkit/common/units.h"
#include "lmkit/present/accounting.h"
#include "lmkit/present/accounting_json_fields.h"
#include "lmkit/present/accounting_svg.h"
#include "lmkit/present/chart.h"

namespace lmkit::present {
namespace {

using namespace accounting;  // NOLINT: this file prints accounting's types and nothing else

std::string TlBytes(uint64_t v) { return HumanBytes(static_cast<double>(v)); }

std::string EventText(const PlanResult& r, const TimelineEvent& ev) {
  auto name = [&](int i) { return i < 0 ? std::string("-") : r.models[static_cast<size_t>(i)].entry.name; };
  std::string op(EnumNameOf(TimelineOpNames(), ev.op));
  switch (ev.op) {
    case TimelineOp::kSwitch:
      return op + " " + name(ev.from) + " -> " + name(ev.model);
    case TimelineOp::kRequest:
      return op + " " + name(ev.model) + " (batch " + std::to_string(ev.batch) + ", " + Fixed(ev.duration_s, 2) + " s)";
    case TimelineOp::kEmptyCache:
      return op;
    default:
      return op + " " + name(ev.model);
  }
}

double MaxFragmentation(const PolicyRun& p) {
  double m = 0;
  for (const auto& e : p.events) m = std::max(m, e.fragmentation);
  return m;
}

}  // namespace

std::string RenderPlanTimeline(const PlanResult& r, Format f) {
  if (!r.timeline) return "";
  const TimelineResult& t = *r.timeline;
  std::string out = TextLine("timeline: " + t.timeline.source + ": " + std::to_string(t.timeline.events.size()) +
                                 " events on one " + r.gpu.name + "; the allocator may hold " +
                                 HumanBytes(t.timeline.capacity_bytes) + " (capacity - reserved)",
                             f, true);
  Table pt;
  pt.title = "Policies on the same day (allocator simulation of PyTorch's CUDACachingAllocator)";
  pt.header = {"policy",
               "failures",
               "peak reserved",
               "peak allocated",
               "max fragmentation",
               "load+switch time",
               "idle buffers (peak)",
               "pinned host",
               "cudaMallocs"};
  pt.numeric = {false, true, true, true, true, true, true, true, true};
  for (const auto& p : t.runs)
    pt.Add({p.name, std::to_string(p.failures), TlBytes(p.peak_reserved), TlBytes(p.peak_allocated),
            Percent(MaxFragmentation(p), 1), Seconds(p.load_s),
            p.policy == Policy::kArchBuffer ? TlBytes(p.peak_idle_buffers) : "-",
            p.policy == Policy::kPinnedPool ? HumanBytes(p.pinned_host_bytes) : "-",
            std::to_string(p.num_device_alloc)});
  out += BlockGap(f) + RenderTable(pt, f);

  if (t.timeline.events.size() <= 40) {
    Table et;
    et.title = "Events under the default allocator";
    et.header = {"t (s)",        "event",         "asked",  "allocated", "reserved",
                 "largest free", "fragmentation", "result", "latency",   "from"};
    et.numeric = {true, false, true, true, true, true, true, false, true, false};
    const PolicyRun& d = t.runs[0];
    for (size_t i = 0; i < t.timeline.events.size(); ++i) {
      const EventState& s = d.events[i];
      et.Add({Fixed(t.timeline.events[i].t_s, 1), EventText(r, t.timeline.events[i]), TlBytes(s.request_bytes),
              TlBytes(s.allocated), TlBytes(s.reserved), TlBytes(s.largest_free), Percent(s.fragmentation, 1),
              s.failed    ? "FAILS"
              : s.skipped ? "nothing to do"
                          : "ok",
              s.latency_s > 0 ? Seconds(s.latency_s) : "-", s.source.empty() ? "-" : s.source});
    }
    out += BlockGap(f) + RenderTable(et, f);
  }

  std::string lines;
  const size_t shown = std::min<size_t>(t.default_failures.size(), 20);
  for (size_t k = 0; k < shown; ++k) {
    const TimelineFailure& fl = t.default_failures[k];
    const EventState& s = t.runs[0].events[fl.event];
    std::string avoided;
    for (const auto& a : fl.avoided_by) avoided += (avoided.empty() ? "" : ", ") + a;
    lines += TextLine("fails: event " + std::to_string(fl.event) + " (t " + Fixed(t.timeline.events[fl.event].t_s, 1) +
                          " s) " + EventText(r, t.timeline.events[fl.event]) + ": asks " + TlBytes(s.request_bytes) +
                          "; " + TlBytes(s.free) + " free but the largest free block is " + TlBytes(s.largest_free) +
                          " (fragmentation " + Percent(s.fragmentation, 1) + "); " +
                          (avoided.empty() ? "no policy avoids it" : "avoided by " + avoided),
                      f, true);
  }
  if (t.default_failures.size() > shown)
    lines += TextLine(
        "... and " + std::to_string(t.default_failures.size() - shown) + " more failures (--json lists all)", f, true);
  if (t.default_failures.empty()) lines += TextLine("the default allocator serves every event", f, true);
  const PolicyRun& def = t.runs[0];
  for (const auto& p : t.runs) {
    if (p.policy == Policy::kDefault) continue;
    std::string cost;
    if (p.policy == Policy::kArchBuffer)
      cost = "holds up to " + TlBytes(p.peak_idle_buffers) + " in idle buffers; peak reserved " +
             TlBytes(p.peak_reserved) + " (default " + TlBytes(def.peak_reserved) + ")";
    if (p.policy == Policy::kExpandable)
      cost = "peak reserved " + TlBytes(p.peak_reserved) + " (default " + TlBytes(def.peak_reserved) +
             "); maps memory in 20 MiB pages (slower first allocations, no IPC)";
    if (p.policy == Policy::kPinnedPool) {
      std::string hot;
      for (const auto& h : t.hot_set) hot += (hot.empty() ? "" : ", ") + h;
      cost = "pins " + HumanBytes(p.pinned_host_bytes) + " of host memory for " + (hot.empty() ? "no model" : hot) +
             "; loads and switches take " + Seconds(p.load_s) + " (default " + Seconds(def.load_s) + ")";
    }
    lines += TextLine(p.name + ": " + std::to_string(p.failures) + " failures; " + cost, f, true);
  }
  out += BlockGap(f) + lines;
  return out;
}

namespace {

// Timeline rows name models by index into the plan, so they carry the plan beside the row.
struct TimelineEventRow {
  const TimelineEvent& ev;
  const PlanResult& plan;
};

struct PolicyEventRow {
  const EventState& s;
  Policy policy;
};

struct PolicyRunRow {
  const PolicyRun& run;
};

struct FailureRow {
  const TimelineFailure& f;
  const Timeline& timeline;
};

struct TimelineDoc {
  const PlanResult& plan;
  const TimelineResult& Result() const { return *plan.timeline; }
};

// The simulated allocator calls for scripts/gpu_replay.py: [event, "a", id, bytes, ok], [event, "f", id], [event, "e"].
struct TraceDoc {
  const TimelineResult& t;
};

std::optional<std::string> ModelName(int i, const PlanResult& plan) {
  if (i < 0) return std::nullopt;
  return plan.models[static_cast<size_t>(i)].entry.name;
}

template <typename Row, typename Item, typename... Context>
Json Rows(const std::vector<Item>& items, const Context&... context) {
  std::vector<Row> rows;
  for (const Item& x : items) rows.push_back(Row{x, context...});
  return ToJsonValue(rows);
}

}  // namespace

LMKIT_JSON_ENUM(TimelineOp, EnumNameOf(TimelineOpNames(), v));

LMKIT_JSON_FIELDS(TimelineEventRow,  //
                  Computed("t", [](const T& e) { return e.ev.t_s; }),
                  Computed("op", [](const T& e) { return e.ev.op; }),
                  Computed("model", [](const T& e) { return ModelName(e.ev.model, e.plan); }),
                  If([](const T& e) { return e.ev.op == TimelineOp::kSwitch; },
                     Computed("from", [](const T& e) { return ModelName(e.ev.from, e.plan); })),
                  If([](const T& e) { return e.ev.op == TimelineOp::kRequest; },
                     Computed("batch", [](const T& e) { return e.ev.batch; }),
                     Computed("duration_s", [](const T& e) { return e.ev.duration_s; })));

LMKIT_JSON_FIELDS(PolicyEventRow,  //
                  Computed("asked_bytes", [](const T& e) { return e.s.request_bytes; }),
                  Computed("allocated_bytes", [](const T& e) { return e.s.allocated; }),
                  Computed("reserved_bytes", [](const T& e) { return e.s.reserved; }),
                  Computed("largest_free_bytes", [](const T& e) { return e.s.largest_free; }),
                  Computed("free_bytes", [](const T& e) { return e.s.free; }),
                  Computed("fragmentation", [](const T& e) { return e.s.fragmentation; }),
                  Computed("failed", [](const T& e) { return e.s.failed; }),
                  Computed("skipped", [](const T& e) { return e.s.skipped; }),
                  Computed("latency_s", [](const T& e) { return e.s.latency_s; }),
                  Computed("source",
                           [](const T& e) {
                             return e.s.source.empty() ? std::nullopt : std::optional<std::string>(e.s.source);
                           }),
                  If([](const T& e) { return e.policy == Policy::kArchBuffer; },
                     Computed("idle_buffer_bytes", [](const T& e) { return e.s.idle_buffer_bytes; })));

LMKIT_JSON_FIELDS(PolicyRunRow,  //
                  Computed("name", [](const T& p) { return p.run.name; }),
                  Computed("description", [](const T& p) { return p.run.description; }),
                  Computed("failures", [](const T& p) { return p.run.failures; }),
                  Computed("peak_reserved_bytes", [](const T& p) { return p.run.peak_reserved; }),
                  Computed("peak_allocated_bytes", [](const T& p) { return p.run.peak_allocated; }),
                  Computed("peak_idle_buffer_bytes", [](const T& p) { return p.run.peak_idle_buffers; }),
                  Computed("load_s", [](const T& p) { return p.run.load_s; }),
                  Computed("pinned_host_bytes", [](const T& p) { return p.run.pinned_host_bytes; }),
                  Computed("device_allocs", [](const T& p) { return p.run.num_device_alloc; }),
                  Computed("alloc_retries", [](const T& p) { return p.run.num_alloc_retries; }),
                  Computed("events", [](const T& p) { return Rows<PolicyEventRow>(p.run.events, p.run.policy); }));

LMKIT_JSON_FIELDS(FailureRow,  //
                  Computed("event", [](const T& f) { return f.f.event; }),
                  Computed("t", [](const T& f) { return f.timeline.events[f.f.event].t_s; }),
                  Computed("avoided_by", [](const T& f) { return f.f.avoided_by; }));

LMKIT_JSON_FIELDS(
    TimelineDoc,  //
    Computed("source", [](const T& d) { return d.Result().timeline.source; }),
    Computed("capacity_bytes", [](const T& d) { return d.Result().timeline.capacity_bytes; }),
    Computed("max_split_size_bytes",
             [](const T& d) {
               const uint64_t m = d.Result().timeline.max_split_size;
               return m == kNoMaxSplit ? std::nullopt : std::optional(m);
             }),
    Computed("events", [](const T& d) { return Rows<TimelineEventRow>(d.Result().timeline.events, d.plan); }),
    Computed("policies", [](const T& d) { return Rows<PolicyRunRow>(d.Result().runs); }),
    Computed("default_failures",
             [](const T& d) { return Rows<FailureRow>(d.Result().default_failures, d.Result().timeline); }),
    Computed("hot_set", [](const T& d) { return d.Result().hot_set; }));

LMKIT_JSON_FIELDS(TraceDoc,  //
                  Computed("schema", [](const T&) { return "lmkit.plan-trace/1"; }),
                  Computed("capacity_bytes", [](const T& d) { return d.t.timeline.capacity_bytes; }),
                  Computed("events", [](const T& d) { return d.t.timeline.events.size(); }),
                  Computed("policies", [](const T& d) {
                    Json pols = Json::object();
                    for (const auto& p : d.t.runs) {
                      if (p.trace.empty() && p.policy == Policy::kPinnedPool) continue;
                      Json ops = Json::array();
                      for (const auto& o : p.trace) {
                        if (o.op == 'a')
                          ops.push_back({o.event, "a", o.id, o.bytes, o.ok});
                        else if (o.op == 'f')
                          ops.push_back({o.event, "f", o.id});
                        else
                          ops.push_back({o.event, "e"});
                      }
                      Json reserved = Json::array(), failed = Json::array();
                      for (const auto& s : p.events) reserved.push_back(s.reserved), failed.push_back(s.failed);
                      pols[p.name] = {{"ops", std::move(ops)},
                                      {"reserved_bytes", std::move(reserved)},
                                      {"failed", std::move(failed)}};
                    }
                    return pols;
                  }));

Json PlanTimelineJson(const PlanResult& r) {
  if (!r.timeline) return nullptr;
  return ToJson(TimelineDoc{r});
}

Json PlanTimelineTraceJson(const PlanResult& r) {
  if (!r.timeline) return nullptr;
  return ToJson(TraceDoc{*r.timeline});
}

std::string PlanTimelineSvg(const PlanResult& r) {
  Figure fig;
  if (!r.timeline) return FigureSvg(fig);
  const TimelineResult& t = *r.timeline;
  fig.title = "GPU memory over the day: " + t.timeline.source + " on one " + r.gpu.name + " (" +
              HumanBytes(t.timeline.capacity_bytes) + " for the allocator)";
  fig.columns = 1;
  fig.plot_width = 720;
  Panel reserved, frag;
  reserved.title = "reserved by the allocator (GB); dashed lines: events the default allocator fails";
  reserved.x.label = "hour of the day";
  reserved.y.label = "GB";
  reserved.y.min = 0;
  frag.title = "fragmentation: 1 - largest free block / free memory";
  frag.x.label = "hour of the day";
  frag.y.label = "fragmentation";
  frag.y.min = 0;
  frag.y.max = 1;
  for (const auto& p : t.runs) {
    if (p.policy == Policy::kPinnedPool) continue;  // the default allocator's memory
    XYSeries rs{p.name, Mark::kLine, {}, {}};       // one colour per policy across the panels
    XYSeries fs{p.name, Mark::kLine, {}, {}};
    for (size_t i = 0; i < p.events.size(); ++i) {
      const double h = t.timeline.events[i].t_s / 3600;
      rs.x.push_back(h);
      rs.y.push_back(static_cast<double>(p.events[i].reserved) / 1e9);
      fs.x.push_back(h);
      fs.y.push_back(p.events[i].fragmentation);
    }
    reserved.series.push_back(std::move(rs));
    frag.series.push_back(std::move(fs));
  }
  XYSeries alloc{"allocated (default)", Mark::kLine, {}, {}};
  for (size_t i = 0; i < t.runs[0].events.size(); ++i) {
    alloc.x.push_back(t.timeline.events[i].t_s / 3600);
    alloc.y.push_back(static_cast<double>(t.runs[0].events[i].allocated) / 1e9);
  }
  reserved.series.push_back(std::move(alloc));
  for (size_t k = 0; k < t.default_failures.size() && k < 40; ++k)
    reserved.markers.push_back({"default fails", t.timeline.events[t.default_failures[k].event].t_s / 3600});
  fig.panels = {std::move(reserved), std::move(frag)};
  return FigureSvg(fig);
}

}  // namespace lmkit::present
