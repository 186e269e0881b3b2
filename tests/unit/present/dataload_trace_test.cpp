// `lmkit dataload trace` as text and JSON, on a Kineto document whose steps are known exactly: 10 ms each, of which
// the DataLoader's __next__ takes 4 ms.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <string>

#include "lmkit/dataload/trace.h"
#include "lmkit/present/dataload.h"
#include "support/kineto_trace.h"
#include "support/run_lmkit.h"

using namespace lmkit::dataload;

namespace {

// Steps #3..#8 of 10,000 us, each opening with a 4,000 us __next__ of a single-process loader.
TraceResult FortyPercentTrace(const lmkit::test::TempDir& dir) {
  lmkit::test::WriteAll(dir.file("t.json"), lmkit::test::KinetoDoc(lmkit::test::KinetoSteps(
                                                6, 10000, "_SingleProcessDataLoaderIter", [](int) { return 4000.0; })));
  auto r = RunTrace(dir.file("t.json"));
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE_FALSE(r->steps.empty());
  return *r;
}

}  // namespace

TEST_CASE("dataload trace: the JSON document's steps, totals and verdict", "[present][dataload][trace]") {
  lmkit::test::TempDir dir;
  const TraceResult r = FortyPercentTrace(dir);
  const lmkit::Json j = lmkit::present::TraceJson(r);
  CHECK(j["schema"] == "lmkit.dataload.trace/1");
  CHECK(j["format"] == "kineto");
  CHECK(j["gpu_events"] == false);
  CHECK(j["steps"].size() == r.steps.size());
  for (const auto& s : j["steps"]) {
    CHECK(s["time_ms"].get<double>() == Approx(10));
    CHECK(s["data_wait_ms"].get<double>() == Approx(4));
    CHECK(s["rest_ms"].get<double>() == Approx(6));
    CHECK(s["input_share"].get<double>() == Approx(0.4));
  }
  CHECK(j["overall"]["steps"] == r.steps.size());
  CHECK(j["overall"]["time_ms"].get<double>() == Approx(10.0 * static_cast<double>(r.steps.size())));
  CHECK(j["verdict"]["input_share"].get<double>() == Approx(0.4));
  CHECK(j["verdict"]["steps_waiting_share"].get<double>() == Approx(1.0));
  CHECK(j["verdict"]["reason"] == lmkit::present::TraceReason(r));
  CHECK(j["verdict"]["advice"] == lmkit::present::TraceKnob(r));
  CHECK(j["host_to_device"]["copies"] == 0);
}

TEST_CASE("dataload trace: the text report's rows and verdict line", "[present][dataload][trace]") {
  lmkit::test::TempDir dir;
  const TraceResult r = FortyPercentTrace(dir);
  const std::string text = lmkit::present::TraceText(r);
  CHECK(text.rfind("trace       " + dir.file("t.json") + ": Kineto document, ", 0) == 0);
  CHECK(text.find("no GPU events") != std::string::npos);
  // Each step's row: time, data wait, no GPU columns, rest, input share.
  const std::string row = fmt::format("  #{:<9} {:>10} {:>11} {:>11} {:>11} {:>12} {:>11} {:>7}\n",
                                      r.steps.front().number, "10.00 ms", "4.00 ms", "-", "-", "-", "6.00 ms", "40.0%");
  CHECK(text.find(row) != std::string::npos);
  CHECK(text.find(": the step waits 40.0% of its time for input (data 40.0%, host-to-device 0.0%); 100.0% of "
                  "steps waited 5% or more\n") != std::string::npos);
  CHECK(text.find("  why       " + lmkit::present::TraceReason(r) + "\n") != std::string::npos);
}
