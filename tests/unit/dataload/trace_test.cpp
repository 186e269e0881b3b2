// `lmkit dataload trace`'s analysis: real torch.profiler traces of three training loops with a planted input cause
// each (tests/data/dataload/traces, made by make_traces.py with Debian's torch 1.13 and PyPI's torch 2.x), and
// small Kineto-shaped documents for the GPU paths (copies and kernels) that a CPU-only machine cannot record.
#include "lmkit/dataload/trace.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <string>

#include "lmkit/present/dataload.h"
#include "support/kineto_trace.h"
#include "support/run_lmkit.h"

using namespace lmkit::dataload;
using lmkit::Result;
using lmkit::test::AddKinetoEvent;
using lmkit::test::KinetoEvent;
using lmkit::test::KinetoSteps;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;

namespace {

const char* kVersions[] = {"torch1.13", "torch2.15"};

std::string Trace(const std::string& scenario, const char* version) {
  return TestData("dataload/traces/" + scenario + "." + version + ".json.gz");
}

// The documents of the GPU cases come from an H100.
std::string Kineto(const std::string& events) { return lmkit::test::KinetoDoc(events, "NVIDIA H100 80GB HBM3"); }

Result<TraceResult> AnalyzeText(const TempDir& dir, const std::string& json) {
  WriteAll(dir.file("t.json"), json);
  return RunTrace(dir.file("t.json"));
}

}  // namespace

TEST_CASE("trace: a fast loader is NOT input-bound (real traces, torch 1.13 and 2.x)", "[dataload][trace]") {
  for (const char* v : kVersions) {
    INFO(v);
    auto r = RunTrace(Trace("fast-loader", v));
    REQUIRE(r.ok());
    CHECK(r->steps.size() == 12);
    CHECK(r->loader == LoaderKind::kMultiProcess);
    CHECK_FALSE(r->has_gpu_events);
    CHECK(r->level == InputBound::kNot);
    CHECK(r->input_share < kModeratelyInputBound);
    CHECK(r->input_share > 0);  // the workers' batches still cross a queue
    CHECK(r->fix == TraceFix::kNone);
    CHECK(lmkit::present::TraceKnob(*r) == "none needed");
  }
}

TEST_CASE("trace: a slow __getitem__ in the training process is named, with num_workers", "[dataload][trace]") {
  for (const char* v : kVersions) {
    INFO(v);
    auto r = RunTrace(Trace("slow-getitem", v));
    REQUIRE(r.ok());
    CHECK(r->loader == LoaderKind::kSingleProcess);
    CHECK(r->level == InputBound::kHighly);
    CHECK(r->data_share > 0.5);
    CHECK(r->fix == TraceFix::kWorkersFromZero);
    CHECK(std::string(TraceFixKnob(r->fix)) == "num_workers");
    // 16 samples × 8 ms of __getitem__ against a ~50 ms step: two to three workers.
    CHECK(r->workers_needed >= 2);
    CHECK(r->workers_needed <= 8);
    CHECK(r->collate_share < 0.1);  // the time is in __getitem__, not in collating
    const std::string why = lmkit::present::TraceReason(*r);
    CHECK(why.find("__getitem__ runs in the training process (num_workers=0)") == 0);
    CHECK(lmkit::present::TraceKnob(*r).find(fmt::format("num_workers={}", r->workers_needed)) == 0);
  }
}

TEST_CASE("trace: too few workers are named, with how many more", "[dataload][trace]") {
  for (const char* v : kVersions) {
    INFO(v);
    auto r = RunTrace(Trace("few-workers", v));
    REQUIRE(r.ok());
    CHECK(r->loader == LoaderKind::kMultiProcess);
    CHECK(r->level == InputBound::kHighly);
    CHECK(r->steps_waiting_share >= 0.9);  // a steady shortfall, not bursts
    CHECK(r->fix == TraceFix::kMoreWorkers);
    // One worker makes a batch in ~100 ms against a ~50 ms step: at least 1.5x the workers.
    CHECK(r->workers_factor > 1.5);
    CHECK(lmkit::present::TraceReason(*r).find("the DataLoader's workers fall behind") == 0);
    CHECK(lmkit::present::TraceKnob(*r).find("num_workers: at least") == 0);
  }
}

TEST_CASE("trace: per-step figures add up and match the overall ones", "[dataload][trace]") {
  auto r = RunTrace(Trace("few-workers", "torch2.15"));
  REQUIRE(r.ok());
  double time = 0, wait = 0;
  int64_t prev = -1;
  for (const auto& s : r->steps) {
    CHECK(s.number > prev);  // in order
    prev = s.number;
    CHECK(s.data_wait_us <= s.time_us);
    CHECK(s.rest_us == Approx(s.time_us - s.data_wait_us));
    time += s.time_us;
    wait += s.data_wait_us;
  }
  CHECK(r->total.time_us == Approx(time));
  CHECK(r->total.data_wait_us == Approx(wait));
  CHECK(r->input_share == Approx(wait / time));
  CHECK(r->steps.front().number == 8);
  CHECK(r->steps.back().number == 19);
  const lmkit::Json j = lmkit::present::TraceJson(*r);
  CHECK(j["schema"] == "lmkit.dataload.trace/1");
  CHECK(j["format"] == "kineto");
  CHECK(j["steps"].size() == 12);
  CHECK(j["verdict"]["level"] == "highly");
  CHECK(j["verdict"]["knob"] == "num_workers");
  auto legacy = RunTrace(Trace("few-workers", "torch1.13"));
  REQUIRE(legacy.ok());
  CHECK_FALSE(legacy->kineto);  // Debian's torch has no Kineto: the legacy event array
}

TEST_CASE("trace: pageable host-to-device copies ask for pin_memory", "[dataload][trace]") {
  TempDir dir;
  // Four 10 ms steps: 0.2 ms data wait, then a 3 ms blocking copy from pageable memory and a 5 ms kernel.
  std::string ev = KinetoSteps(4, 10000, "_MultiProcessingDataLoaderIter", [](int) { return 200.0; });
  for (int i = 0; i < 4; ++i) {
    const double t = 1000.0 + i * 10000 + 500;
    AddKinetoEvent(&ev, KinetoEvent("cuda_runtime", "cudaMemcpyAsync", t, 3000, 1,
                                    fmt::format(R"({{"correlation": {}}})", 100 + i)));
    AddKinetoEvent(&ev, KinetoEvent("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", t + 10, 2900, 7,
                                    fmt::format(R"({{"correlation": {}, "bytes": 1048576}})", 100 + i)));
    AddKinetoEvent(&ev, KinetoEvent("kernel", "ampere_sgemm_128x64_tn", t + 3100, 5000, 7, R"({"correlation": 9})"));
  }
  auto r = AnalyzeText(dir, Kineto(ev));
  REQUIRE(r.ok());
  CHECK(r->has_gpu_events);
  CHECK(r->gpus == std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
  CHECK(r->h2d_copies == 4);
  CHECK(r->h2d_pageable_copies == 4);
  CHECK(r->h2d_bytes == 4u << 20);
  CHECK(r->steps[0].h2d_host_us == Approx(3000));
  CHECK(r->steps[0].h2d_gpu_us == Approx(2900));
  CHECK(r->steps[0].kernel_us == Approx(5000));
  CHECK(r->h2d_share == Approx(0.3));
  CHECK(r->input_share == Approx(0.32));
  CHECK(r->level == InputBound::kHighly);
  CHECK(r->fix == TraceFix::kPinMemory);
  CHECK(lmkit::present::TraceKnob(*r).find("pin_memory=True") == 0);
  // The same copies from pinned memory: the bytes are the knob.
  std::string pinned = Kineto(ev);
  for (size_t p; (p = pinned.find("Pageable")) != std::string::npos;) pinned.replace(p, 8, "Pinned");
  auto q = AnalyzeText(dir, pinned);
  REQUIRE(q.ok());
  CHECK(q->h2d_pageable_copies == 0);
  CHECK(q->fix == TraceFix::kFewerCopyBytes);
}

TEST_CASE("trace: collate cost in a single-process loader is named", "[dataload][trace]") {
  TempDir dir;
  // 10 ms steps with 6 ms in __next__, 4 ms of which in aten::stack (and its nested aten::cat, counted once).
  std::string ev = KinetoSteps(3, 10000, "_SingleProcessDataLoaderIter", [](int) { return 6000.0; });
  for (int i = 0; i < 3; ++i) {
    const double t = 1000.0 + i * 10000 + 1500;
    AddKinetoEvent(&ev, KinetoEvent("cpu_op", "aten::stack", t, 4000));
    AddKinetoEvent(&ev, KinetoEvent("cpu_op", "aten::cat", t + 100, 3800));
  }
  auto r = AnalyzeText(dir, Kineto(ev));
  REQUIRE(r.ok());
  CHECK(r->steps[0].collate_us == Approx(4000));
  CHECK(r->collate_share == Approx(4.0 / 6.0));
  CHECK(r->fix == TraceFix::kCollate);
  CHECK(std::string(TraceFixKnob(r->fix)) == "collate_fn");
}

TEST_CASE("trace: bursts with workers ask for prefetch_factor, naming the step", "[dataload][trace]") {
  TempDir dir;
  // Eight 40 ms steps; step #5 (the third) waits 30 ms, the others 0.1 ms.
  std::string ev =
      KinetoSteps(8, 40000, "_MultiProcessingDataLoaderIter", [](int i) { return i == 2 ? 30000.0 : 100.0; });
  auto r = AnalyzeText(dir, Kineto(ev));
  REQUIRE(r.ok());
  CHECK(r->level == InputBound::kModerately);  // 30.7 ms of 320 ms
  CHECK(r->steps_waiting_share == Approx(1.0 / 8));
  CHECK(r->fix == TraceFix::kPrefetchFactor);
  CHECK(r->burst_step == 5);
  CHECK(lmkit::present::TraceKnob(*r).find("if step #5 is an epoch's first, persistent_workers=True") !=
        std::string::npos);
}

TEST_CASE("trace: a trace without a DataLoader or GPU says so", "[dataload][trace]") {
  TempDir dir;
  auto r = AnalyzeText(dir, Kineto(KinetoSteps(2, 1000, "", [](int) { return 0.0; })));
  REQUIRE(r.ok());
  CHECK(r->loader == LoaderKind::kNone);
  CHECK(r->level == InputBound::kNot);
  REQUIRE(r->notes.size() == 2);
  CHECK(r->notes[0].find("no enumerate(DataLoader)") == 0);
  CHECK(r->notes[1].find("no GPU events") == 0);
}
