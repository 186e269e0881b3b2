// The serving-day replay: a planted fragmenting timeline (worked out by hand from the allocator rules) that the default
// allocator fails although more memory is free than the load asks, and that the per-architecture buffer and
// expandable segments serve; load latencies from disk and page cache; the timeline file's errors; a generated day of
// a mixed plan (safetensors MLP, ONNX GNN with FLOPs, an MoE preset, LLMs) simulated in well under a second.
#include "lmkit/accounting/plan_timeline.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <ctime>

#include "support/run_lmkit.h"

using namespace lmkit::accounting;
using lmkit::Json;
using lmkit::test::TestData;

namespace {

constexpr uint64_t M = kMiB;

PlanModel WeightsModel(const std::string& name, const std::string& arch, std::vector<uint64_t> tensors,
                       uint64_t activation = 0) {
  PlanModel m;
  m.name = name;
  m.model = name + ".safetensors";
  m.weights_only = true;
  m.weights_format = "safetensors";
  m.tensor_bytes = std::move(tensors);
  for (uint64_t b : m.tensor_bytes) m.weight_bytes += b;
  m.weight_params = m.weight_bytes / 2;
  m.weights_signature = arch;
  m.activation_bytes = activation;
  m.spec.name = name;
  m.spec.family = "weights (safetensors)";
  return m;
}

// Two models of architecture X (one 400 MiB tensor each) and one of Y (150 MiB, its request bursts allocating 2 x
// 150 MiB of activations), on a device whose allocator may hold 900 MiB.
PlanResult PlantedPlan() {
  Plan p;
  p.path = "planted";
  p.gpu = "h100";
  p.models = {WeightsModel("x1", "X", {400 * M}), WeightsModel("x2", "X", {400 * M}),
              WeightsModel("y1", "Y", {150 * M}, 300 * M)};
  auto r = EvaluatePlan(p, "", 1);
  REQUIRE(r.ok());
  return std::move(*r);
}

Json PlantedDay() {
  return Json::parse(R"({"capacity_gib": 0.87890625, "events": [
    {"t": 0, "op": "load", "model": "x1"},
    {"t": 1, "op": "load", "model": "y1"},
    {"t": 2, "op": "unload", "model": "x1"},
    {"t": 3, "op": "request", "model": "y1", "batch": 1, "duration_s": 100},
    {"t": 4, "op": "load", "model": "x2"}]})");
}

}  // namespace

TEST_CASE("timeline: the planted fragmenting day fails the default allocator, not the architecture buffer",
          "[plan][timeline]") {
  PlanResult plan = PlantedPlan();
  REQUIRE(plan.models[0].group == plan.models[1].group);  // x1 and x2 share an architecture
  REQUIRE(plan.models[0].group != plan.models[2].group);
  auto tl = ParseTimeline(PlantedDay(), "day.json", plan);
  REQUIRE(tl.ok());
  CHECK(tl->capacity_bytes == 900.0 * M);
  TimelineResult r = SimulateTimeline(plan, *tl);
  REQUIRE(r.runs.size() == 4);
  const PolicyRun& def = r.runs[0];
  CHECK(def.name == "default");
  // The burst's two 150 MiB tensors split x1's freed 400 MiB segment (best fit): [150][150][100 free]; x2's 400 MiB
  // finds no cached block and 550 + 400 > 900 with nothing wholly free to release.
  const EventState& fail = def.events[4];
  CHECK(fail.failed);
  CHECK(fail.request_bytes == 400 * M);
  CHECK(fail.allocated == 450 * M);
  CHECK(fail.reserved == 550 * M);
  CHECK(fail.free == 450 * M);          // more than the 400 MiB asked
  CHECK(fail.largest_free == 350 * M);  // 900 - 550 unreserved; the cached piece is 100 MiB
  CHECK(fail.fragmentation == Approx(1 - 350.0 / 450.0));
  CHECK(def.failures == 1);
  // The architecture buffer: x1's buffer stays allocated while idle, the burst takes new memory (850 MiB reserved)
  // and x2 swaps into the buffer without allocating.
  const PolicyRun& buf = r.runs[2];
  CHECK(buf.name == "arch_buffer");
  CHECK(buf.failures == 0);
  CHECK_FALSE(buf.events[4].failed);
  CHECK(buf.events[3].reserved == 850 * M);
  CHECK(buf.events[2].idle_buffer_bytes == 400 * M);
  CHECK(buf.events[4].idle_buffer_bytes == 0);
  CHECK(buf.peak_idle_buffers == 400 * M);
  // Expandable segments unmap the freed pages and map 400 MiB at the segment's end: 860 MiB reserved.
  const PolicyRun& exp = r.runs[1];
  CHECK(exp.failures == 0);
  CHECK(exp.events[4].reserved == 860 * M);
  // The pinned pool changes only where weights come from.
  CHECK(r.runs[3].failures == 1);
  REQUIRE(r.default_failures.size() == 1);
  CHECK(r.default_failures[0].event == 4);
  CHECK(r.default_failures[0].avoided_by == std::vector<std::string>{"expandable_segments", "arch_buffer"});
  // x1's first load reads 400 MiB from disk (2 GB/s) and copies it pageable (10 GB/s).
  CHECK(def.events[0].source == "disk");
  CHECK(def.events[0].latency_s == Approx(400.0 * M / 2e9 + 400.0 * M / 10e9));
}

TEST_CASE("timeline: reloads come from the page cache, the hot set from the pinned pool", "[plan][timeline]") {
  PlanResult plan = PlantedPlan();
  Json day = Json::parse(R"({"events": [
    {"t": 0, "op": "load", "model": "x1"}, {"t": 1, "op": "switch", "from": "x1", "to": "y1"},
    {"t": 2, "op": "switch", "from": "y1", "to": "x1"}, {"t": 3, "op": "unload", "model": "y1"},
    {"t": 4, "op": "request", "model": "y1"}, {"t": 5, "op": "empty_cache"}]})");
  auto tl = ParseTimeline(day, "day.json", plan);
  REQUIRE(tl.ok());
  TimelineResult r = SimulateTimeline(plan, *tl);
  const PolicyRun& def = r.runs[0];
  CHECK(def.events[2].source == "page cache");
  CHECK(def.events[2].latency_s == Approx(400.0 * M / 10e9));
  CHECK(def.events[3].skipped);  // y1 is no longer resident
  CHECK(def.events[4].skipped);
  REQUIRE(r.hot_set == std::vector<std::string>{"x1"});  // brought up twice
  const PolicyRun& pin = r.runs[3];
  CHECK(pin.pinned_host_bytes == 400.0 * M);
  CHECK(pin.events[0].source == "pinned pool");
  CHECK(pin.events[2].latency_s == Approx(400.0 * M / 25e9));
  CHECK(pin.load_s < def.load_s);
  // One segment all day: y1 split x1's freed 400 MiB, x1 came back into it whole; empty_cache keeps it.
  CHECK(def.events[5].reserved == 400 * M);
}

TEST_CASE("timeline: file errors name the event and the key", "[plan][timeline]") {
  PlanResult plan = PlantedPlan();
  auto err = [&](const char* text) {
    auto r = ParseTimeline(Json::parse(text), "day.json", plan);
    REQUIRE_FALSE(r.ok());
    return r.status().ToString();
  };
  CHECK(err(R"({"events": [{"t": 0, "op": "load", "model": "z"}]})").find("events[0]: no model 'z'") !=
        std::string::npos);
  CHECK(err(R"({"events": [{"t": 5, "op": "load", "model": "x1"}, {"t": 1, "op": "unload", "model": "x1"}]})")
            .find("events[1]: t 1.000 is before") != std::string::npos);
  CHECK(err(R"({"events": [{"t": 0, "op": "boot", "model": "x1"}]})").find("op must be load, unload") !=
        std::string::npos);
  CHECK(err(R"({"events": [{"t": 0, "op": "load", "model": "x1", "batch": 2}]})")
            .find("batch and duration_s are for a request") != std::string::npos);
  CHECK(err(R"({"evnts": []})").find("unknown key 'evnts'") != std::string::npos);
}

TEST_CASE("timeline: a mixed plan simulates a generated day of 1,000+ events in under a second", "[plan][timeline]") {
  PlanRequest req;
  req.plan_path = TestData("plan/mixed_day.json");
  req.generate_events = 1500;
  req.seed = 7;
  // CPU time of this (single-threaded) call: the machine's other load does not count against it.
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  auto r = RunPlanWithTimeline(req);
  const double s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.ok());
  REQUIRE(r->timeline);
  const TimelineResult& t = *r->timeline;
  CHECK(t.timeline.events.size() == 1500);
  // The MLP and the GNN are planned from their weight files, the MoE and the LLMs from presets.
  CHECK(r->models[0].entry.weights_only);
  CHECK(r->models[0].memory.weights == 99074);
  CHECK(r->models[1].memory.weights == 12576);
  CHECK(r->models[1].bound == LatencyBound::kCompute);
  for (const auto& p : t.runs) {
    REQUIRE(p.events.size() == 1500);
    for (const auto& e : p.events) {
      CHECK(e.reserved >= e.allocated);
      CHECK(e.reserved <= static_cast<uint64_t>(t.timeline.capacity_bytes));
    }
  }
  // Same seed, same day.
  auto again = RunPlanWithTimeline(req);
  REQUIRE(again.ok());
  CHECK(again->timeline->runs[0].peak_reserved == t.runs[0].peak_reserved);
  CHECK(again->timeline->runs[0].failures == t.runs[0].failures);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  CHECK(s < 20.0);
#else
  CHECK(s < 1.0);
#endif
  WARN("mixed plan, 1,500 generated events, 4 policies: " << s << " s CPU, " << wall << " s wall");
}

TEST_CASE("timeline: the trace is a field of the request, checked by RunPlan", "[plan][timeline]") {
  lmkit::test::TempDir dir;
  const std::string plan = dir.file("plan.json");
  lmkit::test::WriteAll(plan, R"({"gpu": "h100", "models": [{"name": "chat", "model": "llama-2-7b", "batch": 2},
                                                     {"name": "code", "model": "llama-2-7b", "batch": 2}]})");
  PlanRequest req;
  req.plan_path = plan;
  req.trace_path = dir.file("trace.json");
  auto none = RunPlanWithTimeline(req);
  CHECK(none.status().code() == lmkit::ErrorCode::kInvalidArgument);
  CHECK(none.status().message() == lmkit::Field("trace_path") + " needs " + lmkit::Field("timeline_path") + " or " +
                                       lmkit::Field("generate_events"));
  req.generate_events = 20;
  req.trace_path = plan;  // would replace the plan it is drawn from
  auto self = RunPlanWithTimeline(req);
  CHECK(self.status().code() == lmkit::ErrorCode::kInvalidArgument);
  INFO(self.status().ToString());
  CHECK(self.status().message().find("is also the output (" + lmkit::Field("trace_path")) != std::string::npos);
  req.trace_path = dir.file("trace.json");
  auto ok = RunPlanWithTimeline(req);
  REQUIRE(ok.ok());
  CHECK(ok->trace_path == req.trace_path);
  REQUIRE(ok->timeline);
  bool traced = false;
  for (const auto& run : ok->timeline->runs) traced = traced || !run.trace.empty();
  CHECK(traced);
  // Without a trace no allocator call is kept.
  req.trace_path.clear();
  auto plain = RunPlanWithTimeline(req);
  REQUIRE(plain.ok());
  for (const auto& run : plain->timeline->runs) CHECK(run.trace.empty());
}
