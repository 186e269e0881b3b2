// One plan model's footprint per GPU under its three KV budgets, and the cheapest change that places a model left out.
#include "lmkit/accounting/plan_what_if.h"

#include <catch2/catch.hpp>

#include "test_models.h"

using namespace lmkit;
using namespace lmkit::accounting;

namespace {

// H100-SXM5-80GB: 80e9 B; reserved 1 GiB; margin 5% = 4e9 -> usable 74,926,258,176 B.
constexpr double kWhatIfUsable = 80e9 - 4e9 - 1073741824.0;
// Llama-2-7B bf16 (reference/accounting.md): 6,738,415,616 params x 2 B; KV 524,288 B per token; prefill working set
// at 4096 tokens 2 B x 4096 x (2·4096 + 2·11008) + 4 B x 32000 logits.
constexpr uint64_t kWeights = 13476831232ULL, kKvPerToken = 524288ULL, kActivations = 247591936ULL;

GpuSpec WhatIfH100() {
  auto g = FindGpu("h100");
  REQUIRE(g.ok());
  return *g;
}

}  // namespace

TEST_CASE("plan what-if: the footprint of batch x seq_len, of kv_tokens, of gpu_memory_utilization",
          "[accounting][plan_what_if]") {
  Plan plan = test::PlanOf(R"({"models": [{"model": "llama-2-7b", "seq_len": 4096}]})");
  PlanModel pm = plan.models[0];
  auto f = ModelFootprint(pm, WhatIfH100(), kWhatIfUsable, 0);
  REQUIRE(f.ok());
  CHECK(f->kv_budget == 4096 * kKvPerToken);
  CHECK(f->footprint == kWeights + 4096 * kKvPerToken + kActivations);
  CHECK(f->kv_tokens == 4096);
  CHECK(f->max_sequences == 1);
  CHECK(f->max_batch_alone == 25);  // (usable - weights) / (2 GiB + activations) = 25.66

  pm.kv_tokens = 8192;  // a pool of two sequences' worth
  f = ModelFootprint(pm, WhatIfH100(), kWhatIfUsable, 0);
  REQUIRE(f.ok());
  CHECK(f->kv_budget == 8192 * kKvPerToken);
  CHECK(f->footprint == kWeights + kActivations + 8192 * kKvPerToken);
  CHECK(f->max_sequences == 2);

  pm.kv_tokens = 0;
  pm.gpu_memory_utilization = 0.5;  // 40e9 B of the 80e9; the KV cache gets what the rest leaves
  f = ModelFootprint(pm, WhatIfH100(), kWhatIfUsable, 0);
  REQUIRE(f.ok());
  CHECK(f->footprint == 40000000000ULL);
  CHECK(f->kv_budget == 40000000000ULL - kWeights - kActivations);
  CHECK(f->kv_tokens == 50116);
  CHECK(f->max_sequences == 12);
  CHECK_FALSE(f->budget_short);

  pm.gpu_memory_utilization = 0.1;  // 8e9 B: less than the weights
  f = ModelFootprint(pm, WhatIfH100(), kWhatIfUsable, 0);
  REQUIRE(f.ok());
  CHECK(f->budget_short);
  CHECK(f->kv_budget == 0);
  CHECK(f->max_batch_alone == 0);
}

TEST_CASE("plan what-if: the cheapest change for a batch too large is the batch that fits, and it does",
          "[accounting][plan_what_if]") {
  const char* text = R"({"gpu": "h100", "models": [{"name": "chat", "model": "llama-2-7b", "batch": 64,
                                                    "seq_len": 4096}]})";
  auto r = EvaluatePlan(test::PlanOf(text), "", 0);
  REQUIRE(r.ok());
  REQUIRE(r->unplaced == std::vector<int>{0});
  auto changes = CheapestChanges(*r, 0);
  REQUIRE_FALSE(changes.empty());
  CHECK(changes[0].change == WhatIfChange::kBatch);
  CHECK(changes[0].from == 64);
  CHECK(changes[0].to == 25);
  for (const auto& w : changes) CHECK(w.change != WhatIfChange::kTp);  // one GPU: no tensor parallelism to add

  Plan smaller = test::PlanOf(text);
  smaller.models[0].batch = 25;
  auto again = EvaluatePlan(smaller, "", 0);
  REQUIRE(again.ok());
  CHECK(again->unplaced.empty());
}
