#include "lmkit/dataload/profile.h"

#include <catch2/catch.hpp>
#include <vector>

#include "lmkit/present/dataload.h"
#include "support/run_lmkit.h"

using namespace lmkit::dataload;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;
using lmkit::test::WriteTokenFile;

namespace {

DataloadRequest Small(const std::string& path) {
  DataloadRequest o;
  o.paths = {path};
  o.steps = 30;
  o.warmup = 2;
  o.config.batch_size = 4;
  o.config.context_length = 64;
  o.seed = 11;
  return o;
}

}  // namespace

TEST_CASE("profile: the same seed gives the same batches for any threads and prefetch", "[dataload]") {
  TempDir dir;
  const std::string path = WriteTokenFile(dir, 100000, 50257);
  DataloadRequest a = Small(path);
  DataloadRequest b = Small(path);
  b.config.threads = 3;
  b.config.prefetch = 5;
  b.config.access = Access::kPread;
  DataloadRequest c = Small(path);
  c.seed = 12;
  auto ra = RunDataload(a, nullptr);
  auto rb = RunDataload(b, nullptr);
  auto rc = RunDataload(c, nullptr);
  REQUIRE(ra.ok());
  REQUIRE(rb.ok());
  REQUIRE(rc.ok());
  CHECK(ra->runs[0].batches == 32);
  CHECK(ra->runs[0].steady_batches == 30);
  CHECK(ra->runs[0].checksum == rb->runs[0].checksum);
  CHECK(ra->runs[0].checksum != rc->runs[0].checksum);
  CHECK(ra->runs[0].tokens_per_s > 0);
  CHECK(ra->runs[0].gather.count == 30);
  CHECK(ra->runs[0].produce.p50_s <= ra->runs[0].produce.max_s);
  CHECK_FALSE(ra->runs[0].h2d_ran);
  CHECK(ra->runs[0].level == InputBound::kUnknown);  // no demand, no verdict
}

TEST_CASE("profile: --vocab-size flags ids out of range with their position", "[dataload]") {
  TempDir dir;
  const std::string path = WriteTokenFile(dir, 20000, 1000);  // ids 0..999
  DataloadRequest o = Small(path);
  o.vocab_size = 1000;
  auto ok = RunDataload(o, nullptr);
  REQUIRE(ok.ok());
  CHECK(ok->runs[0].vocab.out_of_range == 0);
  CHECK(ok->runs[0].vocab.max_id <= 999);
  CHECK(ok->runs[0].vocab.windows_checked == 32u * 4);
  CHECK(ok->runs[0].vocab.ids_checked == 32u * 4 * 65);
  o.vocab_size = 500;
  auto bad = RunDataload(o, nullptr);
  REQUIRE(bad.ok());
  CHECK(bad->runs[0].vocab.out_of_range > 0);
  CHECK(bad->runs[0].vocab.first_bad_id >= 500);
  CHECK(bad->runs[0].vocab.first_bad_where.find(path + " token ") == 0);
}

TEST_CASE("profile: a demand gives a verdict, a reason and a knob", "[dataload]") {
  TempDir dir;
  const std::string path = WriteTokenFile(dir, 100000, 50257);
  DataloadRequest o = Small(path);
  o.demand.kind = DemandSpec::Kind::kTokensPerSecond;
  o.demand.tokens_per_s = 1000;  // 256-token batches every 256 ms: any loader keeps up
  auto easy = RunDataload(o, nullptr);
  REQUIRE(easy.ok());
  CHECK(easy->runs[0].level == InputBound::kNot);
  CHECK(easy->runs[0].capacity_ratio > 1);
  CHECK(easy->runs[0].demand.step_time_s == Approx(0.256));
  CHECK(easy->runs[0].diagnosis.why == Why::kKeepsUp);
  CHECK_FALSE(lmkit::present::DataloadReason(easy->runs[0]).empty());
  o.demand.tokens_per_s = 1e15;  // no loader keeps up
  auto hard = RunDataload(o, nullptr);
  REQUIRE(hard.ok());
  CHECK(hard->runs[0].level == InputBound::kHighly);
  CHECK(hard->runs[0].capacity_ratio < 1);
  CHECK(hard->runs[0].diagnosis.why == Why::kSlowerThanStep);
  CHECK(lmkit::present::DataloadReason(hard->runs[0]).find("slower than the step") != std::string::npos);
  CHECK_FALSE(lmkit::present::DataloadKnob(hard->runs[0], lmkit::present::BareField).empty());
  CHECK(GateLevel(*hard) == InputBound::kHighly);
}

TEST_CASE("profile: a sweep runs the cartesian product and recommends one point", "[dataload]") {
  TempDir dir;
  const std::string path = WriteTokenFile(dir, 100000, 50257);
  DataloadRequest o = Small(path);
  o.steps = 10;
  auto t = ParseSweepAxis("threads=1,2");
  auto p = ParseSweepAxis("prefetch=1,4");
  REQUIRE(t.ok());
  REQUIRE(p.ok());
  o.sweep = {*t, *p};
  o.demand.kind = DemandSpec::Kind::kStepTime;
  o.demand.step_time_s = 1.0;
  auto rep = RunDataload(o, nullptr);
  REQUIRE(rep.ok());
  REQUIRE(rep->runs.size() == 4);
  CHECK(rep->runs[0].config.threads == 1);
  CHECK(rep->runs[0].config.prefetch == 1);
  CHECK(rep->runs[3].config.threads == 2);
  CHECK(rep->runs[3].config.prefetch == 4);
  // Every point keeps a 1 s step fed, so the cheapest one wins: 1 thread, prefetch 1.
  CHECK(rep->recommended == 0);
  CHECK(lmkit::present::DataloadRecommendation(*rep).find("threads=1 prefetch=1") == 0);
  const std::string text = lmkit::present::DataloadText(*rep, lmkit::present::BareField);
  CHECK(text.find("recommended threads=1 prefetch=1") != std::string::npos);
  lmkit::Json j = lmkit::present::DataloadJson(*rep, lmkit::present::BareField);
  CHECK(j["schema"] == "lmkit.dataload/2");
  CHECK(j["runs"].size() == 4);
  CHECK(j["recommended"] == 0);
  CHECK(j["sweep"][0] == "threads");
}

TEST_CASE("profile: --out-dtype uint16 with uint32 tokens is a usage error", "[dataload]") {
  TempDir dir;
  WriteAll(dir.file("t32.bin"), std::string(40000, '\1'));
  DataloadRequest o = Small(dir.file("t32.bin"));
  o.dtype = lmkit::io::TokenDtype::kU32;
  o.config.out = OutDtype::kUint16;
  auto r = RunDataload(o, nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == lmkit::ErrorCode::kInvalidArgument);
}
