// `lmkit quantize` on MoE models, held without transformers: the tensor names, dtypes and shapes and the
// quantization_config it writes for each MoE fixture (per-expert and fused 3-D expert layouts) equal the golden lists
// of tests/data/quant/moe_keys.json, which scripts/interop/check_ct_moe.py wrote from outputs transformers 5.24 +
// compressed-tensors 0.20.1 loaded with 0 missing / 0 unexpected keys. And `lmkit eval` of a w4a16 copy.
#include <catch2/catch.hpp>
#include <filesystem>

#include "lmkit/common/json.h"
#include "lmkit/io/safetensors.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using lmkit::test::ReadAll;
using lmkit::test::RunLmkit;
using lmkit::test::TempDir;
using lmkit::test::TestData;
namespace fs = std::filesystem;

namespace {

Json ParseOrFail(const std::string& text, const std::string& what) {
  auto j = ParseJson(text, what);
  REQUIRE(j.ok());
  return *j;
}

// [[name, dtype, shape], ...] of every tensor of the output directory's shards, sorted by name (the golden's form).
Json KeyList(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<std::pair<std::string, Json>> rows;
  for (const std::string& f : files) {
    auto st = io::SafetensorsFile::Open(f);
    REQUIRE(st.ok());
    for (const io::TensorInfo& t : st->tensors())
      rows.emplace_back(t.name, Json::array({t.name, std::string(io::DTypeName(t.dtype)), t.shape}));
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Json out = Json::array();
  for (auto& [name, row] : rows) out.push_back(std::move(row));
  return out;
}

}  // namespace

TEST_CASE("quantize: MoE outputs keep the tensor names and config transformers + compressed-tensors load",
          "[quant][cli][moe]") {
  const Json golden = ParseOrFail(ReadAll(TestData("quant/moe_keys.json")), "moe_keys.json");
  const Json& cps = golden["checkpoints"];
  REQUIRE(cps.size() >= 16);  // every MoE fixture x w8a16, w8a8, w4a16, fp8
  bool fused = false, per_expert = false;
  TempDir d;
  int n = 0;
  for (const Json& cp : cps) {
    const std::string fixture = cp["fixture"].get<std::string>();
    std::vector<std::string> args = {"-q", "quantize", TestData("model/" + fixture), "-o", d.file(std::to_string(n++))};
    for (const Json& a : cp["args"]) args.push_back(a.get<std::string>());
    INFO(fixture << " " << DumpJson(cp["args"], -1));
    auto r = RunLmkit(args);
    REQUIRE(r.exit_code == 0);
    const Json keys = KeyList(args[4]);
    CHECK(keys == cp["tensors"]);
    const Json cfg = ParseOrFail(ReadAll(args[4] + "/config.json"), "config.json");
    CHECK(cfg["quantization_config"] == cp["quantization_config"]);
    // What the goldens pin, said once more in words: routers stay 16-bit, experts are per-expert 2-D tensors.
    for (const Json& k : keys) {
      const std::string name = k[0].get<std::string>();
      CHECK(name.find(".experts.gate_up_proj") == std::string::npos);
      CHECK(name.find(".experts.down_proj") == std::string::npos);
      if (name.size() > 12 && name.compare(name.size() - 12, 12, ".gate.weight") == 0) CHECK(k[1] == "F32");
    }
    fused = fused || fixture.find("fused") != std::string::npos;
    per_expert = per_expert || fixture.find("fused") == std::string::npos;
  }
  CHECK(fused);
  CHECK(per_expert);
}

TEST_CASE("quantize: a fused expert tensor is quantized whole or not at all", "[quant][cli][moe]") {
  TempDir d;
  const std::string m = TestData("model/qwen3_moe_fused");
  auto r = RunLmkit({"quantize", m, "-o", d.file("q"), "--exclude", "experts\\.1\\.up_proj"});
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "lmkit quantize: the --include / --exclude patterns select 7 of the 8 expert matrices of the fused tensor "
        "'model.layers.0.mlp.experts.gate_up_proj'; select all of them or none\n");
  CHECK_FALSE(fs::exists(d.file("q")));
  // Excluded entirely, the fused tensors are copied as they are.
  REQUIRE(RunLmkit({"-q", "quantize", m, "-o", d.file("q2"), "--exclude", "experts"}).exit_code == 0);
  const Json keys = KeyList(d.file("q2"));
  bool kept = false;
  for (const Json& k : keys)
    if (k[0] == "model.layers.1.mlp.experts.gate_up_proj") kept = k[1] == "F32" && k[2] == Json::array({4, 64, 32});
  CHECK(kept);
}

TEST_CASE("eval: a w4a16 copy of stories260K loads (int4 groups dequantized) and stays close to the float model",
          "[quant][cli][moe]") {
  TempDir d;
  const std::string model = TestData("model/stories260K");
  REQUIRE(RunLmkit({"generate", model, "--prompt-ids", "1", "--max-tokens", "127", "--temperature", "1", "--seed", "5",
                    "--samples", "2", "-o", d.file("t.bin")})
              .exit_code == 0);
  // group:4: the largest group dividing stories260K's input widths (64 and 172).
  REQUIRE(RunLmkit({"-q", "quantize", model, "-o", d.file("q4"), "--scheme", "w4a16", "--granularity", "group:4"})
              .exit_code == 0);
  REQUIRE(RunLmkit({"-q", "quantize", model, "-o", d.file("q8"), "--scheme", "w8a16"}).exit_code == 0);
  auto e4 =
      RunLmkit({"--json", "eval", model, "--tokens", d.file("t.bin"), "--compare", d.file("q4"), "--seq-len", "128"});
  auto e8 =
      RunLmkit({"--json", "eval", model, "--tokens", d.file("t.bin"), "--compare", d.file("q8"), "--seq-len", "128"});
  REQUIRE(e4.exit_code == 0);
  REQUIRE(e8.exit_code == 0);
  const Json c4 = ParseOrFail(e4.out, "eval")["compare"], c8 = ParseOrFail(e8.out, "eval")["compare"];
  CHECK(c4["mode"] == "w4a16");
  const double kl4 = c4["mean_kl"].get<double>(), kl8 = c8["mean_kl"].get<double>();
  INFO("w4a16 KL " << kl4 << ", w8a16 KL " << kl8);
  // Measured (RTN, these 254 positions): w4a16 mean KL 1.756, top-1 0.291; w8a16 0.0353, 0.862. 16 levels per group
  // of 4 cost this 64-wide model far more than 256 per row (transformers gives the same KL on lmkit's w4a16
  // checkpoints: scripts/interop/check_ct_moe.py); a misread nibble order or scale layout gives KL > 5.
  CHECK(kl4 > 10 * kl8);
  CHECK(kl4 < 2.5);
  CHECK(c4["top1_agreement"].get<double>() > 0.2);
}
