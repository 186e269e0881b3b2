// The per-step chart of `lmkit dataload trace --svg`: one column per ProfilerStep, stacked data wait, host-to-device
// copy (when the trace has GPU events) and the rest of the step, in milliseconds.
#include <fmt/format.h>

#include "lmkit/common/units.h"
#include "lmkit/present/chart.h"
#include "lmkit/present/dataload.h"

namespace lmkit::present {

std::string TraceSvg(const dataload::TraceResult& r) {
  StackedColumns c;
  const std::string knob = dataload::TraceFixKnob(r.fix);
  const size_t slash = r.path.find_last_of('/');
  c.title =
      fmt::format("{}: {} — the step waits {} of its time for input{}",
                  slash == std::string::npos ? r.path : r.path.substr(slash + 1), dataload::InputBoundPhrase(r.level),
                  Percent(r.input_share, 1), knob.empty() ? "" : " (knob: " + knob + ")");
  c.shares = false;
  c.unit = "ms";
  // (Named after construction: GCC 12 at -O3 misreads a brace-initialised {literal, role} as an out-of-bounds copy.)
  for (std::string_view name : {std::string_view("data wait (DataLoader __next__)"),
                                std::string_view(r.has_gpu_events ? "host-to-device copy (host time)" : ""),
                                std::string_view("rest of the step")}) {
    if (name.empty()) continue;
    c.series.emplace_back();
    c.series.back().name.assign(name);
  }
  for (const auto& s : r.steps) {
    c.columns.push_back(fmt::format("#{}", s.number));
    std::vector<double> v = {s.data_wait_us / 1e3};
    if (r.has_gpu_events) v.push_back(s.h2d_host_us / 1e3);
    v.push_back(s.rest_us / 1e3);
    c.values.push_back(std::move(v));
  }
  return StackedColumnsSvg(c);
}

}  // namespace lmkit::present
