// The per-step chart of `lmkit dataload trace --svg`: one column per step, data wait and rest in ms, the share in the
// title; a valid SVG by the shared checks.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <string>

#include "lmkit/dataload/trace.h"
#include "lmkit/present/dataload.h"
#include "support/kineto_trace.h"
#include "support/svg_check.h"

using namespace lmkit::dataload;

TEST_CASE("dataload svg: a column per step, data wait and rest stacked in ms", "[present][dataload][svg]") {
  lmkit::test::TempDir dir;
  // Steps #3..#6 of 10,000 us; step #4 waits 7,500 us for __next__, the others 1,000 us.
  lmkit::test::WriteAll(dir.file("steps.json"),
                        lmkit::test::KinetoDoc(lmkit::test::KinetoSteps(
                            4, 10000, "_SingleProcessDataLoaderIter", [](int i) { return i == 1 ? 7500.0 : 1000.0; })));
  auto r = RunTrace(dir.file("steps.json"));
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE(r->steps.size() >= 2);
  const std::string svg = lmkit::present::TraceSvg(*r);
  lmkit::test::CheckSvgText(svg, dir, "steps.svg");
  CHECK(svg.find("steps.json: ") != std::string::npos);  // the file name, not its directory
  CHECK(svg.find(dir.path()) == std::string::npos);
  for (const auto& s : r->steps) {
    const std::string col = fmt::format("#{}", s.number);
    const std::string wait = s.number == 4 ? "7.5 ms" : "1 ms";
    CHECK(svg.find("<title>data wait (DataLoader __next__) at " + col + ": " + wait + "</title>") != std::string::npos);
  }
  CHECK(svg.find("<title>rest of the step at #4: 2.5 ms</title>") != std::string::npos);
  CHECK(svg.find("host-to-device copy") == std::string::npos);  // no GPU events, no such series
}

TEST_CASE("dataload svg: with GPU events the host-to-device copy is its own series, and the title names the knob",
          "[present][dataload][svg]") {
  lmkit::test::TempDir dir;
  // Three 10 ms steps: 0.2 ms data wait, then a 3 ms blocking copy from pageable memory.
  std::string ev = lmkit::test::KinetoSteps(3, 10000, "_MultiProcessingDataLoaderIter", [](int) { return 200.0; });
  for (int i = 0; i < 3; ++i) {
    const double t = 1000.0 + i * 10000 + 500;
    const std::string corr = fmt::format(R"({{"correlation": {}}})", 100 + i);
    lmkit::test::AddKinetoEvent(&ev, lmkit::test::KinetoEvent("cuda_runtime", "cudaMemcpyAsync", t, 3000, 1, corr));
    lmkit::test::AddKinetoEvent(
        &ev, lmkit::test::KinetoEvent("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", t + 10, 2900, 7,
                                      fmt::format(R"({{"correlation": {}, "bytes": 1048576}})", 100 + i)));
  }
  lmkit::test::WriteAll(dir.file("gpu.json"), lmkit::test::KinetoDoc(ev, "GPU"));
  auto r = RunTrace(dir.file("gpu.json"));
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE(r->has_gpu_events);
  const std::string svg = lmkit::present::TraceSvg(*r);
  lmkit::test::CheckSvgText(svg, dir, "gpu.svg");
  const std::string col = fmt::format("#{}", r->steps.front().number);
  CHECK(svg.find("<title>host-to-device copy (host time) at " + col + ": 3 ms</title>") != std::string::npos);
  CHECK(svg.find("<title>data wait (DataLoader __next__) at " + col + ": 0.2 ms</title>") != std::string::npos);
  CHECK(svg.find("<title>rest of the step at " + col + ": 6.8 ms</title>") != std::string::npos);
  CHECK(svg.find("(knob: pin_memory)") != std::string::npos);
}
