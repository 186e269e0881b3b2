#include "lmkit/dataload/demand.h"

#include <catch2/catch.hpp>

using namespace lmkit::dataload;

TEST_CASE("demand: tokens/s and step time convert through B x T", "[dataload]") {
  DemandSpec s;
  s.kind = DemandSpec::Kind::kTokensPerSecond;
  s.tokens_per_s = 462000;  // GPT-2 124M on one H200 at 40% MFU (reference figure)
  auto d = ResolveDemand(s, 12 * 1024, 1024);
  REQUIRE(d.ok());
  CHECK(d->given);
  CHECK(d->step_time_s * 1e3 == Approx(26.6).epsilon(0.001));
  DemandSpec t;
  t.kind = DemandSpec::Kind::kStepTime;
  t.step_time_s = 0.0266;
  auto e = ResolveDemand(t, 12 * 1024, 1024);
  REQUIRE(e.ok());
  CHECK(e->tokens_per_s == Approx(462000).epsilon(0.001));
  DemandSpec none;
  auto n = ResolveDemand(none, 100, 10);
  REQUIRE(n.ok());
  CHECK_FALSE(n->given);
  DemandSpec bad;
  bad.kind = DemandSpec::Kind::kTokensPerSecond;
  bad.tokens_per_s = -1;
  CHECK(ResolveDemand(bad, 100, 10).status().code() == lmkit::ErrorCode::kUsage);
}
