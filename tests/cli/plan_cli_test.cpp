// `lmkit plan` end to end: the example plans through the binary, formats, the SVG memory map, flags over the plan,
// and invalid plans as one-line errors with the documented exit codes.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "lmkit/common/json.h"
#include "support/run_lmkit.h"
#include "support/svg_check.h"

using lmkit::test::CountOf;
using lmkit::test::ReadAll;
using lmkit::test::RunLmkit;
using lmkit::test::StdoutJson;
using lmkit::test::TempDir;
using lmkit::test::TestData;

namespace {

// One line on stderr, starting "lmkit plan: ".
void CheckOneLineError(const lmkit::test::RunResult& r, int code, const std::string& needle) {
  INFO(r.err);
  CHECK(r.exit_code == code);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("lmkit plan: ", 0) == 0);
  CHECK(CountOf(r.err, "\n") == 1);
  CHECK(r.err.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("plan cli: overfull plan, hand-checked packing and golden bytes in JSON", "[cli][plan]") {
  auto j = StdoutJson(RunLmkit({"plan", TestData("plan/overfull.json"), "--json"}));
  CHECK(j["schema"] == "lmkit.plan/2");
  CHECK(j["gpu"]["name"] == "H100-SXM5-80GB");
  CHECK(j["usable_bytes_per_gpu"].get<double>() == 80e9 - 4e9 - 1073741824.0);
  REQUIRE(j["models"].size() == 3);
  const auto& m = j["models"][0];
  CHECK(m["name"] == "replica#1");
  CHECK(m["memory"]["weights"] == 13476831232ULL);
  CHECK(m["memory"]["kv_bytes_per_token"] == 524288);
  CHECK(m["memory"]["kv_cache"] == 8ULL * 4096 * 524288);
  CHECK(m["memory"]["total"] == 32637435904ULL);  // 13,476,831,232 + 8 x (2,147,483,648 + 247,591,936)
  CHECK(m["max_batch_alone"] == 25);
  CHECK(m["latency"]["decode_bound"] == "memory");
  CHECK(j["assignment"][0]["models"] == lmkit::Json::array({"replica#1", "replica#2"}));
  REQUIRE(j["unplaced"].size() == 1);
  CHECK(j["unplaced"][0]["name"] == "replica#3");
  CHECK(j["models"][2]["gpu"].is_null());
  CHECK(j["groups"].size() == 1);
  CHECK(j["groups"][0]["members"].size() == 3);
  // Two GPUs from the flag: everything fits, the third replica alone on GPU 1.
  auto j2 = StdoutJson(RunLmkit({"plan", TestData("plan/overfull.json"), "--gpus", "2", "--format", "json"}));
  CHECK(j2["unplaced"].empty());
  CHECK(j2["assignment"][1]["models"] == lmkit::Json::array({"replica#3"}));
  CHECK(j2["assignment"][1]["free_bytes"].get<double>() == 80e9 - 4e9 - 1073741824.0 - 32637435904.0);
  CHECK(j["packing"] ==
        "first-fit decreasing placed 2 of 3; branch and bound proved that no placement holds more "
        "(optimal)");
}

TEST_CASE("plan cli: table and markdown reports of the worked example, deterministic", "[cli][plan]") {
  auto r = RunLmkit({"plan", TestData("plan/serving.json")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("6 models on 2 x H100-SXM5-80GB") != std::string::npos);
  CHECK(r.out.find("host: disk 3.00 GB/s (plan); host->device 25.00 GB/s pinned (plan)") != std::string::npos);
  CHECK(r.out.find("Memory per model") != std::string::npos);
  CHECK(r.out.find("support#1, support#2; weights counted per instance (2 x 13.48 GB)") != std::string::npos);
  CHECK(r.out.find("every model fits") != std::string::npos);
  CHECK(RunLmkit({"plan", TestData("plan/serving.json")}).out == r.out);
  auto md = RunLmkit({"plan", TestData("plan/serving.json"), "--format", "md"});
  REQUIRE(md.exit_code == 0);
  CHECK(md.out.find("### Memory per model") != std::string::npos);
  CHECK(md.out.find("| chat |") != std::string::npos);
  // --gpu overrides the plan's GPU.
  auto h200 = StdoutJson(RunLmkit({"plan", TestData("plan/serving.json"), "--gpu", "h200", "--json"}));
  CHECK(h200["gpu"]["name"] == "H200-SXM-141GB");
}

TEST_CASE("plan cli: SVG memory map, written atomically", "[cli][plan]") {
  TempDir tmp;
  std::string svg = tmp.file("map.svg");
  auto r = RunLmkit({"plan", TestData("plan/overfull.json"), "--gpus", "2", "--svg", svg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("memory map: " + svg) != std::string::npos);
  std::string s = ReadAll(svg);
  lmkit::test::CheckSvgFile(svg);
  CHECK(s.rfind("<?xml", 0) == 0);
  CHECK(s.find("GPU memory map: 2 x H100-SXM5-80GB") != std::string::npos);
  CHECK(CountOf(s, "data-series=\"replica#") == 3);
  CHECK(s.find("data-series=\"free\"") != std::string::npos);
  CHECK(CountOf(s, "</svg>") == 1);
  // Shares of the 80 GB: 32,637,435,904 B per replica = 40.80%; reserved 1 GiB = 1.34%; margin 5%.
  CHECK(s.find("<title>replica#1 at GPU 0: 40.80%</title>") != std::string::npos);
  CHECK(s.find("<title>replica#3 at GPU 1: 40.80%</title>") != std::string::npos);
  CHECK(s.find("<title>reserved (context, workspaces) at GPU 1: 1.34%</title>") != std::string::npos);
  CHECK(s.find("<title>fragmentation margin at GPU 0: 5.00%</title>") != std::string::npos);
  // An unwritable destination is a one-line I/O error and leaves nothing behind.
  auto bad = RunLmkit({"plan", TestData("plan/overfull.json"), "--svg", tmp.file("no/such/dir/map.svg")});
  CheckOneLineError(bad, 1, "no/such/dir/map.svg");
}

TEST_CASE("plan cli: invalid plans are one-line errors with exit codes", "[cli][plan]") {
  CheckOneLineError(RunLmkit({"plan", TestData("plan/unknown_model.json")}), 1,
                    "unknown_model.json: models[0] 'chat': unknown model 'llama-2-7'");
  CheckOneLineError(RunLmkit({"plan", TestData("plan/malformed.json")}), 1, "malformed.json");
  CheckOneLineError(RunLmkit({"plan", TestData("plan/no_such_plan.json")}), 1, "no_such_plan.json");
  CheckOneLineError(RunLmkit({"plan", TestData("plan/overfull.json"), "--gpu", "h900"}), 1, "h900");
  CheckOneLineError(RunLmkit({"plan", TestData("plan/overfull.json"), "--format", "xml"}), 2, "--format");
  CheckOneLineError(RunLmkit({"plan", "-"}, R"({"models": [{"model": "llama-2-7b"}]})"), 2, "no GPU");
  CheckOneLineError(RunLmkit({"plan"}), 2, "PLAN");
}

// Issue #26 item 9: models that cannot fit are answers (the reason, the batch that would fit, with --what-if the
// cheapest change), not the end of the plan.
TEST_CASE("plan cli: a model that does not fit is listed and the plan goes on", "[cli][plan]") {
  auto r = RunLmkit({"plan", TestData("plan/impossible_batch.json"), "--what-if"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(
      r.out.find("does not fit: chat: impossible batch: batch 64 x 4096 tokens needs 166.8 GB, more than the 74.93 GB "
                 "usable on one H100-SXM5-80GB") != std::string::npos);
  CHECK(r.out.find("the largest batch that fits alone is 25") != std::string::npos);
  CHECK(r.out.find("what-if: chat: batch 64 -> 25 (") != std::string::npos);
  auto j = StdoutJson(RunLmkit({"plan", TestData("plan/too_big.json"), "--json", "--what-if"}));
  REQUIRE(j["unplaced"].size() == 1);
  CHECK(j["unplaced"][0]["name"] == "moe");
  CHECK(j["unplaced"][0]["reason"].get<std::string>().rfind("no GPU fits it: its weights alone take 4", 0) == 0);
  CHECK(j["models"][1]["gpu"] == 0);  // the small model is placed
  CHECK(j["models"][0]["what_if"][0]["change"].get<std::string>().rfind("gpu ", 0) == 0);
}

TEST_CASE("plan cli: --gpu-spec describes the GPU", "[cli][plan]") {
  TempDir tmp;
  lmkit::test::WriteAll(tmp.file("gpu.json"), R"({"name": "Lab-96", "memory_gb": 96, "bandwidth_tb_s": 4,
                                                  "interconnect_gb_s": 400, "dense_tflops": {"bf16": 900}})");
  auto j = StdoutJson(RunLmkit({"plan", TestData("plan/overfull.json"), "--gpu-spec", tmp.file("gpu.json"), "--json"}));
  CHECK(j["gpu"]["name"] == "Lab-96");
  CHECK(j["usable_bytes_per_gpu"].get<double>() == 96e9 * 0.95 - 1073741824.0);
  auto both = RunLmkit({"plan", TestData("plan/overfull.json"), "--gpu", "h100", "--gpu-spec", tmp.file("gpu.json")});
  CheckOneLineError(both, 2, "give either --gpu or --gpu-spec, not both");
}

TEST_CASE("plan cli: config paths next to the plan, CSV, stdin, overload warning", "[cli][plan]") {
  TempDir tmp;
  // A config.json beside the plan is found by its relative path (a 2-layer Llama-style model, 4 MB of bf16 weights).
  lmkit::test::WriteAll(tmp.file("tiny.json"),
                        R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256,
                            "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 512,
                            "vocab_size": 1000, "tie_word_embeddings": false})");
  lmkit::test::WriteAll(tmp.file("plan.json"),
                        R"({"gpu": "l4", "models": [{"name": "tiny", "model": "tiny.json", "batch": 4, "seq_len": 64,
                            "output_tokens": 32, "requests_per_s": 100000}]})");
  auto j = StdoutJson(RunLmkit({"plan", tmp.file("plan.json"), "--json"}));
  const auto& m = j["models"][0];
  // Parameters: embedding + head 2 x 1000 x 256; per layer q,k,v,o 4 x 256^2 + MLP 3 x 256 x 512 + 2 norms x 256;
  // final norm 256. KV: 2 x 2 layers x 256 x 2 B = 2,048 B per token.
  CHECK(m["parameters"] == 2 * 1000 * 256 + 2 * (4 * 256 * 256 + 3 * 256 * 512 + 2 * 256) + 256);
  CHECK(m["memory"]["kv_bytes_per_token"] == 2048);
  CHECK(m["memory"]["kv_cache"] == 2048 * 64 * 4);
  CHECK(m["utilisation"].get<double>() > 1.0);
  auto text = RunLmkit({"plan", tmp.file("plan.json")});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("overloaded: GPU 0 is ") != std::string::npos);
  auto csv = RunLmkit({"plan", tmp.file("plan.json"), "--format", "csv"});
  REQUIRE(csv.exit_code == 0);
  CHECK(csv.out.rfind("# plan: ", 0) == 0);
  CHECK(csv.out.find("\ntiny,tiny.json,bf16,4,64,") != std::string::npos);
  // From stdin: no directory to resolve against, so the same relative name is not found.
  auto in = RunLmkit({"plan", "-"}, lmkit::test::ReadAll(tmp.file("plan.json")));
  CheckOneLineError(in, 1, "-: models[0] 'tiny': unknown model 'tiny.json'");
}

TEST_CASE("plan/flops/memory: --svg naming an input file is a usage error and the input survives", "[cli][plan]") {
  TempDir tmp;
  const std::string plan = tmp.file("plan.json");
  lmkit::test::WriteAll(plan, ReadAll(TestData("plan/overfull.json")));
  const std::string before = ReadAll(plan);
  auto r = RunLmkit({"plan", plan, "--svg", plan});
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "lmkit plan: " + plan + ": is also the output (--svg " + plan + "); writing it would destroy the input\n");
  CHECK(ReadAll(plan) == before);
  // flops and memory: the config file, a directory's config.json, and the models of a --sweep model=... are inputs.
  const std::string dir = tmp.file("m"), config = dir + "/config.json";
  std::filesystem::create_directories(dir);
  lmkit::test::WriteAll(config, ReadAll(std::string(LMKIT_REPO_DIR) + "/data/models/gpt2.json"));
  const std::string cfg = ReadAll(config);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"flops", config, "--sweep", "seq-len=128,256", "--svg", config},
        std::vector<std::string>{"flops", dir, "--sweep", "seq-len=128,256", "--svg", dir + "/./config.json"},
        std::vector<std::string>{"memory", "gpt2", "--sweep", "model=gpt2," + dir, "--svg", config}}) {
    auto m = RunLmkit(args);
    INFO(args[0] << " " << args[1]);
    CHECK(m.exit_code == 2);
    CHECK(m.err.find(": is also the output (--svg ") != std::string::npos);
    CHECK(ReadAll(config) == cfg);
  }
  // A model config that the plan names is an input of `plan` too.
  const std::string plan2 = tmp.file("plan2.json");
  lmkit::test::WriteAll(plan2, R"({"gpu": "h100", "models": [{"name": "a", "model": "m", "batch": 1}]})");
  auto p2 = RunLmkit({"plan", plan2, "--svg", config});
  CHECK(p2.exit_code == 2);
  CHECK(p2.err.find(": is also the output (--svg " + config + ")") != std::string::npos);
  CHECK(ReadAll(config) == cfg);
  CHECK(RunLmkit({"plan", plan2, "--svg", tmp.file("map.svg")}).exit_code == 0);
  // A chart written beside the config, twice (the second replaces the first): allowed.
  for (int i = 0; i < 2; ++i)
    CHECK(RunLmkit({"flops", dir, "--sweep", "seq-len=128,256", "--svg", dir + "/chart.svg"}).exit_code == 0);
}

TEST_CASE("plan cli: models given by weight files, and a file that is neither config nor weights", "[cli][plan]") {
  auto j = StdoutJson(RunLmkit({"plan", TestData("plan/mixed_day.json"), "--json"}));
  REQUIRE(j["models"].size() == 8);
  CHECK(j["models"][0]["name"] == "ranker");
  CHECK(j["models"][0]["memory"]["weights"] == 99074);  // 49,537 fp16 parameters
  CHECK(j["models"][0]["memory"]["activations"] == 256 * 1048576);
  CHECK(j["models"][1]["memory"]["weights"] == 12576);  // the onnx package's raw_data lengths
  CHECK(j["models"][1]["latency"]["total_s"].get<double>() > 0);
  TempDir tmp;
  // Issue #45's first case: "model" naming a safetensors file is planned from its weights, not read as a config.
  lmkit::test::WriteAll(tmp.file("m.json"), R"({"gpu": "h100", "models": [{"name": "ranker", "model": ")" +
                                                TestData("plan/ranker.safetensors") + R"("}]})");
  auto m = StdoutJson(RunLmkit({"plan", tmp.file("m.json"), "--json"}));
  CHECK(m["models"][0]["memory"]["weights"] == 99074);
  CHECK(m["models"][0]["family"] == "weights (safetensors)");
  lmkit::test::WriteAll(tmp.file("p.json"), R"({"gpu": "h100", "models": [{"name": "r", "model": ")" +
                                                TestData("plan/notes.txt") + R"("}]})");
  CheckOneLineError(RunLmkit({"plan", tmp.file("p.json")}), 1,
                    "neither a model config (a JSON object) nor weights (safetensors, GGUF or .onnx)");
  lmkit::test::WriteAll(tmp.file("q.json"), R"({"gpu": "h100", "models": [{"name": "r", "weights": ")" +
                                                TestData("plan/ranker.safetensors") + R"(", "tp": 2}]})");
  CheckOneLineError(RunLmkit({"plan", tmp.file("q.json")}), 1, "not for a model given by its weights");
}

TEST_CASE("plan cli: --timeline finds the planted fragmentation failure and what avoids it", "[cli][plan][timeline]") {
  TempDir tmp;
  const std::string svg = tmp.file("day.svg"), trace = tmp.file("trace.json");
  auto r = RunLmkit({"plan", TestData("plan/planted_plan.json"), "--timeline", TestData("plan/planted_day.json"),
                     "--svg", svg, "--trace", trace});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("fails: event 4 (t 4.0 s) load x2: asks 419.4 MB; 471.9 MB free but the largest free block is "
                   "367.0 MB") != std::string::npos);
  CHECK(r.out.find("avoided by expandable_segments, arch_buffer") != std::string::npos);
  CHECK(r.out.find("memory over the day: " + svg) != std::string::npos);
  lmkit::test::CheckSvgFile(svg);
  auto t = lmkit::Json::parse(ReadAll(trace));
  CHECK(t["schema"] == "lmkit.plan-trace/1");
  CHECK(t["policies"]["default"]["failed"] == lmkit::Json::array({false, false, false, false, true}));
  CHECK(t["policies"]["default"]["reserved_bytes"][4] == 550 * 1048576);
  const auto& ops = t["policies"]["default"]["ops"];
  CHECK(ops.back()[1] == "a");
  CHECK(ops.back()[4] == false);  // x2's 400 MiB allocation fails

  auto j = StdoutJson(RunLmkit(
      {"plan", TestData("plan/planted_plan.json"), "--timeline", TestData("plan/planted_day.json"), "--json"}));
  const auto& tl = j["timeline"];
  REQUIRE(tl["policies"].size() == 4);
  CHECK(tl["policies"][0]["failures"] == 1);
  CHECK(tl["policies"][2]["name"] == "arch_buffer");
  CHECK(tl["policies"][2]["failures"] == 0);
  CHECK(tl["default_failures"][0]["event"] == 4);
  CHECK(tl["default_failures"][0]["avoided_by"] == lmkit::Json::array({"expandable_segments", "arch_buffer"}));
  CHECK(tl["policies"][0]["events"][4]["free_bytes"] == 450 * 1048576);
  CHECK(tl["policies"][0]["events"][4]["largest_free_bytes"] == 350 * 1048576);

  // A generated day: one document, as many events as asked.
  auto g = StdoutJson(RunLmkit({"plan", TestData("plan/mixed_day.json"), "--generate-events", "1000", "--json"}));
  CHECK(g["timeline"]["events"].size() == 1000);
  CHECK(g["timeline"]["source"] == "generated: 1000 events, seed 1");

  // Errors: a bad timeline, both sources, --trace without a timeline.
  lmkit::test::WriteAll(tmp.file("bad.json"), R"({"events": [{"t": 0, "op": "load", "model": "nobody"}]})");
  CheckOneLineError(RunLmkit({"plan", TestData("plan/planted_plan.json"), "--timeline", tmp.file("bad.json")}), 1,
                    "events[0]: no model 'nobody' in the plan");
  CheckOneLineError(RunLmkit({"plan", TestData("plan/planted_plan.json"), "--timeline",
                              TestData("plan/planted_day.json"), "--generate-events", "5"}),
                    2, "--timeline or --generate-events, not both");
  CheckOneLineError(RunLmkit({"plan", TestData("plan/planted_plan.json"), "--trace", tmp.file("t.json")}), 2,
                    "--trace needs --timeline or --generate-events");
}
