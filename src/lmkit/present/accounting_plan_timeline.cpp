// `plan --timeline` as text, JSON and the memory-over-the-day chart.
#include <algorithm>

#include "lmkit/accounting/plan_timeline.h"
#include "lmkit/common/units.h"
#include "lmkit/present/accounting.h"
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

Json PlanTimelineJson(const PlanResult& r) {
  if (!r.timeline) return nullptr;
  const TimelineResult& t = *r.timeline;
  Json j;
  j["source"] = t.timeline.source;
  j["capacity_bytes"] = t.timeline.capacity_bytes;
  j["max_split_size_bytes"] =
      t.timeline.max_split_size == kNoMaxSplit ? Json(nullptr) : Json(t.timeline.max_split_size);
  auto name = [&](int i) { return i < 0 ? Json(nullptr) : Json(r.models[static_cast<size_t>(i)].entry.name); };
  Json evs = Json::array();
  for (const auto& ev : t.timeline.events) {
    Json e = {{"t", ev.t_s}, {"op", std::string(EnumNameOf(TimelineOpNames(), ev.op))}, {"model", name(ev.model)}};
    if (ev.op == TimelineOp::kSwitch) e["from"] = name(ev.from);
    if (ev.op == TimelineOp::kRequest) e["batch"] = ev.batch, e["duration_s"] = ev.duration_s;
    evs.push_back(std::move(e));
  }
  j["events"] = std::move(evs);
  Json pols = Json::array();
  for (const auto& p : t.runs) {
    Json pj = {{"name", p.name},
               {"description", p.description},
               {"failures", p.failures},
               {"peak_reserved_bytes", p.peak_reserved},
               {"peak_allocated_bytes", p.peak_allocated},
               {"peak_idle_buffer_bytes", p.peak_idle_buffers},
               {"load_s", p.load_s},
               {"pinned_host_bytes", p.pinned_host_bytes},
               {"device_allocs", p.num_device_alloc},
               {"alloc_retries", p.num_alloc_retries}};
    Json es = Json::array();
    for (const auto& s : p.events) {
      Json e = {{"asked_bytes", s.request_bytes},
                {"allocated_bytes", s.allocated},
                {"reserved_bytes", s.reserved},
                {"largest_free_bytes", s.largest_free},
                {"free_bytes", s.free},
                {"fragmentation", s.fragmentation},
                {"failed", s.failed},
                {"skipped", s.skipped},
                {"latency_s", s.latency_s},
                {"source", s.source.empty() ? Json(nullptr) : Json(s.source)}};
      if (p.policy == Policy::kArchBuffer) e["idle_buffer_bytes"] = s.idle_buffer_bytes;
      es.push_back(std::move(e));
    }
    pj["events"] = std::move(es);
    pols.push_back(std::move(pj));
  }
  j["policies"] = std::move(pols);
  Json fails = Json::array();
  for (const auto& f : t.default_failures)
    fails.push_back({{"event", f.event}, {"t", t.timeline.events[f.event].t_s}, {"avoided_by", f.avoided_by}});
  j["default_failures"] = std::move(fails);
  j["hot_set"] = t.hot_set;
  return j;
}

Json PlanTimelineTraceJson(const PlanResult& r) {
  if (!r.timeline) return nullptr;
  const TimelineResult& t = *r.timeline;
  Json j;
  j["schema"] = "lmkit.plan-trace/1";
  j["capacity_bytes"] = t.timeline.capacity_bytes;
  j["events"] = t.timeline.events.size();
  Json pols = Json::object();
  for (const auto& p : t.runs) {
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
    pols[p.name] = {{"ops", std::move(ops)}, {"reserved_bytes", std::move(reserved)}, {"failed", std::move(failed)}};
  }
  j["policies"] = std::move(pols);
  return j;
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
