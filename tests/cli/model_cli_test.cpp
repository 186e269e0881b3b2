// `lmkit generate`, `lmkit eval` and `lmkit calibrate --model` end to end: the golden greedy decode, self-comparison,
// the calibration table schema shared with file calibration, and one-line errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "lmkit/common/json.h"
#include "lmkit/io/token_file.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using lmkit::test::ReadAll;
using lmkit::test::RunLmkit;
using lmkit::test::TempDir;
using lmkit::test::TestData;

namespace {

const std::string kCliModel = TestData("model/stories260K");

Json Parse(const std::string& s) {
  auto j = ParseJson(s, "out");
  REQUIRE(j.ok());
  return *j;
}

std::set<std::string> Keys(const Json& j) {
  std::set<std::string> k;
  for (auto it = j.begin(); it != j.end(); ++it) k.insert(it.key());
  return k;
}

}  // namespace

TEST_CASE("generate: greedy decode from BOS reproduces golden_greedy.json", "[model][cli]") {
  const Json g = Parse(ReadAll(kCliModel + "/golden_greedy.json"));
  auto r = RunLmkit({"--json", "generate", kCliModel, "--prompt-ids", "1", "--max-tokens", "63", "--logits"});
  REQUIRE(r.exit_code == 0);
  const Json j = Parse(r.out);
  CHECK(j["sequences"][0] == g["tokens"]);
  double worst = 0;
  for (size_t i = 0; i < 512; ++i)
    worst = std::max(worst, std::fabs(j["final_logits"][i].get<double>() - g["final_logits"][i].get<double>()));
  CHECK(worst < 1e-4);
  // Text output: the ids on one line.
  auto t = RunLmkit({"generate", kCliModel, "--prompt-ids", "1", "--max-tokens", "3"});
  CHECK(t.exit_code == 0);
  CHECK(t.out == "1 461 461 401\n");
  // Sampling is reproducible from the seed and independent of the thread count.
  TempDir d;
  auto s1 = RunLmkit({"-j", "1", "generate", kCliModel, "--prompt-ids", "1", "--max-tokens", "20", "--temperature", "1",
                      "--seed", "7", "--samples", "3", "-o", d.file("a.npy")});
  auto s2 = RunLmkit({"-j", "3", "generate", kCliModel, "--prompt-ids", "1", "--max-tokens", "20", "--temperature", "1",
                      "--seed", "7", "--samples", "3", "-o", d.file("b.npy")});
  REQUIRE(s1.exit_code == 0);
  REQUIRE(s2.exit_code == 0);
  CHECK(ReadAll(d.file("a.npy")) == ReadAll(d.file("b.npy")));
  auto tf = io::TokenFile::Open(d.file("a.npy"));
  REQUIRE(tf.ok());
  CHECK(tf->size() == 63);
  CHECK((*tf)[21] == 1);
}

TEST_CASE("eval: a model compared with itself has KL 0 and top-1 agreement 1", "[model][cli]") {
  TempDir d;
  REQUIRE(RunLmkit({"generate", kCliModel, "--prompt-ids", "1", "--max-tokens", "99", "--temperature", "1", "--seed",
                    "3", "--samples", "2", "-o", d.file("t.bin")})
              .exit_code == 0);
  auto r =
      RunLmkit({"--json", "eval", kCliModel, "--tokens", d.file("t.bin"), "--compare", kCliModel, "--seq-len", "100"});
  REQUIRE(r.exit_code == 0);
  const Json j = Parse(r.out);
  CHECK(j["sequences"] == 2);
  CHECK(j["tokens_scored"] == 198);
  CHECK(j["perplexity"].get<double>() > 1.0);
  CHECK(j["compare"]["mean_kl"] == 0.0);
  CHECK(j["compare"]["p99_kl"] == 0.0);
  CHECK(j["compare"]["top1_agreement"] == 1.0);
  CHECK(j["compare"]["ppl_delta"] == 0.0);
}

TEST_CASE("calibrate --model writes the same CALIB.json schema as file calibration", "[model][cli]") {
  TempDir d;
  REQUIRE(
      RunLmkit({"generate", kCliModel, "--prompt-ids", "1", "--max-tokens", "63", "-o", d.file("t.npy")}).exit_code ==
      0);
  for (const char* method : {"percentile", "minmax"}) {
    auto m = RunLmkit(
        {"calibrate", "--model", kCliModel, "--tokens", d.file("t.npy"), "--method", method, "-o", d.file("m.json")});
    REQUIRE(m.exit_code == 0);
    auto f = RunLmkit({"calibrate", TestData("quant/laplace_acts.npy"), "--method", method, "-o", d.file("f.json")});
    REQUIRE(f.exit_code == 0);
    const Json mj = Parse(ReadAll(d.file("m.json"))), fj = Parse(ReadAll(d.file("f.json")));
    CHECK(Keys(mj) == Keys(fj));
    CHECK(mj["method"] == fj["method"]);
    REQUIRE(mj["tensors"].size() == 35);
    CHECK(Keys(mj["tensors"]["model.layers.4.mlp.down_proj"]) == Keys(fj["tensors"]["laplace_acts"]));
    const double amax = mj["tensors"]["model.layers.0.self_attn.o_proj"]["amax"].get<double>();
    CHECK(amax > 0);
    CHECK(amax <= mj["tensors"]["model.layers.0.self_attn.o_proj"]["max"].get<double>() -
                      mj["tensors"]["model.layers.0.self_attn.o_proj"]["min"].get<double>());
  }
  // The table drives a static w8a8 quantization that eval loads.
  REQUIRE(RunLmkit({"quantize", kCliModel, "-o", d.file("q"), "--scheme", "w8a8", "--calibration", d.file("m.json")})
              .exit_code == 0);
  auto e = RunLmkit({"--json", "eval", kCliModel, "--tokens", d.file("t.npy"), "--compare", d.file("q")});
  REQUIRE(e.exit_code == 0);
  CHECK(Parse(e.out)["compare"]["mode"] == "w8a8-static");
}

TEST_CASE("model commands: bad inputs are one-line errors", "[model][cli]") {
  TempDir d;
  {
    auto w = io::TokenWriter::Create(d.file("big.bin"), io::TokenFormat::kBin, io::TokenDtype::kU16);
    REQUIRE(w.ok());
    const std::vector<uint32_t> ids = {1, 2, 9999};
    REQUIRE(w->Append(ids).ok());
    REQUIRE(w->Commit().ok());
  }
  auto r = RunLmkit({"eval", kCliModel, "--tokens", d.file("big.bin")});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit eval: " + d.file("big.bin") + ": token id 9999 at index 2 is >= vocab_size 512\n");
  r = RunLmkit(
      {"calibrate", "--model", kCliModel, "--tokens", d.file("big.bin"), "--method", "minmax", "-o", d.file("c.json")});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("token id 9999 at index 2 is >= vocab_size 512") != std::string::npos);
  r = RunLmkit({"generate", kCliModel, "--prompt-ids", "1,600", "--max-tokens", "2"});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit generate: " + kCliModel + ": prompt token id 600 at position 1 is >= vocab_size 512\n");
  r = RunLmkit({"generate", kCliModel, "--prompt-ids", "1", "--max-tokens", "600"});
  CHECK(r.exit_code == 2);
  r = RunLmkit({"eval", d.file("nope"), "--tokens", d.file("big.bin")});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit eval: " + d.file("nope") + ": no such file or directory\n");
  r = RunLmkit({"calibrate", "--model", kCliModel, "--method", "minmax", "-o", d.file("c.json")});
  CHECK(r.exit_code == 2);
  r = RunLmkit({"calibrate", TestData("quant/laplace_acts.npy"), "--model", kCliModel, "--tokens", d.file("big.bin"),
                "--method", "minmax", "-o", d.file("c.json")});
  CHECK(r.exit_code == 2);
  // Flags that changed nothing where they were given: now usage errors that say where they apply.
  r = RunLmkit({"generate", kCliModel, "--prompt-ids", "1", "--max-tokens", "2", "--logits"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit generate: --logits needs --json (the logits go into the JSON)\n");
  CHECK(r.out.empty());
  {
    auto w = io::TokenWriter::Create(d.file("ok.npy"), io::TokenFormat::kNpy, io::TokenDtype::kU16);
    REQUIRE(w.ok());
    const std::vector<uint32_t> ids = {1, 2, 3, 4};
    REQUIRE(w->Append(ids).ok());
    REQUIRE(w->Commit().ok());
  }
  r = RunLmkit({"eval", kCliModel, "--tokens", d.file("ok.npy"), "--dtype", "u32"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit eval: --dtype applies to .bin token files (a .npy header gives its own dtype)\n");
  CHECK(RunLmkit({"eval", kCliModel, "--tokens", d.file("ok.npy")}).exit_code == 0);
}
