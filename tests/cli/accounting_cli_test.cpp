// `lmkit flops` and `lmkit memory` end to end: golden numbers through the binary, formats, sweeps + SVG, errors.
#include <catch2/catch.hpp>
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
using lmkit::test::WriteAll;

TEST_CASE("flops cli: CS336 GPT-2 XL golden numbers in table and JSON", "[accounting][cli]") {
  auto t = RunLmkit({"flops", "cs336-gpt2-xl"});
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("4,513,336,524,800") != std::string::npos);
  CHECK(t.out.find("164,682,137,600") != std::string::npos);  // LM head
  CHECK(t.out.find("2,127,057,600") != std::string::npos);    // parameters
  CHECK(t.out.find("FLOP = 2 x MAC") != std::string::npos);
  CHECK(t.err.empty());
  auto j = StdoutJson(RunLmkit({"--json", "flops", "cs336-gpt2-xl", "--seq-len", "16384"}));
  CHECK(j["totals"]["forward"].get<uint64_t>() == 149522795724800ULL);
  CHECK(j["components"]["attention scores"].get<uint64_t>() > 0);
  CHECK(j["params"]["total"].get<int64_t>() == 2127057600);
  auto j2 = StdoutJson(RunLmkit({"flops", "nanogpt-gpt2-124m", "--format", "json"}));
  CHECK(j2["totals"]["forward"].get<uint64_t>() == 291648307200ULL);
  CHECK(j2["totals"]["training"].get<uint64_t>() == 874944921600ULL);
  // PaLM's N without the position table (nanoGPT's estimate_mfu): 123,551,232.
  CHECK(j2["totals"]["palm"].get<double>() == 875062886400.0);
}

TEST_CASE("flops cli: explicit dimensions equal the preset", "[accounting][cli]") {
  auto j = StdoutJson(RunLmkit({"flops", "--json", "--layers", "12", "--d-model", "768", "--heads", "12", "--vocab",
                                "50257", "--ffn", "gelu", "--norm", "layernorm", "--positions", "1024", "--tied"}));
  CHECK(j["params"]["total"].get<int64_t>() == 124337664);
  CHECK(j["totals"]["forward"].get<uint64_t>() == 291648307200ULL);
  auto both = RunLmkit({"flops", "gpt2", "--layers", "3"});
  CHECK(both.exit_code == 2);
}

TEST_CASE("flops cli: conventions are flags", "[accounting][cli]") {
  auto full = StdoutJson(RunLmkit({"flops", "--json", "llama-2-7b", "--seq-len", "4096"}));
  auto half = StdoutJson(RunLmkit({"flops", "--json", "llama-2-7b", "--seq-len", "4096", "--causal-half"}));
  CHECK(2 * half["components"]["attention scores"].get<uint64_t>() ==
        full["components"]["attention scores"].get<uint64_t>());
  auto nohead = StdoutJson(RunLmkit({"flops", "--json", "llama-2-7b", "--no-lm-head"}));
  CHECK(nohead["components"]["LM head"].get<uint64_t>() == 0);
  auto macs = RunLmkit({"flops", "llama-2-7b", "--macs"});
  CHECK(macs.out.find("MACs") != std::string::npos);
  auto help = RunLmkit({"flops", "--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("FLOP = 2 x MAC") != std::string::npos);
  CHECK(help.out.find("--causal-half") != std::string::npos);
}

TEST_CASE("flops cli: GPU step time, tokens/s and roofline", "[accounting][cli]") {
  auto r = RunLmkit({"flops", "llama-3-8b", "--gpu", "h100", "--mfu", "0.4", "--training", "--seq-len", "4096"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("tokens/s") != std::string::npos);
  CHECK(r.out.find("Roofline, prefill") != std::string::npos);
  CHECK(r.out.find("Roofline, one decode step") != std::string::npos);
  CHECK(r.out.find("memory") != std::string::npos);
  auto j = StdoutJson(RunLmkit({"flops", "--json", "llama-3-8b", "--gpu", "h100", "--mfu", "0.4", "--training"}));
  double secs = j["step_time"]["seconds"].get<double>();
  CHECK(secs == Approx(j["totals"]["training"].get<double>() / (989.4e12 * 0.4)));
  CHECK(j["roofline"]["decode"]["matmuls"].size() > 5);
  auto nogpu = RunLmkit({"flops", "gpt2", "--mfu", "0.5"});
  CHECK(nogpu.exit_code == 2);
  auto badgpu = RunLmkit({"flops", "gpt2", "--gpu", "h1000"});
  CHECK(badgpu.exit_code == 1);
  CHECK(badgpu.err.find("unknown GPU") != std::string::npos);
}

// A mistyped preset or GPU name gets the nearest one, as an unknown command does; nonsense gets only the list.
TEST_CASE("flops cli: unknown preset and GPU names suggest the nearest", "[accounting][cli]") {
  auto preset = RunLmkit({"flops", "lama-2-7b"});
  CHECK(preset.exit_code == 1);
  CHECK(preset.err.rfind("lmkit flops: lama-2-7b: no such model file or preset; did you mean 'llama-2-7b'? (presets: ",
                         0) == 0);
  auto gpu = RunLmkit({"flops", "gpt2", "--gpu", "h2000"});
  CHECK(gpu.exit_code == 1);
  CHECK(gpu.err.rfind("lmkit flops: h2000: unknown GPU; did you mean 'H200-SXM-141GB'? (known: ", 0) == 0);
  auto far = RunLmkit({"flops", "gpt2", "--gpu", "zzz"});
  CHECK(far.exit_code == 1);
  CHECK(far.err.rfind("lmkit flops: zzz: unknown GPU (known: ", 0) == 0);
}

TEST_CASE("flops cli: csv and markdown", "[accounting][cli]") {
  auto csv = RunLmkit({"flops", "gpt2", "--format", "csv"});
  REQUIRE(csv.exit_code == 0);
  CHECK(csv.out.find("layer,matmul,M,K,N,count,FLOPs,share") != std::string::npos);
  auto md = RunLmkit({"flops", "gpt2", "--format", "md"});
  REQUIRE(md.exit_code == 0);
  CHECK(md.out.find("| layer | matmul | M | K | N | count | FLOPs | share |") != std::string::npos);
  CHECK(RunLmkit({"flops", "gpt2", "--format", "xml"}).exit_code == 2);
}

TEST_CASE("flops cli: sweep prints one table and writes a valid SVG", "[accounting][cli]") {
  TempDir dir;
  std::string svg = dir.file("shares.svg");
  auto r = RunLmkit({"flops", "cs336-gpt2-xl", "--sweep", "seq-len=1024,4096,16384", "--svg", svg});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("Sweep over seq-len") != std::string::npos);
  CHECK(r.out.find("149,522,795,724,800") != std::string::npos);
  CHECK(CountOf(r.out, "Matmuls of one forward step") == 0);  // one table only
  std::string s = ReadAll(svg);
  REQUIRE(!s.empty());
  lmkit::test::CheckSvgFile(svg);
  CHECK(s.rfind("<?xml", 0) == 0);
  CHECK(s.find("<svg xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  for (const char* series : {"attention projections", "attention scores", "attention x V", "FFN/experts", "LM head"})
    CHECK(CountOf(s, std::string("data-series=\"") + series + "\"") == 1);
  CHECK(CountOf(s, "data-series=\"router\"") == 0);  // dense model: no router series
  CHECK(CountOf(s, "data-point=\"seq-len 16384\"") == 5);
  CHECK(CountOf(s, "<rect ") == 1 + 3 * 5 + 5);  // background, bars, legend swatches
  auto models = RunLmkit({"flops", "--sweep", "model=gpt2,mixtral-8x7b-v0.1", "--json"});
  auto j = StdoutJson(models);
  CHECK(j["sweep"]["points"].size() == 2);
  CHECK(j["sweep"]["points"][1]["components"]["router"].get<uint64_t>() > 0);
  auto timed = StdoutJson(RunLmkit(
      {"flops", "--json", "llama-3-8b", "--sweep", "batch=1,8", "--gpu", "h100", "--mfu", "0.5", "--training"}));
  auto& pts = timed["sweep"]["points"];
  REQUIRE(pts.size() == 2);
  CHECK(pts[1]["step_time"]["seconds"].get<double>() == Approx(pts[1]["training"].get<double>() / (989.4e12 * 0.5)));
  CHECK(pts[1]["training"].get<uint64_t>() == 8 * pts[0]["training"].get<uint64_t>());
  CHECK(RunLmkit({"flops", "gpt2", "--sweep", "depth=1,2"}).exit_code == 2);
  CHECK(RunLmkit({"flops", "gpt2", "--svg", svg}).exit_code == 2);
}

TEST_CASE("flops cli: bad configs name the field and the file", "[accounting][cli]") {
  TempDir dir;
  std::string unknown = dir.file("unknown.json");
  WriteAll(unknown, R"({"model_type": "rwkv", "hidden_size": 64})");
  auto a = RunLmkit({"flops", unknown});
  CHECK(a.exit_code == 1);
  CHECK(a.err.find(unknown) != std::string::npos);
  CHECK(a.err.find("model_type 'rwkv' is not supported") != std::string::npos);
  CHECK(std::count(a.err.begin(), a.err.end(), '\n') == 1);
  std::string heads = dir.file("heads.json");
  WriteAll(heads, R"({"model_type": "llama", "hidden_size": 100, "num_attention_heads": 7, "num_hidden_layers": 2,
                     "intermediate_size": 256, "vocab_size": 1000})");
  auto b = RunLmkit({"flops", heads});
  CHECK(b.exit_code == 1);
  CHECK(b.err.find(heads) != std::string::npos);
  CHECK(b.err.find("'num_attention_heads'") != std::string::npos);
  std::string zero = dir.file("zero.json");
  WriteAll(zero, R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 0,
                    "intermediate_size": 256, "vocab_size": 1000})");
  auto c = RunLmkit({"memory", zero});
  CHECK(c.exit_code == 1);
  CHECK(c.err.find("layer") != std::string::npos);
  std::string missing = dir.file("missing.json");
  WriteAll(missing, R"({"model_type": "mixtral", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                       "intermediate_size": 256, "vocab_size": 1000})");
  auto d = RunLmkit({"flops", missing});
  CHECK(d.exit_code == 1);
  CHECK(d.err.find("missing field 'num_local_experts'") != std::string::npos);
  auto e = RunLmkit({"flops", "no-such-model"});
  CHECK(e.exit_code == 1);
  CHECK(e.err.find("presets:") != std::string::npos);
  // A directory holding config.json works like the file.
  TempDir model_dir;
  WriteAll(model_dir.file("config.json"), ReadAll(lmkit::test::RepoPath("data/models/llama-2-7b.json")));
  auto f = StdoutJson(RunLmkit({"flops", "--json", model_dir.path()}));
  CHECK(f["params"]["total"].get<int64_t>() == 6738415616);
}

TEST_CASE("memory cli: CS336 adamwAccounting line and largest batch", "[accounting][cli]") {
  auto j = StdoutJson(RunLmkit({"memory", "--json", "cs336-gpt2-xl", "--dtype", "fp32", "--activations", "cs336",
                                "--overhead-gib", "0", "--capacity-gb", "80"}));
  CHECK(j["memory"]["fixed"].get<uint64_t>() == 34032921600ULL);
  CHECK(j["memory"]["per_sequence"].get<uint64_t>() == 15517753344ULL);
  CHECK(j["memory"]["max_batch"].get<int64_t>() == 2);
  CHECK(j["memory"]["fits"].get<bool>());
  auto t = RunLmkit({"memory", "cs336-gpt2-xl", "--dtype", "fp32", "--activations", "cs336", "--overhead-gib", "0",
                     "--capacity-gb", "80", "--batch", "3"});
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("total(batch) = 15,517,753,344 * batch + 34,032,921,600 bytes") != std::string::npos);
  CHECK(t.out.find("does not fit") != std::string::npos);
  CHECK(t.out.find("largest batch per GPU that fits: 2") != std::string::npos);
}

TEST_CASE("memory cli: inference KV cache, ZeRO, sweeps", "[accounting][cli]") {
  auto inf = StdoutJson(
      RunLmkit({"memory", "--json", "llama-2-7b", "--mode", "inference", "--seq-len", "2048", "--gpu", "a100-80"}));
  CHECK(inf["memory"]["kv_bytes_per_token"].get<uint64_t>() == 524288);
  CHECK(inf["memory"]["kv_cache"].get<uint64_t>() == 1073741824ULL);
  CHECK(inf["memory"]["fits"].get<bool>());
  auto ds = StdoutJson(RunLmkit({"memory", "--json", "deepseek-v3", "--mode", "inference", "--seq-len", "1"}));
  CHECK(ds["memory"]["kv_bytes_per_token"].get<uint64_t>() == 70272);
  auto z = StdoutJson(RunLmkit({"memory", "--json", "llama-2-7b", "--zero", "3", "--gpus", "8"}));
  CHECK(z["memory"]["weights"].get<uint64_t>() == 2ULL * 6738415616ULL / 8);
  CHECK(RunLmkit({"memory", "gpt2", "--zero", "4"}).exit_code == 2);
  CHECK(RunLmkit({"memory", "gpt2", "--mode", "train", "--dtype", "int8"}).exit_code == 2);
  TempDir dir;
  std::string svg = dir.file("mem.svg");
  auto sw = RunLmkit({"memory", "llama-3-8b", "--gpu", "h100", "--sweep", "batch=1,2,4,8", "--svg", svg});
  REQUIRE(sw.exit_code == 0);
  CHECK(sw.out.find("Sweep over batch") != std::string::npos);
  std::string s = ReadAll(svg);
  lmkit::test::CheckSvgFile(svg);
  for (const char* series : {"weights", "gradients", "optimizer state", "activations", "overhead"})
    CHECK(CountOf(s, std::string("data-series=\"") + series + "\"") == 1);
  CHECK(CountOf(s, "data-series=\"KV cache\"") == 0);  // training holds no KV cache: not drawn as an empty series
  auto help = RunLmkit({"memory", "--help"});
  CHECK(help.out.find("Korthikanti") != std::string::npos);
}

TEST_CASE("flops cli: negative optional dimension flags are errors, not the default", "[accounting][cli]") {
  // 0 means "default" on these flags; a negative value used to fall through to the default silently.
  const std::vector<std::string> base = {"flops",   "--layers", "2",       "--d-model", "768",
                                         "--heads", "12",       "--vocab", "100"};
  for (const char* flag : {"--kv-heads", "--head-dim", "--d-ff", "--experts", "--top-k", "--expert-d-ff"}) {
    auto args = base;
    args.insert(args.end(), {flag, "-4"});
    auto r = RunLmkit(args);
    INFO(flag);
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(r.err == std::string("lmkit flops: ") + flag + ": must not be negative (got -4)\n");
  }
  auto p =
      RunLmkit({"memory", "--layers", "2", "--d-model", "768", "--heads", "12", "--vocab", "100", "--positions", "-5"});
  CHECK(p.exit_code == 1);
  CHECK(p.err == "lmkit memory: explicit dimensions: field 'n_positions' must not be negative (got -5)\n");
}

TEST_CASE("flops cli: a sweep with an empty or out-of-range value is a usage error", "[accounting][cli]") {
  TempDir dir;
  std::string svg = dir.file("chart.svg");
  // "1,,2" used to drop the empty value and print a two-point table; a value past 2^63 was clamped to INT64_MAX.
  auto a = RunLmkit({"flops", "gpt2", "--sweep", "seq-len=1,,2", "--svg", svg});
  CHECK(a.exit_code == 2);
  CHECK(a.out.empty());
  CHECK(a.err == "lmkit flops: --sweep seq-len: empty value in '1,,2'\n");
  CHECK(ReadAll(svg).empty());
  auto b = RunLmkit({"memory", "gpt2", "--sweep", "batch=4,"});
  CHECK(b.exit_code == 2);
  CHECK(b.err == "lmkit memory: --sweep batch: empty value in '4,'\n");
  auto c = RunLmkit({"flops", "gpt2", "--sweep", "seq-len=99999999999999999999999"});
  CHECK(c.exit_code == 2);
  CHECK(c.err == "lmkit flops: --sweep seq-len: '99999999999999999999999' is not a positive integer\n");
  auto d = RunLmkit({"flops", "gpt2", "--sweep", "seq-len="});
  CHECK(d.exit_code == 2);
  CHECK(d.err == "lmkit flops: --sweep seq-len has no values\n");
}

TEST_CASE("memory cli: NaN, infinite or huge --overhead-gib and --capacity-gb are usage errors", "[accounting][cli]") {
  // These used to print an overflowed overhead (9,223,372,036,854,775,808 bytes), "fits in inf ZB" with a largest
  // batch of -9223372036854775808, or (NaN capacity) no fit verdict at all.
  auto a = RunLmkit({"memory", "gpt2", "--overhead-gib", "nan"});
  CHECK(a.exit_code == 2);
  CHECK(a.out.empty());
  CHECK(a.err == "lmkit memory: --overhead-gib must be a number from 0 to 1e9 (got nan)\n");
  CHECK(RunLmkit({"memory", "gpt2", "--overhead-gib", "1e30"}).exit_code == 2);
  auto b = RunLmkit({"memory", "gpt2", "--capacity-gb", "inf"});
  CHECK(b.exit_code == 2);
  CHECK(b.err == "lmkit memory: --capacity-gb must be a number from 0 to 1e9 (got inf)\n");
  CHECK(RunLmkit({"memory", "gpt2", "--capacity-gb", "nan"}).exit_code == 2);
  CHECK(RunLmkit({"memory", "gpt2", "--capacity-gb", "1e300"}).exit_code == 2);
  // The bounds themselves are accepted and give exact, non-negative numbers.
  auto c = StdoutJson(RunLmkit({"memory", "--json", "gpt2", "--capacity-gb", "1e9", "--overhead-gib", "0"}));
  CHECK(c["memory"]["fits"].get<bool>());
  CHECK(c["memory"]["max_batch"].get<int64_t>() > 0);
}

TEST_CASE("flops cli: a tiny --mfu gives finite, non-overflowed times, and --steps is checked", "[accounting][cli]") {
  // --mfu 1e-300 is inside (0, 1]; its step time (~3e296 s) used to print as 9,223,372,036,854,775,808 days (llround
  // past 2^63), and with --steps 2^63-1 the JSON total_seconds was null (infinity).
  auto a = RunLmkit({"flops", "gpt2", "--gpu", "h100", "--mfu", "1e-300"});
  REQUIRE(a.exit_code == 0);
  CHECK(a.out.find("9,223,372,036,854,775,808") == std::string::npos);
  CHECK(a.out.find("forward step at MFU 0.00: 3.41e+291 days per step") != std::string::npos);
  auto b = RunLmkit({"flops", "gpt2", "--gpu", "h100", "--mfu", "1e-300", "--steps", "9223372036854775807", "--json"});
  CHECK(b.exit_code == 2);
  CHECK(b.out.empty());
  CHECK(b.err ==
        "lmkit flops: --steps 9223372036854775807 x the step time overflows; use fewer steps or a larger --mfu\n");
  auto c = RunLmkit({"flops", "gpt2", "--gpu", "h100", "--mfu", "0.5", "--steps", "-3"});
  CHECK(c.exit_code == 2);
  CHECK(c.err == "lmkit flops: --steps must be positive (got -3)\n");
}

TEST_CASE("memory: training-only flags with --mode inference get one note on stderr, not silence",
          "[cli][accounting]") {
  auto r = lmkit::test::RunLmkit(
      {"memory", "gpt2", "--mode", "inference", "--optimizer", "sgd", "--zero", "1", "--format", "json"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err == "lmkit memory: note: --optimizer, --zero only apply to --mode training; ignored\n");
  // The same numbers as without them (only the echoed "options" differ): they were ignored, as the note says.
  auto plain = lmkit::test::RunLmkit({"memory", "gpt2", "--mode", "inference", "--format", "json"});
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.err.empty());
  lmkit::Json a = StdoutJson(plain), b = StdoutJson(r);
  CHECK(b["options"]["optimizer"] == "sgd");
  a.erase("options");
  b.erase("options");
  CHECK(a == b);
  CHECK(lmkit::test::RunLmkit({"-q", "memory", "gpt2", "--mode", "inference", "--optimizer", "sgd"}).err.empty());
  CHECK(lmkit::test::RunLmkit({"memory", "gpt2", "--optimizer", "sgd"}).err.empty());  // training: no note
}

TEST_CASE("flops: --dtype without --gpu is a usage error, as --mfu is", "[cli][accounting]") {
  // FLOP counts do not depend on the dtype: without a GPU the flag changed nothing and said nothing.
  auto r = RunLmkit({"flops", "gpt2", "--dtype", "fp8"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit flops: --dtype needs --gpu (it picks the GPU's peak and the roofline's bytes)\n");
  CHECK(r.out.empty());
  // With a GPU it selects the peak: fp8 on an H100 doubles bf16's.
  auto bf = StdoutJson(RunLmkit({"flops", "gpt2", "--gpu", "h100", "--format", "json"}));
  auto f8 = StdoutJson(RunLmkit({"flops", "gpt2", "--gpu", "h100", "--dtype", "fp8", "--format", "json"}));
  CHECK(bf["gpu"]["dtype"] == "bf16");
  CHECK(f8["gpu"]["dtype"] == "fp8");
  CHECK(f8["gpu"]["peak_flops"].get<double>() == Approx(2 * bf["gpu"]["peak_flops"].get<double>()).epsilon(1e-3));
}

// #31: a given --mfu of 0 is refused (it used to be read as "no --mfu" and print no step time, silently).
TEST_CASE("flops cli: --mfu 0 is a usage error, and roofline options need --gpu", "[cli][accounting]") {
  auto r = RunLmkit({"flops", "gpt2", "--gpu", "h100", "--mfu", "0"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "lmkit flops: --mfu must be in (0, 1] (got 0)\n");
  auto kv = RunLmkit({"flops", "gpt2", "--kv-dtype", "fp8"});
  CHECK(kv.exit_code == 2);
  CHECK(kv.err == "lmkit flops: --kv-dtype needs --gpu (it sets the roofline's KV cache bytes)\n");
  auto at = RunLmkit({"flops", "gpt2", "--gpu", "h100", "--attention", "paged"});
  CHECK(at.exit_code == 2);
  CHECK(at.err == "lmkit flops: --attention must be fused or unfused (got 'paged')\n");
  auto both = RunLmkit({"flops", "gpt2", "--gpu", "h100", "--gpu-spec", "x.json"});
  CHECK(both.exit_code == 2);
  CHECK(both.err == "lmkit flops: give either --gpu or --gpu-spec, not both\n");
}

TEST_CASE("flops cli: MFU and HFU, fused attention, the conventions in --help", "[cli][accounting]") {
  auto r = RunLmkit({"flops", "llama-3-8b", "--gpu", "h100", "--mfu", "0.4", "--training", "--seq-len", "8192",
                     "--recompute", "full"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("training step at MFU 0.40: 1.20 s per step") != std::string::npos);
  CHECK(r.out.find("; HFU 0.53 (recomputation counted)") != std::string::npos);
  CHECK(r.out.find("full recomputation runs the layers' forward again (not the LM head)") != std::string::npos);
  CHECK(r.out.find("attention (fused)") != std::string::npos);
  CHECK(r.out.find("--attention unfused materialises QK^T") != std::string::npos);
  auto help = RunLmkit({"flops", "--help"});
  for (const char* s : {"MFU divides model FLOPs", "HFU", "not the LM head", "--recompute selective",
                        "excludes the input tables", "--attention unfused", "--quant-scope all", "--kv-dtype"})
    CHECK(help.out.find(s) != std::string::npos);
  auto mhelp = RunLmkit({"memory", "--help"});
  for (const char* s : {"Linear layers", "--kv-dtype", "replicated, as vLLM does", "must\n    divide the heads"})
    CHECK(mhelp.out.find(s) != std::string::npos);
}

TEST_CASE("memory cli: tensor parallelism, fp8 Linear layers and the KV cache dtype", "[cli][accounting]") {
  auto bad = RunLmkit({"memory", "llama-3-8b", "--mode", "inference", "--gpus", "3"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err ==
        "lmkit memory: --gpus (3) must divide the attention heads (32): tensor parallelism splits whole "
        "heads\n");
  auto tp = StdoutJson(RunLmkit({"memory", "--json", "llama-3-8b", "--mode", "inference", "--gpus", "16"}));
  CHECK(tp["memory"]["kv_heads_per_gpu"] == 1);
  CHECK(tp["memory"]["kv_bytes_per_token_gpu"] == 131072 / 8);
  auto fp8 = StdoutJson(RunLmkit({"memory", "--json", TestData("accounting/llama-3-70b.json"), "--mode", "inference",
                                  "--dtype", "fp8", "--overhead-gib", "0"}));
  CHECK(fp8["memory"]["weights"] == 72669806592ULL);
  auto all = StdoutJson(RunLmkit({"memory", "--json", TestData("accounting/llama-3-70b.json"), "--mode", "inference",
                                  "--dtype", "fp8", "--quant-scope", "all", "--overhead-gib", "0"}));
  CHECK(all["memory"]["weights"] == 70567397888ULL);
  auto kv = StdoutJson(
      RunLmkit({"memory", "--json", "llama-3-8b", "--mode", "inference", "--kv-dtype", "fp8", "--seq-len", "1000"}));
  CHECK(kv["memory"]["kv_cache"] == 1000 * 65536);
  // Inference-only choices in training mode get the note training-only ones get in inference.
  auto note = RunLmkit({"memory", "gpt2", "--kv-dtype", "fp8"});
  REQUIRE(note.exit_code == 0);
  CHECK(note.err == "lmkit memory: note: --kv-dtype only apply to --mode inference; ignored\n");
  // --gpu-spec gives the capacity.
  TempDir dir;
  WriteAll(dir.file("g.json"), R"({"name": "Tiny", "memory_gb": 1, "bandwidth_tb_s": 1, "dense_tflops": {"bf16": 1}})");
  auto spec = StdoutJson(RunLmkit({"memory", "--json", "gpt2", "--gpu-spec", dir.file("g.json")}));
  CHECK(spec["gpu"]["name"] == "Tiny");
  CHECK(spec["memory"]["fits"] == false);
}

TEST_CASE("flops cli: an unsupported model_type points to the explicit dimensions", "[cli][accounting]") {
  TempDir dir;
  std::string f = dir.file("rwkv.json");
  WriteAll(f, R"({"model_type": "rwkv", "hidden_size": 64})");
  auto r = RunLmkit({"flops", f});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("; describe it by explicit dimensions instead (--layers, --d-model, --heads, --vocab ...)\n") !=
        std::string::npos);
  // A new family through the binary: Gemma-2-9B's published count.
  auto j = StdoutJson(RunLmkit({"flops", "--json", TestData("accounting/gemma-2-9b.json")}));
  CHECK(j["params"]["total"] == 9241705984LL);
  CHECK(j["model"]["attn_logit_softcap"] == 50.0);
}
