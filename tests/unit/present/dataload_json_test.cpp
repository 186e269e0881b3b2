// The `lmkit dataload --json` document (schema lmkit.dataload/2) of a small CPU run: the files, the configuration,
// the batch counts, and request fields spelled by the front end.
#include <catch2/catch.hpp>
#include <cinttypes>
#include <cstdio>

#include "lmkit/dataload/profile.h"
#include "lmkit/present/dataload.h"
#include "support/run_lmkit.h"

using namespace lmkit::dataload;

namespace {

DataloadResult DataloadJsonRun(const lmkit::test::TempDir& dir) {
  DataloadRequest o;
  o.paths = {lmkit::test::WriteTokenFile(dir, 20000, 1000)};
  o.steps = 30;
  o.warmup = 2;
  o.config.batch_size = 4;
  o.config.context_length = 64;
  o.seed = 3;
  auto r = RunDataload(o, nullptr);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

std::string DashFlag(std::string_view f) {
  std::string s = "--";
  for (char c : f) s.push_back(c == '_' ? '-' : c);
  return s;
}

}  // namespace

TEST_CASE("dataload json: files, configuration and counts of a run", "[present][dataload]") {
  lmkit::test::TempDir dir;
  const DataloadResult rep = DataloadJsonRun(dir);
  const lmkit::Json j = lmkit::present::DataloadJson(rep, DashFlag);
  CHECK(j["schema"] == "lmkit.dataload/2");
  REQUIRE(j["files"].size() == 1);
  CHECK(j["files"][0]["path"] == dir.file("t.bin"));
  CHECK(j["files"][0]["format"] == "bin");
  CHECK(j["files"][0]["dtype"] == "uint16");
  CHECK(j["files"][0]["tokens"] == 20000);
  CHECK(j["files"][0]["bytes"] == 40000);
  CHECK(j["device"] == "cpu");
  CHECK(j["sweep"].is_null());
  CHECK(j["recommended"].is_null());
  REQUIRE(j["runs"].size() == 1);
  const lmkit::Json& run = j["runs"][0];
  CHECK(run["config"]["batch_size"] == 4);
  CHECK(run["config"]["context_length"] == 64);
  CHECK(run["throughput"]["batches"] == 32);  // 30 steps after 2 of warm-up
  CHECK(run["throughput"]["steady_batches"] == 30);
  CHECK(run["demand"].is_null());
  char hex[24];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, rep.runs[0].checksum);
  CHECK(run["checksum"] == hex);  // 64 bits as 16 hex digits: no loss through a JSON number
}

TEST_CASE("dataload json: request fields inside results are spelled by the front end", "[present][dataload]") {
  lmkit::test::TempDir dir;
  DataloadResult rep = DataloadJsonRun(dir);
  rep.runs[0].h2d_ran = false;
  rep.runs[0].h2d_skipped = "no GPU: " + lmkit::Field("device") + " is cpu";
  const lmkit::Json j = lmkit::present::DataloadJson(rep, DashFlag);
  CHECK(j["runs"][0]["host_to_device"]["ran"] == false);
  CHECK(j["runs"][0]["host_to_device"]["skipped_because"] == "no GPU: --device is cpu");
  const lmkit::Json bare = lmkit::present::DataloadJson(rep, lmkit::present::BareField);
  CHECK(bare["runs"][0]["host_to_device"]["skipped_because"] == "no GPU: device is cpu");
}
