// The plan evaluation's own rules, from a plan file (RunPlan): which GPU and how many, the usable memory per GPU, and
// the refusals before any model is placed. (What each model needs and where it goes: plan_test.cpp.)
#include <catch2/catch.hpp>

#include "lmkit/accounting/plan.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::accounting;

namespace {

PlanRequest PlanFile(const lmkit::test::TempDir& dir, const std::string& json) {
  lmkit::test::WriteAll(dir.file("plan.json"), json);
  PlanRequest req;
  req.plan_path = dir.file("plan.json");
  return req;
}

constexpr const char* kOneSmallModel = R"("models": [{"name": "small", "model": "qwen2.5-0.5b", "seq_len": 1024}])";

}  // namespace

TEST_CASE("plan evaluate: the request's GPU and count override the plan's", "[accounting][plan]") {
  lmkit::test::TempDir dir;
  PlanRequest req = PlanFile(dir, std::string(R"({"gpu": "l4", "gpus": 2, )") + kOneSmallModel + "}");
  auto r = RunPlan(req);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CHECK(r->gpus == 2);
  CHECK(r->gpu_use.size() == 2);
  CHECK(r->usable_bytes == 24e9 - 0.05 * 24e9 - 1073741824.0);  // L4: 24 GB, 5% margin, 1 GiB reserved
  req.gpu = "h100";
  req.gpus = 3;
  req.svg_path = "map.svg";
  auto o = RunPlan(req);
  REQUIRE(o.ok());
  CHECK(o->gpu.name == "H100-SXM5-80GB");
  CHECK(o->gpus == 3);
  CHECK(o->usable_bytes == 80e9 - 4e9 - 1073741824.0);
  CHECK(o->svg_path == "map.svg");
  CHECK(o->unplaced.empty());
}

TEST_CASE("plan evaluate: no GPU, too many GPUs, or no usable memory are refused", "[accounting][plan]") {
  lmkit::test::TempDir dir;
  PlanRequest req = PlanFile(dir, std::string("{") + kOneSmallModel + "}");
  auto none = RunPlan(req);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == ErrorCode::kInvalidArgument);
  CHECK(none.status().message().find(Field("gpu")) != std::string::npos);
  req.gpu = "h100";
  CHECK(RunPlan(req).ok());
  req.gpus = 5000;
  CHECK(RunPlan(req).status().message() == Field("gpus") + " must be at most 4096");
  req.gpus = 0;
  PlanRequest full = PlanFile(dir, std::string(R"({"gpu": "l4", "reserved_gib": 23, )") + kOneSmallModel + "}");
  auto r = RunPlan(full);  // 24 GB - 1.2 GB margin - 24.7 GB reserved < 0
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kInvalidInput);
  CHECK(r.status().subject() == dir.file("plan.json"));
  CHECK(r.status().message() == "reserved_gib and fragmentation leave no usable memory on L4");
  req.plan_path = dir.file("missing.json");
  CHECK(RunPlan(req).status().code() == ErrorCode::kNotFound);
}
