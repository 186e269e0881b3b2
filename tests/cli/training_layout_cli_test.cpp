// `lmkit memory` / `lmkit flops` with training-layout flags end to end: per-stage JSON, Megatron's convention, the
// step time, the layout search, charts and the one-line usage errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "lmkit/common/json.h"
#include "support/run_lmkit.h"
#include "support/svg_check.h"

using lmkit::test::RunLmkit;
using lmkit::test::StdoutJson;
using lmkit::test::TempDir;
using lmkit::test::TestData;

namespace {
size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }
}  // namespace

TEST_CASE("training cli: --convention megatron gives Megatron's bytes in --json", "[accounting][cli][training]") {
  // Row 5 of the Megatron table (training_memory_test.cpp): Llama-3-8B, TP 2, DP 4, SP + selective, distributed
  // optimizer, seq 8192, 32 sequences.
  auto j = StdoutJson(RunLmkit({"--json", "memory", "llama-3-8b", "--tp", "2", "--dp", "4", "--sequence-parallel",
                                "--recompute", "selective", "--distributed-optimizer", "--seq-len", "8192",
                                "--global-batch", "32", "--convention", "megatron"}));
  CHECK(j["memory"]["megatron"]["weight_and_optimizer"].get<uint64_t>() == 36137373696ULL);
  CHECK(j["memory"]["megatron"]["activations"].get<uint64_t>() == 19365134336ULL);
  CHECK(j["memory"]["convention"] == "megatron");
  CHECK(j["layout"]["dp"] == 4);
  CHECK(j["layout"]["micro_batches"] == 8);
  CHECK(j["memory"]["stages"].size() == 1);
  CHECK_FALSE(j.contains("step"));
}

TEST_CASE("training cli: per-stage memory, step time, charts", "[accounting][cli][training]") {
  TempDir dir;
  const std::string mem_svg = dir.file("mem.svg"), step_svg = dir.file("step.svg");
  auto t = RunLmkit({"memory",      "llama-3.1-405b", "--tp",
                     "8",           "--pp",           "16",
                     "--gpus",      "16384",          "--sequence-parallel",
                     "--recompute", "selective",      "--distributed-optimizer",
                     "--seq-len",   "8192",           "--global-batch",
                     "2048",        "--gpu",          "h100",
                     "--per-stage", "--svg",          mem_svg});
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("Memory per GPU by pipeline stage") != std::string::npos);
  CHECK(t.out.find("0 (embedding)") != std::string::npos);
  CHECK(t.out.find("15 (head)") != std::string::npos);
  CHECK(t.out.find("Megatron-LM") != std::string::npos);
  CHECK(t.out.find("bound by") != std::string::npos);
  CHECK(t.out.find("fits in") != std::string::npos);
  lmkit::test::CheckSvgFile(mem_svg);

  auto f = RunLmkit({"--json",
                     "flops",
                     "llama-3.1-405b",
                     "--tp",
                     "8",
                     "--pp",
                     "16",
                     "--gpus",
                     "16384",
                     "--sequence-parallel",
                     "--recompute",
                     "selective",
                     "--zero",
                     "1",
                     "--seq-len",
                     "8192",
                     "--global-batch",
                     "2048",
                     "--gpu",
                     "h100",
                     "--mfu",
                     "0.41",
                     "--svg",
                     step_svg});
  INFO(f.err);
  REQUIRE(f.exit_code == 0);
  auto j = lmkit::ParseJson(f.out, "stdout");
  REQUIRE(j.ok());
  const auto& step = (*j)["step"];
  CHECK(step["parts"].size() == 7);
  CHECK(step["bubble_fraction"].get<double>() == Approx(15.0 / 16));
  CHECK(step["at_mfu"]["mfu"].get<double>() == 0.41);
  CHECK((*j)["memory"]["stages"].size() == 16);
  lmkit::test::CheckSvgFile(step_svg);
}

TEST_CASE("training cli: layout search in text and JSON", "[accounting][cli][training]") {
  auto t = RunLmkit({"memory", "llama-3-8b", "--search", "--gpus", "16", "--gpu", "h100", "--seq-len", "8192",
                     "--global-batch", "64", "--top", "3"});
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("Layouts that fit, fastest first") != std::string::npos);
  CHECK(t.out.find("Why layouts were rejected") != std::string::npos);
  auto j = StdoutJson(RunLmkit({"--json", "memory", "llama-3-8b", "--search", "--gpus", "16", "--gpu", "h100",
                                "--seq-len", "8192", "--global-batch", "64", "--top", "3"}));
  CHECK(j["search"]["best"].size() == 3);
  CHECK(j["search"]["evaluated"].get<int64_t>() > j["search"]["fitting"].get<int64_t>());
  auto none = RunLmkit({"memory", "llama-3-8b", "--search", "--gpus", "16", "--global-batch", "64"});
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("--gpu") != std::string::npos);
}

TEST_CASE("training cli: what does not divide is a one-line usage error naming the flag",
          "[accounting][cli][training]") {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"memory", "llama-3-8b", "--tp", "3"}, "32 attention heads do not divide by --tp 3"},
      {{"memory", "llama-3-8b", "--pp", "64"}, "fewer than --pp x --vpp (64)"},
      {{"memory", "mixtral-8x7b-v0.1", "--ep", "3", "--dp", "3"}, "8 experts do not divide by --ep 3"},
      {{"memory", "llama-3-8b", "--cp", "3", "--seq-len", "4096"}, "--seq-len 4096 does not divide into 2 x --cp"},
      {{"memory", "llama-3-8b", "--gpus", "100", "--tp", "8"}, "--gpus (100) is not a multiple of --tp x --pp x --cp"},
      {{"memory", "llama-3-8b", "--dp", "4", "--global-batch", "6"}, "--global-batch (6) is not a multiple of"},
      {{"memory", "llama-3-8b", "--tp", "2", "--mode", "inference"}, "model training"},
      {{"memory", "llama-3-8b", "--distributed-optimizer", "--zero", "3"}, "contradicts --zero 3"},
      {{"flops", "llama-3-8b", "--tp", "2"}, "needs --gpu"},
      {{"memory", "llama-3-8b", "--convention", "deepspeed"}, "convention"},
  };
  for (const auto& [args, needle] : cases) {
    auto r = RunLmkit(args);
    INFO(args[1] << " " << args[2] << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(needle) != std::string::npos);
    CHECK(Lines(r.err) == 1);
  }
}

TEST_CASE("training cli: Qwen3-MoE and DeepSeek-V3 configs as transformers 5 writes them", "[accounting][cli]") {
  auto q = StdoutJson(RunLmkit({"--json", "flops", TestData("accounting/tiny-hf5/qwen3_moe.json")}));
  CHECK(q["params"]["total"].get<int64_t>() == 91008);
  auto d = StdoutJson(RunLmkit({"--json", "flops", TestData("accounting/tiny-hf5/deepseek_v3.json")}));
  CHECK(d["params"]["total"].get<int64_t>() == 95412);
}

// The issue-42 presets end to end: flops and memory read them, the layout search runs on them, and the parameter
// counts are params_test.cpp's (transformers' own modules).
TEST_CASE("training cli: Llama 4, gpt-oss, Mistral Large 2 and Gemma 3 27B presets", "[accounting][cli][training]") {
  const std::pair<const char*, int64_t> presets[] = {
      {"llama-4-scout", 107769861120}, {"llama-4-maverick", 400711848960}, {"gpt-oss-20b", 20914757184},
      {"gpt-oss-120b", 116829156672},  {"mistral-large-2", 122610069504},  {"gemma-3-27b", 27009346304},
  };
  for (const auto& [name, total] : presets) {
    INFO(name);
    auto f = StdoutJson(RunLmkit({"--json", "flops", name, "--seq-len", "4096"}));
    CHECK(f["params"]["total"].get<int64_t>() == total);
    auto m = RunLmkit({"--json", "memory", name, "--tp", "8", "--pp", "4", "--gpus", "256", "--global-batch", "256",
                       "--seq-len", "4096", "--recompute", "selective", "--distributed-optimizer", "--per-stage"});
    INFO(m.err);
    REQUIRE(m.exit_code == 0);
    auto j = lmkit::ParseJson(m.out, "stdout");
    REQUIRE(j.ok());
    CHECK((*j)["memory"]["stages"].size() == 4);
    auto s = RunLmkit({"--json", "memory", name, "--search", "--gpus", "256", "--gpu", "h100", "--seq-len", "4096",
                       "--global-batch", "256", "--top", "2"});
    INFO(s.err);
    REQUIRE(s.exit_code == 0);
    auto sj = lmkit::ParseJson(s.out, "stdout");
    REQUIRE(sj.ok());
    CHECK((*sj)["search"]["evaluated"].get<int64_t>() > 0);
    CHECK((*sj)["search"]["best"].size() >= 1);
  }
  // The multimodal presets report their vision tower apart from the language model.
  auto scout = StdoutJson(RunLmkit({"--json", "flops", "llama-4-scout"}));
  CHECK(scout["params"]["vision"].get<int64_t>() == 871932416);
  // DeepSeek-V3's published run fits with the report's own savings, which `--recompute deepseek` names.
  auto ds = StdoutJson(
      RunLmkit({"--json", "memory", "deepseek-v3", "--pp", "16", "--ep", "64", "--gpus", "2048", "--global-batch",
                "15360", "--zero", "1", "--seq-len", "4096", "--gpu", "h800", "--recompute", "deepseek"}));
  CHECK(ds["memory"]["fits"] == true);
}
