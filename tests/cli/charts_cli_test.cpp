// Every SVG lmkit writes, end to end through `--svg`: it parses as XML, its text fits the viewBox, legend colours are
// distinct and rsvg-convert renders it (support/svg_check.h); then what each chart must show: the memory map's 9
// series with semantic colours, the four calibration thresholds at the values the methods compute, per-layer
// quantization error, KL by position. The docs charts are what scripts/docs-charts.sh makes now.
#include <catch2/catch.hpp>
#include <cmath>
#include <regex>
#include <set>

#include "lmkit/common/json.h"
#include "lmkit/present/chart.h"
#include "support/run_lmkit.h"
#include "support/svg_check.h"

using namespace lmkit;
using lmkit::test::CheckSvgFile;
using lmkit::test::CountOf;
using lmkit::test::ReadAll;
using lmkit::test::RunLmkit;
using lmkit::test::StdoutJson;
using lmkit::test::TempDir;
using lmkit::test::TestData;

namespace {

const std::string kModel = TestData("model/stories260K");

// The value in "<title>NAME: VALUE</title>" of a marker line.
double MarkerValue(const std::string& svg, const std::string& name) {
  const std::string key = "<title>" + name + ": ";
  const size_t at = svg.find(key);
  REQUIRE(at != std::string::npos);
  return std::stod(svg.substr(at + key.size()));
}

void RunOk(const std::vector<std::string>& args) {
  auto r = RunLmkit(args);
  INFO(args[0] << ": " << r.err);
  REQUIRE(r.exit_code == 0);
}

}  // namespace

TEST_CASE("charts: the plan memory map shows all 9 series in distinct colours, free and reserved as neutrals",
          "[cli][charts]") {
  TempDir d;
  const std::string svg = d.file("map.svg");
  RunOk({"plan", TestData("plan/serving.json"), "--svg", svg});
  CheckSvgFile(svg);
  const std::string s = ReadAll(svg);
  for (const char* name : {"reserved (context, workspaces)", "chat", "support#1", "support#2", "code", "embed",
                           "ranker", "fragmentation margin", "free"})
    CHECK(CountOf(s, std::string("data-series=\"") + name + "\"") == 1);
  CHECK(CountOf(s, "class=\"swatch\"") == 9);
  CHECK(s.find("data-series=\"free\" fill=\"" + present::RoleColour(present::Role::kFree) + "\"") != std::string::npos);
  CHECK(s.find("data-series=\"reserved (context, workspaces)\" fill=\"" +
               present::RoleColour(present::Role::kReserved) + "\"") != std::string::npos);
  // The title is drawn whole (wrapped, not cut): its words are all in the text elements.
  for (const char* word : {"GPU", "memory", "map:", "H100-SXM5-80GB", "(80.00", "GB", "each;", "share", "capacity)"})
    CHECK(
        (s.find(std::string(">") + word) != std::string::npos || s.find(std::string(" ") + word) != std::string::npos));
  CHECK(s.find("\xE2\x80\xA6") == std::string::npos);  // nothing shortened
}

TEST_CASE("charts: flops and memory sweeps", "[cli][charts]") {
  TempDir d;
  RunOk({"flops", "cs336-gpt2-xl", "--sweep", "seq-len=1024,4096,16384", "--svg", d.file("f.svg")});
  CheckSvgFile(d.file("f.svg"));
  RunOk({"flops", "--sweep", "model=gpt2,mixtral-8x7b-v0.1,llama-3-8b,qwen2.5-0.5b", "--svg", d.file("m.svg")});
  CheckSvgFile(d.file("m.svg"));
  CHECK(CountOf(ReadAll(d.file("m.svg")), "data-series=\"router\"") == 1);
  RunOk({"memory", "llama-3-8b", "--gpu", "h100", "--sweep", "batch=1,2,4,8", "--svg", d.file("t.svg")});
  CheckSvgFile(d.file("t.svg"));
  // Inference has no gradients or optimizer state: those series are left out rather than drawn empty.
  RunOk(
      {"memory", "llama-3-8b", "--mode", "inference", "--sweep", "seq-len=1024,8192,32768", "--svg", d.file("i.svg")});
  CheckSvgFile(d.file("i.svg"));
  const std::string i = ReadAll(d.file("i.svg"));
  CHECK(CountOf(i, "data-series=\"gradients\"") == 0);
  CHECK(CountOf(i, "data-series=\"KV cache\"") == 1);
}

TEST_CASE("charts: calibrate --svg marks each method's threshold at the value the method computes", "[cli][charts]") {
  TempDir d;
  const std::string acts = TestData("quant/laplace_acts.npy"), svg = d.file("calib.svg");
  auto r = RunLmkit({"calibrate", acts, "--method", "entropy", "-o", d.file("e.json"), "--svg", svg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("chart: " + svg + "\n") != std::string::npos);
  CheckSvgFile(svg);
  const std::string s = ReadAll(svg);
  CHECK(CountOf(s, "class=\"panel\"") == 1);
  CHECK(s.find("<path d=\"M") != std::string::npos);  // the histogram
  // The chart does not change the calibration: the table equals one written without --svg.
  RunOk({"calibrate", acts, "--method", "entropy", "-o", d.file("plain.json")});
  CHECK(ReadAll(d.file("e.json")) == ReadAll(d.file("plain.json")));
  // Every marker sits at the amax its method writes to CALIB.json (tooltips carry 4 significant digits).
  for (const auto& [method, marker] : std::vector<std::pair<std::string, std::string>>{
           {"minmax", "minmax"}, {"percentile", "percentile 99.99%"}, {"entropy", "entropy"}, {"mse", "mse"}}) {
    RunOk({"calibrate", acts, "--method", method, "-o", d.file(method + ".json")});
    auto j = ParseJson(ReadAll(d.file(method + ".json")), method);
    REQUIRE(j.ok());
    const double amax = (*j)["tensors"]["laplace_acts"]["amax"].get<double>();
    INFO(method << " amax " << amax);
    CHECK(MarkerValue(s, marker) == Approx(amax).epsilon(5e-4));
    CHECK(CountOf(s, "<title>" + marker + ": ") == 1);
  }
  // minmax with --svg keeps its CALIB.json (no bins) and still draws the histogram.
  RunOk({"calibrate", acts, "--method", "minmax", "-o", d.file("mm.json"), "--svg", d.file("mm.svg")});
  CHECK(ReadAll(d.file("mm.json")) == ReadAll(d.file("minmax.json")));
  CheckSvgFile(d.file("mm.svg"));
  // The ort flavour builds other histograms: a usage error naming the flag, and nothing written.
  auto ort = RunLmkit(
      {"calibrate", acts, "--method", "entropy", "--flavor", "ort", "-o", d.file("o.json"), "--svg", d.file("o.svg")});
  CHECK(ort.exit_code == 2);
  CHECK(ort.err ==
        "lmkit calibrate: --svg draws the nvidia flavour's |x| histogram; the ort flavour builds other histograms\n");
  CHECK(ReadAll(d.file("o.svg")).empty());
  CHECK(ReadAll(d.file("o.json")).empty());
  CHECK(RunLmkit({"calibrate", acts, "--method", "mse", "-o", d.file("x.json"), "--svg", d.file("x.json")}).exit_code ==
        2);
}

TEST_CASE("charts: calibrate --model draws one panel per Linear input", "[cli][charts]") {
  TempDir d;
  RunOk({"generate", kModel, "--prompt-ids", "1", "--max-tokens", "63", "-o", d.file("t.npy")});
  RunOk({"calibrate", "--model", kModel, "--tokens", d.file("t.npy"), "--method", "percentile", "-o", d.file("c.json"),
         "--svg", d.file("c.svg")});
  CheckSvgFile(d.file("c.svg"));
  const std::string s = ReadAll(d.file("c.svg"));
  CHECK(CountOf(s, "class=\"panel\"") == 35);
  CHECK(CountOf(s, "class=\"legend-entry\"") == 5);
}

TEST_CASE("charts: quantize --svg draws SQNR and max error per layer", "[cli][charts]") {
  TempDir d;
  auto r = RunLmkit({"--json", "quantize", kModel, "-o", d.file("q"), "--svg", d.file("q.svg")});
  REQUIRE(r.exit_code == 0);
  CheckSvgFile(d.file("q.svg"));
  const std::string s = ReadAll(d.file("q.svg"));
  CHECK(CountOf(s, "class=\"panel\"") == 2);
  for (const char* kind : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                           "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
    CHECK(CountOf(s, std::string("data-series=\"") + kind + "\"") == 2);  // one line per panel
  // Each point's tooltip is "KIND: LAYER, VALUE": layer 3's q_proj SQNR is the report's.
  const Json j = StdoutJson(r);
  double db = 0;
  for (const Json& t : j["tensors"])
    if (t["name"] == "model.layers.3.self_attn.q_proj.weight") db = t["sqnr_db"].get<double>();
  REQUIRE(db > 0);
  std::smatch m;
  const std::string s_copy = s;
  REQUIRE(std::regex_search(s_copy, m, std::regex("<title>self_attn\\.q_proj: 3, ([0-9.]+)</title>")));
  CHECK(std::stod(m[1]) == Approx(db).epsilon(5e-4));
}

TEST_CASE("charts: eval --compare --svg draws KL by position", "[cli][charts]") {
  TempDir d;
  RunOk({"generate", kModel, "--prompt-ids", "1", "--max-tokens", "99", "--temperature", "1", "--seed", "3",
         "--samples", "3", "-o", d.file("t.bin")});
  RunOk({"quantize", kModel, "-o", d.file("q")});
  const std::string svg = d.file("kl.svg");
  RunOk({"eval", kModel, "--tokens", d.file("t.bin"), "--compare", d.file("q"), "--seq-len", "50", "--svg", svg});
  CheckSvgFile(svg);
  const std::string s = ReadAll(svg);
  CHECK(CountOf(s, "data-series=\"mean over windows\"") == 1);
  CHECK(CountOf(s, "data-series=\"max over windows\"") == 1);
  CHECK(CountOf(s, "<circle ") == 2 * 49);  // positions 1..49, both series
  auto no = RunLmkit({"eval", kModel, "--tokens", d.file("t.bin"), "--svg", d.file("n.svg")});
  CHECK(no.exit_code == 2);
  CHECK(no.err == "lmkit eval: --svg needs --compare (the chart is the KL divergence by position)\n");
}

TEST_CASE("charts: docs/*.svg are what scripts/docs-charts.sh draws from the shipped samples", "[cli][charts]") {
  TempDir d;
  const auto r = lmkit::test::RunShell("LMKIT='" + std::string(LMKIT_BINARY) + "' bash '" +
                                       lmkit::test::RepoPath("scripts/docs-charts.sh") + "' '" + d.path() + "'");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const auto made = lmkit::test::ListDir(d.path());
  CHECK(made.size() == 6);
  for (const std::string& name : made) {
    INFO(name << ": docs/" << name << " is stale; run scripts/docs-charts.sh");
    CHECK(ReadAll(d.file(name)) == ReadAll(lmkit::test::RepoPath("docs/" + name)));
  }
}
