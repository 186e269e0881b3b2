// Golden `--json` documents of every command: the bytes lmkit prints (and writes with --report / -o JSON) for small
// shipped inputs, compared byte for byte with tests/data/json_golden/*.json. They pin the JSON schema while the
// renderers change (issue #44: one declaration per result). Only what varies run to run is masked (see Mask below);
// LMKIT_UPDATE_GOLDEN=1 rewrites the files from the binary under test.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/run_lmkit.h"

using lmkit::test::ReadAll;
using lmkit::test::RepoPath;
using lmkit::test::RunLmkit;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;

namespace {

struct GoldenCase {
  std::string name;               // tests/data/json_golden/<name>.json
  std::vector<std::string> args;  // {tmp} and {data} are replaced by the scratch and fixture directories
  std::set<std::string> masked;   // keys whose values (scalar, array or object) vary run to run
  std::string file;               // also compare this output file ({tmp}/...) as <name>.file.json
};

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t p = s->find(from); p != std::string::npos; p = s->find(from, p + to.size()))
    s->replace(p, from.size(), to);
}

std::string Expand(std::string s, const TempDir& tmp) {
  ReplaceAll(&s, "{tmp}", tmp.path());
  ReplaceAll(&s, "{data}", TestData(""));
  return s;
}

// The document with machine paths written as <tmp>/, <data>/, <repo>/ and each masked key's value (the whole value,
// even an array or object spanning lines) replaced by "<masked>". Works on the pretty-printed text line by line, so
// every other byte stays as lmkit printed it.
std::string Mask(std::string text, const TempDir& tmp, const std::set<std::string>& masked) {
  ReplaceAll(&text, tmp.path() + "/", "<tmp>/");
  ReplaceAll(&text, TestData(""), "<data>/");
  ReplaceAll(&text, RepoPath(""), "<repo>/");
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) {
    const size_t indent = line.find_first_not_of(' ');
    std::string key;
    if (indent != std::string::npos && line[indent] == '"') {
      const size_t close = line.find("\": ", indent + 1);
      if (close != std::string::npos) key = line.substr(indent + 1, close - indent - 1);
    }
    if (key.empty() || !masked.count(key)) {
      out += line + "\n";
      continue;
    }
    const char last = line.back() == ',' ? line[line.size() - 2] : line.back();
    bool comma = line.back() == ',';
    if (last == '[' || last == '{') {  // skip to the closing line at the same indent
      while (std::getline(in, line)) {
        if (line.find_first_not_of(' ') == indent && (line[indent] == ']' || line[indent] == '}')) break;
      }
      comma = !line.empty() && line.back() == ',';
    }
    out += std::string(indent, ' ') + "\"" + key + "\": \"<masked>\"" + (comma ? "," : "") + "\n";
  }
  if (!text.empty() && text.back() != '\n') out.pop_back();
  return out;
}

void CheckGolden(const std::string& name, const std::string& actual) {
  const std::string path = RepoPath("tests/data/json_golden/" + name + ".json");
  const char* update = std::getenv("LMKIT_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    WriteAll(path, actual);
    return;
  }
  const std::string expected = ReadAll(path);
  INFO("golden " << path << " (LMKIT_UPDATE_GOLDEN=1 rewrites it)");
  REQUIRE_FALSE(expected.empty());
  CHECK(actual == expected);
}

void RunCases(const std::vector<GoldenCase>& cases, const TempDir& tmp) {
  for (const GoldenCase& c : cases) {
    std::vector<std::string> args;
    for (const auto& a : c.args) args.push_back(Expand(a, tmp));
    const auto r = RunLmkit(args);
    INFO(c.name << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    CheckGolden(c.name, Mask(r.out, tmp, c.masked));
    if (!c.file.empty()) CheckGolden(c.name + ".file", Mask(ReadAll(Expand(c.file, tmp)), tmp, c.masked));
  }
}

const std::set<std::string> kTimes = {"seconds",      "peak_rss_bytes", "cpu_seconds",
                                      "load_seconds", "mb_per_s",       "gb_per_s"};

}  // namespace

TEST_CASE("json golden: bpe train, count, encode, decode", "[cli][json_golden]") {
  TempDir tmp;
  const std::string corpus = "{data}bpe/tinystories_sample.txt";
  RunCases(
      {
          {"bpe_train",
           {"-j", "2", "--json", "bpe", "train", corpus, "--vocab-size", "300", "-o", "{tmp}/tok"},
           kTimes},
          {"bpe_train_specials",
           {"-j", "2", "bpe", "train", corpus, "--vocab-size", "280", "--special-token", "<|endoftext|>", "-o",
            "{tmp}/tok2", "--json"},
           kTimes},
          {"bpe_count_0",
           {"-j", "2", "--json", "bpe", "count", corpus, "--shard", "0/2", "-o", "{tmp}/p0.counts"},
           kTimes},
          {"bpe_count_1",
           {"-j", "2", "--json", "bpe", "count", corpus, "--shard", "1/2", "-o", "{tmp}/p1.counts"},
           kTimes},
          {"bpe_train_counts",
           {"-j", "2", "--json", "bpe", "train", "--counts", "{tmp}/p0.counts", "{tmp}/p1.counts", "--vocab-size",
            "300", "-o", "{tmp}/tok3"},
           kTimes},
          {"bpe_encode",
           {"-j", "2", "--json", "bpe", "encode", "-t", "gpt2", "{data}bpe-encode/tinystories_sample.txt", "-o",
            "{tmp}/ids.npy"},
           kTimes},
          {"bpe_encode_dir",
           {"-j", "1", "--json", "bpe", "encode", "-t", "{tmp}/tok", corpus, "-o", "{tmp}/ids.bin"},
           kTimes},
          {"bpe_decode", {"--json", "bpe", "decode", "-t", "gpt2", "{tmp}/ids.npy", "-o", "{tmp}/back.txt"}, kTimes},
      },
      tmp);
}

TEST_CASE("json golden: flops and memory (inference, training, layouts, search, sweeps)", "[cli][json_golden]") {
  TempDir tmp;
  RunCases(
      {
          {"flops_llama2", {"flops", "--json", "llama-2-7b", "--seq-len", "4096"}, {}},
          {"flops_training_gpu",
           {"flops", "--json", "llama-3-8b", "--gpu", "h100", "--mfu", "0.4", "--training", "--steps", "10"},
           {}},
          {"flops_roofline", {"flops", "--json", "gpt2", "--gpu", "h100", "--dtype", "fp8", "--kv-dtype", "fp8"}, {}},
          {"flops_sweep", {"flops", "--sweep", "model=gpt2,mixtral-8x7b-v0.1", "--json"}, {}},
          {"flops_sweep_gpu",
           {"flops", "--json", "llama-3-8b", "--sweep", "batch=1,8", "--gpu", "h100", "--mfu", "0.5", "--training"},
           {}},
          {"flops_deepseek", {"--json", "flops", "{data}accounting/tiny-hf5/deepseek_v3.json"}, {}},
          {"flops_gemma2", {"flops", "--json", "{data}accounting/gemma-2-9b.json"}, {}},
          {"memory_zero3", {"memory", "--json", "llama-2-7b", "--zero", "3", "--gpus", "8"}, {}},
          {"memory_inference",
           {"memory", "--json", "llama-3-8b", "--mode", "inference", "--kv-dtype", "fp8", "--seq-len", "1000", "--gpu",
            "a100-80"},
           {}},
          {"memory_inference_tp", {"memory", "--json", "llama-3-8b", "--mode", "inference", "--gpus", "16"}, {}},
          {"memory_mla", {"memory", "--json", "deepseek-v3", "--mode", "inference", "--seq-len", "1"}, {}},
          {"memory_sweep", {"memory", "--json", "gpt2", "--sweep", "batch=1,8"}, {}},
          {"memory_sweep_svg", {"memory", "--json", "gpt2", "--sweep", "batch=1,8", "--svg", "{tmp}/m.svg"}, {}},
          {"flops_layout",
           {"flops", "--json", "llama-3-8b", "--tp", "2", "--pp", "2", "--gpus", "8", "--gpu", "h100", "--global-batch",
            "64", "--mfu", "0.4"},
           {}},
          {"memory_layout",
           {"memory", "--json", "llama-3-8b", "--tp", "2", "--pp", "2", "--gpus", "8", "--gpu", "h100",
            "--global-batch", "64", "--sequence-parallel"},
           {}},
          {"memory_layout_vpp",
           {"memory", "--json", "llama-3-8b", "--tp", "2", "--pp", "2", "--vpp", "2", "--gpus", "8", "--global-batch",
            "8", "--distributed-optimizer", "--per-stage"},
           {}},
          {"memory_search",
           {"memory", "--json", "llama-3-8b", "--search", "--gpus", "16", "--global-batch", "64", "--gpu", "h100"},
           {}},
      },
      tmp);
}

TEST_CASE("json golden: plan (placement, what-if, timelines)", "[cli][json_golden]") {
  TempDir tmp;
  RunCases(
      {
          {"plan_serving", {"plan", "{data}plan/serving.json", "--gpu", "h200", "--json"}, {}},
          {"plan_overfull", {"plan", "{data}plan/overfull.json", "--json"}, {}},
          {"plan_svg", {"plan", "{data}plan/serving.json", "--gpu", "h200", "--svg", "{tmp}/p.svg", "--json"}, {}},
          {"plan_what_if", {"plan", "{data}plan/too_big.json", "--json", "--what-if"}, {}},
          {"plan_mixed", {"plan", "{data}plan/mixed_day.json", "--json"}, {}},
          {"plan_timeline",
           {"plan", "{data}plan/planted_plan.json", "--timeline", "{data}plan/planted_day.json", "--json"},
           {}},
          {"plan_generated", {"plan", "{data}plan/mixed_day.json", "--generate-events", "20", "--json"}, {}},
          {"plan_trace",
           {"plan", "{data}plan/planted_plan.json", "--timeline", "{data}plan/planted_day.json", "--trace",
            "{tmp}/trace.json", "--json"},
           {},
           "{tmp}/trace.json"},
      },
      tmp);
}

TEST_CASE("json golden: calibrate, quantize (--report), eval, generate, inspect", "[cli][json_golden]") {
  TempDir tmp;
  lmkit::test::WriteTokenFile(tmp, 300, 500);  // {tmp}/t.bin
  const std::string model = "{data}io/stories260K";
  RunCases(
      {
          {"calibrate_entropy",
           {"calibrate", "{data}quant/laplace_acts.npy", "--method", "entropy", "-o", "{tmp}/c.json", "--json"},
           kTimes,
           "{tmp}/c.json"},
          {"calibrate_ort",
           {"calibrate", "{data}quant/laplace_acts.npy", "--method", "percentile", "--flavor", "ort", "-o",
            "{tmp}/c2.json", "--json"},
           kTimes},
          {"quantize_report",
           {"-j", "2", "quantize", model, "-o", "{tmp}/q", "--json", "--report", "{tmp}/report.json"},
           kTimes,
           "{tmp}/report.json"},
          {"quantize_fp8", {"-j", "2", "quantize", model, "-o", "{tmp}/q8", "--scheme", "fp8", "--json"}, kTimes},
          {"quantize_gguf",
           {"-j", "2", "quantize", model, "-o", "{tmp}/q.gguf", "--format", "gguf-q8_0", "--json"},
           kTimes},
          {"quantize_schemes", {"quantize", "--list-schemes", "--json"}, {}},
          {"quantize_gptq",
           {"-j", "2", "quantize", model, "-o", "{tmp}/qg", "--scheme", "w8a8", "--method", "gptq",
            "--calibration-tokens", "{tmp}/t.bin", "--seq-len", "64", "--json"},
           kTimes},
          {"quantize_smoothquant",
           {"-j", "2", "quantize", model, "-o", "{tmp}/qs", "--scheme", "w8a8", "--smoothquant", "auto",
            "--calibration-tokens", "{tmp}/t.bin", "--seq-len", "64", "--json"},
           kTimes},
          {"eval_compare",
           {"-j", "2", "--json", "eval", model, "--tokens", "{tmp}/t.bin", "--compare", "{tmp}/q", "--seq-len", "100"},
           kTimes},
          {"generate",
           {"-j", "2", "--json", "generate", model, "--prompt-ids", "1,2", "--max-tokens", "8", "--samples", "2",
            "--temperature", "0.8", "--seed", "7"},
           kTimes},
          {"generate_logits",
           {"-j", "2", "--json", "generate", model, "--prompt-ids", "1", "--max-tokens", "4", "--logits"},
           kTimes},
          {"inspect_model", {"inspect", model, "--json"}, kTimes},
          {"inspect_stats", {"-j", "2", "inspect", model, "--stats", "--json"}, kTimes},
          {"inspect_npy", {"inspect", "{data}dataload/tokens_u16.npy", "--stats", "--json"}, kTimes},
      },
      tmp);
}

TEST_CASE("json golden: env, dataload, dataload trace", "[cli][json_golden]") {
  TempDir tmp;
  // env describes the machine: only the document's shape is compared.
  const std::set<std::string> machine = {"lmkit_version",  "model",   "cores",    "memory_bytes",   "built_with_cuda",
                                         "driver_version", "devices", "why_none", "runtime_version"};
  // dataload measures: timings, page-cache and file-system facts and what follows from them are masked.
  const std::set<std::string> measured = {"tokens_per_s",
                                          "batches_per_s",
                                          "first_batch_ms",
                                          "warmup_ms",
                                          "steady_s",
                                          "mean_us",
                                          "p50_us",
                                          "p90_us",
                                          "p99_us",
                                          "max_us",
                                          "read_bytes",
                                          "read_amplification",
                                          "minor_faults",
                                          "major_faults",
                                          "resident_before_bytes",
                                          "resident_after_bytes",
                                          "eviction_effective",
                                          "fs_type",
                                          "device",
                                          "read_ahead_kb",
                                          "rotational",
                                          "wait_share",
                                          "steps_waited_share",
                                          "wait_p50_ms",
                                          "wait_p99_ms",
                                          "wait_max_ms",
                                          "capacity_ratio",
                                          "handoff_us",
                                          "reason",
                                          "level",
                                          "knob",
                                          "gate_level",
                                          "count",
                                          "batches",
                                          "storage_probe",
                                          "cold_cache"};
  RunCases(
      {
          {"env", {"--json", "env"}, machine},
          {"dataload",
           {"--json", "dataload", "{data}dataload/tokens_u16.npy", "--steps", "5", "-t", "16", "-b", "2", "--seed", "3",
            "--step-time-ms", "100"},
           measured},
          {"dataload_trace",
           {"--json", "--quiet", "dataload", "trace", "{data}dataload/traces/fast-loader.torch2.15.json.gz"},
           {}},
          {"dataload_trace_slow",
           {"--json", "--quiet", "dataload", "trace", "{data}dataload/traces/slow-getitem.torch1.13.json.gz"},
           {}},
      },
      tmp);
}
