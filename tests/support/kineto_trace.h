// Small Kineto (torch.profiler) documents for the trace tests, built from events whose timing is known exactly.
#pragma once

#include <fmt/format.h>

#include <string>

namespace lmkit::test {

// A Kineto document around `events` (a comma-separated list of event objects); `device` names GPU 0 in
// deviceProperties when not empty.
inline std::string KinetoDoc(const std::string& events, const std::string& device = "") {
  const std::string props =
      device.empty() ? "" : fmt::format(R"("deviceProperties": [{{"id": 0, "name": "{}"}}], )", device);
  return fmt::format(R"({{"schemaVersion": 1, {}"traceEvents": [{}], "traceName": "t"}})", props, events);
}

// A complete ("X") event of thread `tid` in process 7.
inline std::string KinetoEvent(const std::string& cat, const std::string& name, double ts, double dur, int tid = 1,
                               const std::string& args = "{}") {
  return fmt::format(
      R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 7, "tid": {}, "ts": {}, "dur": {}, "args": {}}})", cat, name,
      tid, ts, dur, args);
}

// Appends an event to a comma-separated list. (Not `"," + event`: GCC 12 at -O3 misreads that as an overflow.)
inline void AddKinetoEvent(std::string* list, const std::string& event) {
  if (!list->empty()) list->push_back(',');
  list->append(event);
}

// `n` steps (ProfilerStep#3, #4, ...) of `step` µs from ts 1000; each begins 1 µs in with a DataLoader __next__ of
// `wait(i)` µs of iterator class `iter` (none when 0).
template <typename WaitFn>
std::string KinetoSteps(int n, double step, const std::string& iter, WaitFn wait) {
  std::string ev;
  for (int i = 0; i < n; ++i) {
    const double t0 = 1000.0 + i * step;
    AddKinetoEvent(&ev, KinetoEvent("user_annotation", fmt::format("ProfilerStep#{}", i + 3), t0, step));
    const double w = wait(i);
    if (w > 0)
      AddKinetoEvent(&ev,
                     KinetoEvent("user_annotation", fmt::format("enumerate(DataLoader)#{}.__next__", iter), t0 + 1, w));
  }
  return ev;
}

}  // namespace lmkit::test
