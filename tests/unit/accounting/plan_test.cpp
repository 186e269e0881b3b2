// `lmkit plan` core: golden memory figures from reference/accounting.md, latency held to the accounting roofline,
// load/switch arithmetic, same-architecture groups, hand-checked packings and one-line errors.
#include "lmkit/accounting/plan.h"

#include <catch2/catch.hpp>
#include <functional>

#include "lmkit/accounting/flops.h"
#include "lmkit/present/accounting.h"
#include "support/run_lmkit.h"
#include "test_models.h"

using namespace lmkit;
using namespace lmkit::accounting;

namespace {

Status ErrorOf(const std::string& text, const std::string& gpu = "h100") {
  auto j = ParseJson(text, "t.json");
  REQUIRE(j.ok());
  auto p = ParsePlan(*j, "t.json", "");
  if (!p.ok()) return p.status();
  auto r = EvaluatePlan(*p, gpu, 0);
  REQUIRE_FALSE(r.ok());
  return r.status();
}

// H100-SXM5-80GB: 80e9 B; reserved 1 GiB; margin 5% = 4e9 -> usable 74,926,258,176 B.
constexpr double kUsableH100 = 80e9 - 4e9 - 1073741824.0;

}  // namespace

TEST_CASE("plan: Llama-2-7B bf16 golden memory, max batch, load and switch", "[accounting][plan]") {
  auto r = test::PlanResultOf(R"({"gpu": "h100", "models": [{"model": "llama-2-7b", "seq_len": 4096}]})");
  REQUIRE(r.models.size() == 1);
  const ModelEstimate& m = r.models[0];
  CHECK(r.usable_bytes == kUsableH100);
  CHECK(m.memory.weights == 13476831232ULL);        // reference/accounting.md: 6,738,415,616 params x 2 B
  CHECK(m.memory.kv_bytes_per_token == 524288ULL);  // reference/accounting.md
  CHECK(m.memory.kv_cache == 4096ULL * 524288ULL);  // = 2 GiB at 4096 tokens
  // Prefill working set of `lmkit memory`: 2 B x 4096 x (2·4096 + 2·11008) + 4 B x 32000 logits.
  CHECK(m.memory.activations == 247591936ULL);
  CHECK(m.footprint == 15871906816ULL);
  // (74,926,258,176 - 13,476,831,232) / (2,147,483,648 + 247,591,936) = 25.66.
  CHECK(m.max_batch_alone == 25);
  // Defaults: disk 2 GB/s, pinned PCIe 25 GB/s.
  CHECK(m.switch_s == Approx(13476831232.0 / 25e9));
  CHECK(m.cold_load_s == Approx(13476831232.0 / 2e9 + 13476831232.0 / 25e9));
  CHECK(m.gpus == std::vector<int>{0});
  CHECK(r.gpu_use[0].models_bytes == 15871906816ULL);
  CHECK(r.gpu_use[0].free == Approx(kUsableH100 - 15871906816.0));
  CHECK(r.unplaced.empty());
}

TEST_CASE("plan: latency is the accounting roofline, with the bound named", "[accounting][plan]") {
  auto r = test::PlanResultOf(R"({"gpu": "h100", "models": [{"model": "llama-2-7b", "batch": 1, "seq_len": 2048,
                   "output_tokens": 512, "requests_per_s": 0.5}]})");
  const ModelEstimate& m = r.models[0];
  auto spec = LoadPreset("llama-2-7b");
  REQUIRE(spec.ok());
  auto h100 = FindGpu("h100");
  REQUIRE(h100.ok());
  FlopsOptions fo;
  fo.batch = 1;
  fo.seq_len = 1536;  // prompt = 2048 - 512
  auto pre = ComputeRoofline(*BuildMatmuls(*spec, fo), *h100, Precision{});
  REQUIRE(pre.ok());
  auto dec = ComputeRoofline(*BuildDecodeMatmuls(*spec, 1, 1536 + 256), *h100, Precision{});  // mean context
  REQUIRE(dec.ok());
  CHECK(m.prefill_s == Approx(pre->time_s));
  CHECK(m.decode_s == Approx(512 * dec->time_s));
  CHECK(m.latency_s == Approx(pre->time_s + 512 * dec->time_s));
  // A decode step at batch 1 reads every weight once: at least the non-embedding weights over 3.35 TB/s (~3.9 ms).
  CHECK(dec->time_s > (13476831232.0 - 2.0 * 32000 * 4096) / 3.35e12);
  CHECK(m.prefill_bound == LatencyBound::kCompute);
  CHECK(m.decode_bound == LatencyBound::kMemory);
  CHECK(present::BoundDetail(m) == "prefill compute-bound, decode memory-bound");
  CHECK(m.bound == LatencyBound::kMemory);  // 512 decode steps take longer than the prefill
  CHECK(m.utilisation == Approx(0.5 * m.latency_s));
  CHECK(r.gpu_use[0].utilisation == Approx(m.utilisation));
}

TEST_CASE("plan: same architecture recognised, weights counted per instance", "[accounting][plan]") {
  auto r = test::PlanResultOf(R"({"gpu": "h100", "models": [
      {"name": "base", "model": "llama-2-7b", "seq_len": 1024},
      {"name": "tuned", "model": "llama-2-7b", "seq_len": 1024, "count": 2},
      {"name": "small", "model": "qwen2.5-0.5b", "seq_len": 1024},
      {"name": "int8", "model": "llama-2-7b", "dtype": "int8", "seq_len": 1024}]})");
  REQUIRE(r.models.size() == 5);
  CHECK(r.models[1].entry.name == "tuned#1");
  CHECK(r.models[2].entry.name == "tuned#2");
  REQUIRE(r.groups.size() == 3);  // the int8 copy is not the same deployment as the bf16 ones
  CHECK(r.groups[0].members == std::vector<int>{0, 1, 2});
  CHECK(r.groups[0].weight_bytes_each == 13476831232ULL);
  CHECK(r.models[4].group == 2);
  CHECK(r.gpu_use[0].models_bytes == r.models[0].footprint * 3 + r.models[3].footprint + r.models[4].footprint);
  std::string text = lmkit::present::RenderPlan(r, lmkit::present::Format::kTable);
  CHECK(text.find("base, tuned#1, tuned#2; weights counted per instance (3 x 13.48 GB)") != std::string::npos);
}

TEST_CASE("plan: hand-checked packing of 7B models on two GPUs", "[accounting][plan]") {
  // Llama-2-7B bf16 at batch 1, 4096 tokens: 15,871,906,816 B; usable 74.93 GB per H100 holds 4 (63.49 GB), not 5
  // (79.36 GB). Nine copies on two GPUs: 4 + 4 placed, the ninth does not fit.
  auto r =
      test::PlanResultOf(R"({"gpu": "h100", "gpus": 2, "models": [{"name": "m", "model": "llama-2-7b", "seq_len": 4096,
                   "count": 9}]})");
  CHECK(r.gpu_use[0].models.size() == 4);
  CHECK(r.gpu_use[1].models.size() == 4);
  REQUIRE(r.unplaced == std::vector<int>{8});
  CHECK(r.models[8].gpus.empty());
  CHECK(r.models[8].unplaced == Unplaced::kNoRoomBesideOthers);
  CHECK(present::UnplacedReason(r, r.models[8]).find("fits an empty GPU (15.87 GB) but not beside the others") !=
        std::string::npos);
  CHECK(r.packing_method ==
        "first-fit decreasing placed 8 of 9; branch and bound proved that no placement holds more (optimal)");
  // The flag overrides the plan: three GPUs hold all nine.
  auto r3 =
      test::PlanResultOf(R"({"gpu": "h100", "gpus": 2, "models": [{"name": "m", "model": "llama-2-7b", "seq_len": 4096,
                    "count": 9}]})",
                         "", 3);
  CHECK(r3.unplaced.empty());
  CHECK(r3.gpu_use[2].models.size() == 1);
  CHECK(r3.packing_method == "first-fit decreasing");
}

TEST_CASE("plan: a custom model by dims and host facts from the plan", "[accounting][plan]") {
  auto r = test::PlanResultOf(R"({"gpu": "l4", "reserved_gib": 0.5, "fragmentation": 0.1,
                   "host": {"disk_gb_s": 1, "pcie_pageable_gb_s": 8, "pinned": false},
                   "models": [{"name": "tower", "dims": {"layers": 4, "d_model": 512, "heads": 8, "vocab": 1000,
                               "ffn": "gelu"}, "dtype": "fp16", "seq_len": 128, "batch": 64}]})");
  const ModelEstimate& m = r.models[0];
  CHECK(r.usable_bytes == 24e9 * 0.9 - 0.5 * 1073741824.0);
  CHECK(m.entry.spec.d_ff == 2048);
  CHECK(m.switch_s == Approx(static_cast<double>(m.memory.weights) / 8e9));
  CHECK(m.cold_load_s == Approx(static_cast<double>(m.memory.weights) / 1e9 + m.switch_s));
  CHECK(m.entry.output_tokens == 0);
  CHECK_FALSE(m.decode_bound.has_value());
  CHECK(present::BoundDetail(m).rfind("forward ", 0) == 0);
}

TEST_CASE("plan: invalid plans are one-line errors naming the file and the entry", "[accounting][plan]") {
  Status s = ErrorOf(R"({"models": [{"model": "llama-9-7b"}]})");
  CHECK(s.code() == ErrorCode::kNotFound);
  CHECK(s.subject() == "t.json");
  CHECK(s.message().rfind("models[0] 'llama-9-7b': unknown model 'llama-9-7b'", 0) == 0);

  s = ErrorOf(R"({"models": [{"model": "llama-2-7b", "bacth": 2}]})");
  CHECK(s.message().rfind("models[0] 'llama-2-7b': unknown key 'bacth'", 0) == 0);
  s = ErrorOf(R"({"models": [{"model": "llama-2-7b", "batch": 0}]})");
  CHECK(s.message().find("batch must be between 1 and") != std::string::npos);
  s = ErrorOf(R"({"models": [{"model": "llama-2-7b", "seq_len": 100, "output_tokens": 100}]})");
  CHECK(s.message().find("output_tokens (100) must be below seq_len (100)") != std::string::npos);
  s = ErrorOf(R"({"models": []})");
  CHECK(s.message() == "plan: needs a non-empty \"models\" array");
  s = ErrorOf(R"({"models": [{"model": "llama-2-7b"}, {"model": "llama-2-7b"}]})");
  CHECK(s.message().find("name 'llama-2-7b' is already used by models[0]") != std::string::npos);
  s = ErrorOf(R"({"models": [{"model": "llama-2-7b", "dtype": "bf16"}]})", "v100");
  CHECK(s.message().find("V100-SXM2-32GB has no bf16 peak") != std::string::npos);
  s = ErrorOf(R"({"models": [{"model": "llama-2-7b", "tp": 3}]})");
  CHECK(s.message() ==
        "models[0] 'llama-2-7b': tp (3) must divide the attention heads (32): tensor parallelism "
        "splits whole heads");
  s = ErrorOf(R"({"models": [{"model": "llama-2-7b", "kv_tokens": 4096, "gpu_memory_utilization": 0.5}]})");
  CHECK(s.message().find("give kv_tokens or gpu_memory_utilization, not both") != std::string::npos);
  s = ErrorOf(R"({"models": [{"model": "llama-2-7b", "quant_scope": "some"}]})");
  CHECK(s.message() == "models[0] 'llama-2-7b': quant_scope must be linear or all (got 'some')");
  s = ErrorOf(R"({"models": [{"model": "llama-2-7b"}]})", "");
  CHECK(s.code() == ErrorCode::kInvalidArgument);
  for (const Status& e : {s}) CHECK(e.ToString().find('\n') == std::string::npos);
}

// Issue #26 item 9: a model that cannot fit is an answer, not the end of the plan.
TEST_CASE("plan: a model that does not fit is listed with the reason and the batch that would fit",
          "[accounting][plan]") {
  auto r = test::PlanResultOf(R"({"gpu": "h100", "models": [
      {"name": "chat", "model": "llama-2-7b", "batch": 64, "seq_len": 4096},
      {"name": "moe", "model": "mixtral-8x7b-v0.1"},
      {"name": "small", "model": "qwen2.5-0.5b"}]})",
                              "", 0, true);
  REQUIRE(r.models.size() == 3);
  CHECK(r.unplaced == std::vector<int>{0, 1});
  CHECK(r.models[2].gpus == std::vector<int>{0});
  const ModelEstimate& chat = r.models[0];
  CHECK_FALSE(chat.fits_alone);
  CHECK(chat.unplaced == Unplaced::kBatchExceedsUsable);
  CHECK(present::UnplacedReason(r, chat).rfind(
            "impossible batch: batch 64 x 4096 tokens needs 166.8 GB, more than the 74.93 GB", 0) == 0);
  CHECK(present::UnplacedReason(r, chat).find("the largest batch that fits alone is 25") != std::string::npos);
  CHECK(chat.max_batch_alone == 25);
  const ModelEstimate& moe = r.models[1];
  CHECK(moe.unplaced == Unplaced::kWeightsExceedGpu);
  CHECK(present::UnplacedReason(r, moe).rfind("no GPU fits it: its weights alone take 93.", 0) == 0);
  // What-if, cheapest first: the chat model fits at batch 25 minus what the small model took; Mixtral needs 8-bit
  // weights (46.7 GB + scales) or two GPUs.
  REQUIRE_FALSE(chat.what_if.empty());
  CHECK(chat.what_if[0].change == WhatIfChange::kBatch);
  CHECK(chat.what_if[0].from == 64);
  CHECK(present::WhatIfText(chat.what_if[0]).rfind("batch 64 -> ", 0) == 0);
  REQUIRE_FALSE(moe.what_if.empty());
  CHECK(moe.what_if[0].change == WhatIfChange::kDtype);
  CHECK(present::WhatIfText(moe.what_if[0]) == "dtype fp8");
  bool tp = false;
  for (const auto& w : moe.what_if) tp = tp || w.change == WhatIfChange::kTp;
  CHECK_FALSE(tp);  // one GPU in this plan
  bool more = false;
  for (const auto& w : moe.what_if) more = more || present::WhatIfText(w).rfind("gpu ", 0) == 0;
  CHECK(more);  // a larger GPU (H200, 141 GB) holds it in bf16
}

TEST_CASE("plan: tensor parallelism splits a model across GPUs, with its all-reduces", "[accounting][plan]") {
  auto r = test::PlanResultOf(R"({"gpu": "h100", "gpus": 2, "models": [{"name": "big", "model": "llama-3-8b", "tp": 2,
                   "seq_len": 4096, "output_tokens": 128}]})");
  const ModelEstimate& m = r.models[0];
  CHECK(m.gpus == std::vector<int>{0, 1});
  CHECK(m.memory.kv_heads_per_gpu == 4);
  CHECK(m.memory.kv_bytes_per_token_gpu == 131072 / 2);
  // 32 layers x 2 all-reduces + the embedding's; each of batch x prompt x d_model x 2 bytes.
  CHECK(m.prefill_comm.count == 65);
  CHECK(m.prefill_comm.bytes_each == 3968.0 * 4096 * 2);
  // Ring all-reduce over NVLink 4 (450 GB/s per direction) plus 10 us per call.
  CHECK(m.prefill_comm.seconds == Approx(65 * (2.0 * 0.5 * 3968 * 4096 * 2 / 450e9 + 10e-6)));
  CHECK(m.decode_comm.seconds == Approx(65 * (2.0 * 0.5 * 4096 * 2 / 450e9 + 10e-6)));
  CHECK(m.latency_s ==
        Approx(m.prefill.time_s + m.prefill_comm.seconds + 128 * (m.decode.time_s + m.decode_comm.seconds)));
  CHECK(r.gpu_use[0].models == std::vector<int>{0});
  CHECK(r.gpu_use[1].models == std::vector<int>{0});
  // More GPUs than the plan has: listed, not an error; the what-if names the GPUs it needs.
  auto r1 = test::PlanResultOf(R"({"gpu": "h100", "models": [{"name": "big", "model": "llama-3-8b", "tp": 2}]})", "", 1,
                               true);
  CHECK(r1.models[0].unplaced == Unplaced::kTooFewGpus);
  CHECK(present::UnplacedReason(r1, r1.models[0]) == "needs 2 GPUs (tp 2); the plan has 1");
  REQUIRE_FALSE(r1.models[0].what_if.empty());
  CHECK(r1.models[0].what_if[0].change == WhatIfChange::kGpus);
  CHECK(present::WhatIfText(r1.models[0].what_if[0]) == "gpus 1 -> 2");
  CHECK(present::WhatIfDetail(r1.models[0].what_if[0]) ==
        present::WhatIfDetail({.change = WhatIfChange::kGpus, .footprint = r1.models[0].footprint, .tp = 2}));
}

TEST_CASE("plan: a KV budget in tokens or as vLLM's gpu_memory_utilization", "[accounting][plan]") {
  auto r = test::PlanResultOf(R"({"gpu": "h100", "models": [
      {"name": "tokens", "model": "llama-3-8b", "batch": 8, "seq_len": 4096, "kv_tokens": 65536},
      {"name": "share", "model": "llama-3-8b", "batch": 8, "seq_len": 4096, "gpu_memory_utilization": 0.4}]})",
                              "", 2);
  const ModelEstimate& t = r.models[0];
  CHECK(t.kv_budget == 65536ULL * 131072);
  CHECK(t.kv_budget_tokens == 65536);
  CHECK(t.max_sequences == 16);
  CHECK(t.footprint == t.memory.weights + t.memory.activations + t.kv_budget);
  const ModelEstimate& s = r.models[1];
  CHECK(s.footprint == 32000000000ULL);  // 0.4 x 80 GB
  CHECK(s.kv_budget == 32000000000ULL - s.memory.weights - s.memory.activations);
  CHECK(s.kv_budget_tokens == s.kv_budget / 131072);
  CHECK(s.max_sequences == static_cast<int64_t>(s.kv_budget_tokens / 4096));
  CHECK(r.unplaced.empty());
  // A share too small for the weights: not placed, and said why.
  auto small = test::PlanResultOf(R"({"gpu": "h100", "models": [{"name": "s", "model": "llama-3-8b",
                       "gpu_memory_utilization": 0.1}]})");
  CHECK(small.models[0].unplaced == Unplaced::kBudgetShort);
  CHECK(present::UnplacedReason(small, small.models[0])
            .rfind("gpu_memory_utilization 0.10 gives it 8.00 GB per GPU, less than", 0) == 0);
}

namespace {
int MostPlaced(const std::vector<uint64_t>& sizes, uint64_t capacity, size_t bins) {
  std::vector<uint64_t> used(bins, 0);
  int best = 0;
  std::function<void(size_t, int)> go = [&](size_t i, int placed) {
    best = std::max(best, placed);
    if (i == sizes.size()) return;
    go(i + 1, placed);
    for (size_t b = 0; b < bins; ++b) {
      if (used[b] + sizes[i] > capacity) continue;
      used[b] += sizes[i];
      go(i + 1, placed + 1);
      used[b] -= sizes[i];
    }
  };
  go(0, 0);
  return best;
}
}  // namespace

// The issue's case: Llama-3-70B and Qwen2-57B-A14B in fp8, Mistral-Nemo and Llama-3.2-3B on two H100s. First-fit
// decreasing puts the two large models on one GPU each and leaves both others out; the placement keeps Nemo and the
// 3B together instead: 3 of 4.
TEST_CASE("plan: more models placed than first-fit decreasing, as many as an exhaustive search", "[accounting][plan]") {
  const std::string dir = lmkit::test::TestData("accounting");
  auto r = test::PlanResultOf(R"({"gpu": "h100", "gpus": 2, "models": [
      {"name": "70b", "model": ")" +
                              dir + R"(/llama-3-70b.json", "dtype": "fp8"},
      {"name": "57b", "model": ")" +
                              dir + R"(/qwen2-57b-a14b.json", "dtype": "fp8"},
      {"name": "nemo", "model": ")" +
                              dir + R"(/mistral-nemo-12b.json", "batch": 8, "seq_len": 8192},
      {"name": "3b", "model": ")" +
                              dir + R"(/llama-3.2-3b.json", "batch": 16, "seq_len": 8192}]})");
  std::vector<uint64_t> sizes;
  std::vector<PackItem> items;
  for (const auto& m : r.models) {
    REQUIRE(m.fits_alone);
    sizes.push_back(m.footprint);
    items.push_back({m.footprint, 1});
  }
  const auto usable = static_cast<uint64_t>(r.usable_bytes);
  CHECK(PackFirstFitDecreasing(items, usable, 2).placed == 2);
  const int best = MostPlaced(sizes, usable, 2);
  CHECK(best == 3);
  CHECK(static_cast<int>(r.models.size() - r.unplaced.size()) == best);
  CHECK(r.packing_optimal);
  CHECK(r.packing_method == "first-fit decreasing placed 2 of 4; branch and bound placed 3 (optimal)");
}
