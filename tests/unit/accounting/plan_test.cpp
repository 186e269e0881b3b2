// `lmkit plan` core: golden memory figures from reference/accounting.md, latency held to the accounting roofline,
// load/switch arithmetic, same-architecture groups, hand-checked packings and one-line errors.
#include "lmkit/accounting/plan.h"

#include <catch2/catch.hpp>

#include "lmkit/accounting/flops.h"

using namespace lmkit;
using namespace lmkit::accounting;

namespace {

Plan ParsePlanText(const std::string& text) {
  auto j = ParseJson(text, "t.json");
  REQUIRE(j.ok());
  auto p = ParsePlan(*j, "t.json", "");
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  return *p;
}

PlanResult Eval(const std::string& text, const std::string& gpu = "", int64_t gpus = 0) {
  auto r = EvaluatePlan(ParsePlanText(text), gpu, gpus);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

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
  auto r = Eval(R"({"gpu": "h100", "models": [{"model": "llama-2-7b", "seq_len": 4096}]})");
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
  CHECK(m.gpu == 0);
  CHECK(r.gpu_use[0].models_bytes == 15871906816ULL);
  CHECK(r.gpu_use[0].free == Approx(kUsableH100 - 15871906816.0));
  CHECK(r.unplaced.empty());
}

TEST_CASE("plan: latency is the accounting roofline, with the bound named", "[accounting][plan]") {
  auto r = Eval(R"({"gpu": "h100", "models": [{"model": "llama-2-7b", "batch": 1, "seq_len": 2048,
                   "output_tokens": 512, "requests_per_s": 0.5}]})");
  const ModelEstimate& m = r.models[0];
  auto spec = LoadPreset("llama-2-7b");
  REQUIRE(spec.ok());
  auto h100 = FindGpu("h100");
  REQUIRE(h100.ok());
  FlopsOptions fo;
  fo.batch = 1;
  fo.seq_len = 1536;  // prompt = 2048 - 512
  auto pre = ComputeRoofline(*BuildMatmuls(*spec, fo), *h100, Dtype::kBf16);
  REQUIRE(pre.ok());
  auto dec = ComputeRoofline(*BuildDecodeMatmuls(*spec, 1, 1536 + 256), *h100, Dtype::kBf16);  // mean context
  REQUIRE(dec.ok());
  CHECK(m.prefill_s == Approx(pre->time_s));
  CHECK(m.decode_s == Approx(512 * dec->time_s));
  CHECK(m.latency_s == Approx(pre->time_s + 512 * dec->time_s));
  // A decode step at batch 1 reads every weight once: at least the non-embedding weights over 3.35 TB/s (~3.9 ms).
  CHECK(dec->time_s > (13476831232.0 - 2.0 * 32000 * 4096) / 3.35e12);
  CHECK(m.bound_detail == "prefill compute-bound, decode memory-bound");
  CHECK(m.bound == "memory");  // 512 decode steps take longer than the prefill
  CHECK(m.utilisation == Approx(0.5 * m.latency_s));
  CHECK(r.gpu_use[0].utilisation == Approx(m.utilisation));
}

TEST_CASE("plan: same architecture recognised, weights counted per instance", "[accounting][plan]") {
  auto r = Eval(R"({"gpu": "h100", "models": [
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
  std::string text = RenderPlan(r, Format::kTable);
  CHECK(text.find("base, tuned#1, tuned#2; weights counted per instance (3 x 13.48 GB)") != std::string::npos);
}

TEST_CASE("plan: hand-checked packing of 7B models on two GPUs", "[accounting][plan]") {
  // Llama-2-7B bf16 at batch 1, 4096 tokens: 15,871,906,816 B; usable 74.93 GB per H100 holds 4 (63.49 GB), not 5
  // (79.36 GB). Nine copies on two GPUs: 4 + 4 placed, the ninth does not fit.
  auto r = Eval(R"({"gpu": "h100", "gpus": 2, "models": [{"name": "m", "model": "llama-2-7b", "seq_len": 4096,
                   "count": 9}]})");
  CHECK(r.gpu_use[0].models.size() == 4);
  CHECK(r.gpu_use[1].models.size() == 4);
  REQUIRE(r.unplaced == std::vector<int>{8});
  CHECK(r.models[8].gpu == -1);
  CHECK(r.models[8].unplaced_reason.find("fits an empty GPU (15.87 GB) but not beside the others") !=
        std::string::npos);
  CHECK(r.packing_method ==
        "first-fit decreasing left 1 unplaced; an exact search proved no placement of every model "
        "exists");
  // The flag overrides the plan: three GPUs hold all nine.
  auto r3 = Eval(R"({"gpu": "h100", "gpus": 2, "models": [{"name": "m", "model": "llama-2-7b", "seq_len": 4096,
                    "count": 9}]})",
                 "", 3);
  CHECK(r3.unplaced.empty());
  CHECK(r3.gpu_use[2].models.size() == 1);
  CHECK(r3.packing_method == "first-fit decreasing");
}

TEST_CASE("plan: a custom model by dims and host facts from the plan", "[accounting][plan]") {
  auto r = Eval(R"({"gpu": "l4", "reserved_gib": 0.5, "fragmentation": 0.1,
                   "host": {"disk_gb_s": 1, "pcie_pageable_gb_s": 8, "pinned": false},
                   "models": [{"name": "tower", "dims": {"layers": 4, "d_model": 512, "heads": 8, "vocab": 1000,
                               "ffn": "gelu"}, "dtype": "fp16", "seq_len": 128, "batch": 64}]})");
  const ModelEstimate& m = r.models[0];
  CHECK(r.usable_bytes == 24e9 * 0.9 - 0.5 * 1073741824.0);
  CHECK(m.entry.spec.d_ff == 2048);
  CHECK(m.switch_s == Approx(static_cast<double>(m.memory.weights) / 8e9));
  CHECK(m.cold_load_s == Approx(static_cast<double>(m.memory.weights) / 1e9 + m.switch_s));
  CHECK(m.entry.output_tokens == 0);
  CHECK(m.bound_detail.rfind("forward ", 0) == 0);
}

TEST_CASE("plan: invalid plans are one-line errors naming the file and the entry", "[accounting][plan]") {
  Status s = ErrorOf(R"({"models": [{"model": "llama-9-7b"}]})");
  CHECK(s.code() == ErrorCode::kNotFound);
  CHECK(s.subject() == "t.json");
  CHECK(s.message().rfind("models[0] 'llama-9-7b': unknown model 'llama-9-7b'", 0) == 0);

  s = ErrorOf(R"({"models": [{"model": "llama-2-7b", "batch": 64, "seq_len": 4096}]})");
  CHECK(s.code() == ErrorCode::kInvalidInput);
  CHECK(s.message().find("impossible batch: batch 64 x 4096 tokens needs 166.8 GB") != std::string::npos);
  CHECK(s.message().find("the largest batch that fits alone is 25") != std::string::npos);

  s = ErrorOf(R"({"models": [{"model": "mixtral-8x7b-v0.1"}]})");
  CHECK(s.message().find("no GPU fits it: its weights alone take 93.") != std::string::npos);

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
  s = ErrorOf(R"({"models": [{"model": "llama-2-7b"}]})", "");
  CHECK(s.code() == ErrorCode::kInvalidArgument);
  for (const Status& e : {s}) CHECK(e.ToString().find('\n') == std::string::npos);
}
