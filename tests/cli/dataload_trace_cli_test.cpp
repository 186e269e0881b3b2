// `lmkit dataload trace` from the command line: the report of a real trace, --json, --fail-on and bad input.
#include <catch2/catch.hpp>

#include "lmkit/common/json.h"
#include "support/run_lmkit.h"
#include "support/svg_check.h"

using lmkit::test::RunLmkit;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;

TEST_CASE("dataload trace cli: text report of a real trace", "[dataload][trace][cli]") {
  const std::string t = TestData("dataload/traces/slow-getitem.torch2.15.json.gz");
  auto r = RunLmkit({"dataload", "trace", t});
  REQUIRE(r.exit_code == 0);
  for (const char* s :
       {"Kineto document", "12 steps (ProfilerStep#8 to #19), no GPU events",
        "loader      single-process DataLoader (num_workers=0: batches are built in the training process): "
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        "  #8 ", "  all ", "verdict     HIGHLY input-bound", "  why       __getitem__ runs in the training process",
        "  knob      num_workers="})
    CHECK(r.out.find(s) != std::string::npos);
  // The missing GPU events are a note on stderr, not a failure.
  CHECK(r.err ==
        "lmkit dataload trace: no GPU events (a CPU-only run, or ProfilerActivity.CUDA not recorded): no "
        "host-to-device or kernel figures; the verdict stands on the data wait\n");
}

TEST_CASE("dataload trace cli: --json and --fail-on", "[dataload][trace][cli]") {
  const std::string fast = TestData("dataload/traces/fast-loader.torch1.13.json.gz");
  auto j = RunLmkit({"--json", "--quiet", "dataload", "trace", fast});
  REQUIRE(j.exit_code == 0);
  auto doc = lmkit::ParseJson(j.out, "stdout");
  REQUIRE(doc.ok());
  CHECK((*doc)["schema"] == "lmkit.dataload.trace/1");
  CHECK((*doc)["format"] == "legacy");
  CHECK((*doc)["verdict"]["level"] == "not");
  CHECK((*doc)["verdict"]["knob"].is_null());
  CHECK(j.err.empty());
  CHECK(RunLmkit({"--quiet", "dataload", "trace", fast, "--fail-on", "moderate"}).exit_code == 0);
  auto few = RunLmkit(
      {"--quiet", "dataload", "trace", TestData("dataload/traces/few-workers.torch1.13.json.gz"), "--fail-on", "high"});
  CHECK(few.exit_code == 3);
  CHECK(few.err == "lmkit dataload trace: gate failed: HIGHLY input-bound (--fail-on high)\n");
}

TEST_CASE("dataload trace cli: bad input", "[dataload][trace][cli]") {
  TempDir dir;
  auto missing = RunLmkit({"dataload", "trace", dir.file("none.json")});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err == "lmkit dataload trace: " + dir.file("none.json") + ": no such file\n");
  WriteAll(dir.file("steps.json"), R"({"traceEvents": []})");
  auto empty = RunLmkit({"dataload", "trace", dir.file("steps.json")});
  CHECK(empty.exit_code == 1);
  CHECK(empty.err.find(": no ProfilerStep#N events: profile with a schedule") != std::string::npos);
  CHECK(RunLmkit({"dataload", "trace"}).exit_code == 2);
}

TEST_CASE("dataload trace cli: --svg draws one stacked column per step", "[dataload][trace][cli][charts]") {
  TempDir dir;
  const std::string svg = dir.file("steps.svg");
  auto r = RunLmkit(
      {"--quiet", "dataload", "trace", TestData("dataload/traces/few-workers.torch2.15.json.gz"), "--svg", svg});
  REQUIRE(r.exit_code == 0);
  lmkit::test::CheckSvgFile(svg);
  const std::string s = lmkit::test::ReadAll(svg);
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
    return n;
  };
  // CPU-only trace: two series (no host-to-device copies), 12 steps #8..#19.
  CHECK(count("data-series=\"data wait (DataLoader __next__)\"") == 1);
  CHECK(count("data-series=\"rest of the step\"") == 1);
  CHECK(count("host-to-device") == 0);
  CHECK(count("data-point=\"#8\"") == 2);
  CHECK(count("data-point=\"#19\"") == 2);
  CHECK(s.find("HIGHLY input-bound") != std::string::npos);
  CHECK(s.find("(knob: num_workers)") != std::string::npos);
  // The chart must not replace its input.
  auto same = RunLmkit({"dataload", "trace", svg, "--svg", svg});
  CHECK(same.exit_code == 2);
}
