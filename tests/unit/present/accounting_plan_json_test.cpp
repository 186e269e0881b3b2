// The `lmkit plan --json` document (schema lmkit.plan/2) of a hand-checked plan: two Llama-2-7B that fit one H100 and
// a third whose batch does not.
#include <catch2/catch.hpp>

#include "lmkit/present/accounting.h"
#include "unit/accounting/test_models.h"

using namespace lmkit;
using namespace lmkit::accounting;

namespace {

PlanResult PlanJsonFixture() {
  return test::PlanResultOf(R"({"gpu": "h100", "models": [
      {"name": "a", "model": "llama-2-7b", "seq_len": 4096},
      {"name": "b", "model": "llama-2-7b", "seq_len": 4096},
      {"name": "big", "model": "llama-2-7b", "seq_len": 4096, "batch": 64}]})",
                            "", 0, /*what_if=*/true);
}

}  // namespace

TEST_CASE("accounting plan json: the per-GPU budget and each model's bytes", "[present][accounting][plan]") {
  const Json j = present::PlanJson(PlanJsonFixture());
  CHECK(j["schema"] == "lmkit.plan/2");
  CHECK(j["plan"] == "t.json");
  CHECK(j["gpus"] == 1);
  // 80e9 - 5% margin (4e9) - 1 GiB reserved.
  CHECK(j["reserved_bytes_per_gpu"].get<uint64_t>() == 1073741824ULL);
  CHECK(j["margin_bytes_per_gpu"].get<uint64_t>() == 4000000000ULL);
  CHECK(j["usable_bytes_per_gpu"].get<uint64_t>() == 74926258176ULL);
  CHECK(j["host"]["disk_from_plan"] == false);
  REQUIRE(j["models"].size() == 3);
  const Json& a = j["models"][0];
  CHECK(a["parameters"].get<uint64_t>() == 6738415616ULL);
  CHECK(a["memory"]["weights"].get<uint64_t>() == 13476831232ULL);
  CHECK(a["memory"]["kv_cache"].get<uint64_t>() == 2147483648ULL);
  CHECK(a["memory"]["total"].get<uint64_t>() == 15871906816ULL);
  CHECK(a["max_batch_alone"] == 25);
  CHECK(a["gpu"] == 0);
  CHECK(a["unplaced_reason"].is_null());
  CHECK(a["latency"]["decode_step_s"].is_null());  // no output tokens: one forward pass
}

TEST_CASE("accounting plan json: assignment, groups and what does not fit", "[present][accounting][plan]") {
  const Json j = present::PlanJson(PlanJsonFixture());
  REQUIRE(j["assignment"].size() == 1);
  CHECK(j["assignment"][0]["models"] == Json::array({"a", "b"}));
  CHECK(j["assignment"][0]["models_bytes"].get<uint64_t>() == 2 * 15871906816ULL);
  REQUIRE(j["groups"].size() == 1);  // one architecture and dtype
  CHECK(j["groups"][0]["members"] == Json::array({"a", "b", "big"}));
  CHECK(j["groups"][0]["weight_bytes_each"].get<uint64_t>() == 13476831232ULL);
  REQUIRE(j["unplaced"].size() == 1);
  CHECK(j["unplaced"][0]["name"] == "big");
  const Json& big = j["models"][2];
  CHECK(big["gpu"].is_null());
  CHECK(big["gpus"].empty());
  CHECK(big["unplaced_reason"] == j["unplaced"][0]["reason"]);
  REQUIRE_FALSE(big["what_if"].empty());
  CHECK(big["what_if"][0]["change"].get<std::string>().rfind("batch 64 -> ", 0) == 0);
  CHECK(j["svg"].is_null());
}
