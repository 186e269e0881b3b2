// `lmkit quantize` and `lmkit calibrate` end to end: outputs read back by lmkit's reader and by an independent Python
// reader (tests/scripts/check_quantized.py, standard library + numpy), golden calibration values, errors, determinism.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <random>
#include <span>
#include <tuple>

#include "lmkit/common/json.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/npy.h"
#include "lmkit/io/safetensors.h"
#include "support/run_lmkit.h"
#include "support/skip.h"

using namespace lmkit;
using lmkit::test::ReadAll;
using lmkit::test::RunLmkit;
using lmkit::test::TempDir;
using lmkit::test::TestData;
namespace fs = std::filesystem;

namespace {

const std::string kStories = TestData("io/stories260K");

// A python3 that has numpy: Debian's (/usr/bin/python3, from scripts/setup.sh) first, then PATH's. "" if none.
std::string Python() {
  for (const char* p : {"/usr/bin/python3", "python3"}) {
    std::string cmd = std::string(p) + " -c 'import numpy' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return p;
  }
  return "";
}

// Runs an independent checker (tests/scripts/<script>); returns its exit status and output.
std::pair<int, std::string> CheckWithPython(const std::string& args, const std::string& script = "check_quantized.py") {
  static const std::string py = Python();
  if (py.empty()) return {-1, ""};
  const auto r = lmkit::test::RunShell(py + " " + lmkit::test::RepoPath("tests/scripts/" + script) + " " + args);
  return {r.exit_code, r.out};
}

#define REQUIRE_SCRIPT_OK(script, args)                                                     \
  do {                                                                                      \
    auto [rc_, out_] = CheckWithPython(args, script);                                       \
    if (rc_ == -1) {                                                                        \
      LMKIT_SKIP_PART("python3 with numpy not found (scripts/venv.sh): independent check"); \
    } else {                                                                                \
      INFO(out_);                                                                           \
      CHECK(rc_ == 0);                                                                      \
    }                                                                                       \
  } while (0)
#define REQUIRE_PYTHON_OK(args) REQUIRE_SCRIPT_OK("check_quantized.py", args)

Json ParseOut(const std::string& s) {
  auto j = ParseJson(s, "stdout");
  REQUIRE(j.ok());
  return *j;
}

// A small checkpoint with one tensor of each role in `dtype`.
void WriteToyCheckpoint(const std::string& path, io::DType dtype, bool with_nan = false) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  auto make = [&](uint64_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = nd(rng);
    return v;
  };
  std::vector<float> proj = make(48 * 64), embed = make(32 * 64), norm(64, 1.0f), bias = make(48);
  proj[5] = 0.9f;                                        // an outlier
  for (int c = 0; c < 64; ++c) proj[7 * 64 + c] = 0.0f;  // a zero channel
  if (with_nan) proj[3 * 64 + 9] = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::vector<uint8_t>> store;
  auto bytes = [&](const std::vector<float>& v) {
    store.emplace_back(v.size() * io::DTypeSize(dtype));
    REQUIRE(io::ConvertFromF32(dtype, v.data(), store.back().data(), v.size()).ok());
    return std::span<const uint8_t>(store.back());
  };
  std::vector<io::TensorData> ts;
  ts.push_back({"model.embed_tokens.weight", dtype, {32, 64}, bytes(embed)});
  ts.push_back({"model.layers.0.mlp.up_proj.weight", dtype, {48, 64}, bytes(proj)});
  ts.push_back({"model.layers.0.mlp.up_proj.bias", dtype, {48}, bytes(bias)});
  ts.push_back({"model.norm.weight", dtype, {64}, bytes(norm)});
  REQUIRE(io::WriteSafetensors(path, ts, {{"format", "pt"}}).ok());
}

}  // namespace

TEST_CASE("quantize: stories260K round trip through an independent reader, SQNR above the floor", "[quant][cli]") {
  TempDir dir;
  const std::string out = dir.file("q");
  auto r = RunLmkit({"quantize", kStories, "-o", out, "--json", "--report", dir.file("report.json")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Json j = ParseOut(r.out);
  CHECK(ReadAll(dir.file("report.json")) == r.out);
  // 5 layers x 7 projections; embeddings (tied lm_head) and 11 norms are copied.
  CHECK(j["totals"]["tensors_quantized"] == 35);
  CHECK(j["totals"]["tensors_copied"] == 12);
  CHECK(j["totals"]["params_quantized"] == 226560);
  // Floor (docs/quant.md): per-channel noise of a row with max k*sigma is 52.9 - 20 log10(k) dB; these 64- and
  // 172-wide rows have k ~ 3-4, giving 41-43 dB. Measured: total 42.49 dB, worst tensor 41.16 dB.
  CHECK(j["totals"]["sqnr_db"].get<double>() > 42.0);
  for (const Json& t : j["tensors"]) {
    CHECK(t["sqnr_db"].get<double>() > 40.0);
    CHECK(t["cosine"].get<double>() > 0.9999);
    CHECK(t["cosine"].get<double>() <= 1.0);
    CHECK(t["max_abs_err"].get<double>() <= t["scale_max"].get<double>() * 0.50002);
  }
  // compressed-tensors pack-quantized layout read back with lmkit's reader: int32 words of 4 codes, the shape beside.
  auto f = io::SafetensorsFile::Open(out + "/model.safetensors");
  REQUIRE(f.ok());
  CHECK(f->Find("model.layers.0.self_attn.q_proj.weight") == nullptr);
  const io::TensorInfo* w = f->Find("model.layers.0.self_attn.q_proj.weight_packed");
  const io::TensorInfo* s = f->Find("model.layers.0.self_attn.q_proj.weight_scale");
  const io::TensorInfo* sh = f->Find("model.layers.0.mlp.down_proj.weight_shape");
  REQUIRE(w);
  REQUIRE(s);
  REQUIRE(sh);
  CHECK(w->dtype == io::DType::kI32);
  CHECK(w->shape == std::vector<uint64_t>{64, 16});
  CHECK(f->Find("model.layers.0.mlp.down_proj.weight_packed")->shape == std::vector<uint64_t>{64, 43});
  CHECK(sh->dtype == io::DType::kI64);
  CHECK(ReadAll(out + "/model.safetensors").find(std::string("\x40\0\0\0\0\0\0\0\xac\0\0\0\0\0\0\0", 16)) !=
        std::string::npos);  // [64, 172] as two little-endian int64
  CHECK(s->dtype == io::DType::kF32);
  CHECK(s->shape == std::vector<uint64_t>{64, 1});
  CHECK(f->Find("model.embed_tokens.weight")->dtype == io::DType::kF32);
  CHECK(f->Find("model.layers.0.self_attn.q_proj.input_scale") == nullptr);
  Json cfg = ParseOut(ReadAll(out + "/config.json"));
  const Json& qc = cfg["quantization_config"];
  CHECK(qc["quant_method"] == "compressed-tensors");
  CHECK(qc["format"] == "pack-quantized");
  CHECK(qc["config_groups"]["group_0"]["format"] == "pack-quantized");
  CHECK(qc["config_groups"]["group_0"]["weights"]["strategy"] == "channel");
  CHECK(qc["config_groups"]["group_0"]["input_activations"].is_null());
  CHECK(qc["ignore"] == Json::array({"lm_head", "model.embed_tokens"}));
  CHECK(cfg["hidden_size"] == 64);
  REQUIRE_PYTHON_OK(kStories + " " + out + " --min-tensor-sqnr 40 --min-total-sqnr 42");
}

TEST_CASE("quantize: BF16 and F16 inputs, every granularity, zero channel, scale dtype", "[quant][cli]") {
  TempDir dir;
  for (io::DType dt : {io::DType::kBF16, io::DType::kF16, io::DType::kF32}) {
    const std::string in = dir.file(std::string(io::DTypeName(dt)) + ".safetensors");
    WriteToyCheckpoint(in, dt);
    for (const char* g : {"channel", "tensor", "group:16"}) {
      const std::string out = dir.file(std::string(io::DTypeName(dt)) + g + ".out.safetensors");
      auto r = RunLmkit({"quantize", in, "-o", out, "--granularity", g, "--json"});
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      Json j = ParseOut(r.out);
      CHECK(j["totals"]["tensors_quantized"] == 1);  // embedding, bias and norm are copied
      auto f = io::SafetensorsFile::Open(out);
      REQUIRE(f.ok());
      const io::TensorInfo* s = f->Find("model.layers.0.mlp.up_proj.weight_scale");
      REQUIRE(s);
      CHECK(s->dtype == dt);
      if (std::string(g) == "channel") {
        // the zero channel (row 7) has scale 0 and codes 0 (packed as 0 + 128)
        const io::TensorInfo* w = f->Find("model.layers.0.mlp.up_proj.weight_packed");
        REQUIRE(w);
        auto codes = f->Data(*w);
        for (int c = 0; c < 64; ++c) REQUIRE(codes[7 * 64 + c] == 0x80);
        std::vector<float> sc(48);
        io::ConvertToF32(dt, f->Data(*s).data(), sc.data(), 48);
        CHECK(sc[7] == 0.0f);
      }
      // The independent reader (a Python start costs ~0.3 s): every granularity for BF16, channel for the others.
      if (dt == io::DType::kBF16 || std::string(g) == "channel") REQUIRE_PYTHON_OK(in + " " + out);
    }
  }
}

TEST_CASE("quantize: sharded model directory keeps shards, rewrites the index", "[quant][cli]") {
  TempDir dir;
  const std::string in = dir.file("sharded"), out = dir.file("out");
  fs::create_directories(in);
  auto src = io::SafetensorsFile::Open(kStories + "/model.safetensors");
  REQUIRE(src.ok());
  std::vector<io::TensorData> a, b;
  Json wm = Json::object();
  for (const io::TensorInfo& t : src->tensors()) {
    bool first = t.name.find("layers.0.") != std::string::npos || t.name.find("embed") != std::string::npos;
    (first ? a : b).push_back({t.name, t.dtype, t.shape, src->Data(t)});
    wm[t.name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  REQUIRE(io::WriteSafetensors(in + "/model-00001-of-00002.safetensors", a).ok());
  REQUIRE(io::WriteSafetensors(in + "/model-00002-of-00002.safetensors", b).ok());
  Json idx;
  idx["metadata"]["total_size"] = 1;
  idx["weight_map"] = wm;
  lmkit::test::WriteAll(in + "/model.safetensors.index.json", DumpJson(idx));
  lmkit::test::WriteAll(in + "/config.json", ReadAll(kStories + "/config.json"));
  lmkit::test::WriteAll(in + "/tokenizer.json", "{}");
  // --exclude takes one pattern per flag, so INPUT may follow it.
  auto r = RunLmkit({"quantize", "--exclude", "down_proj", in, "-o", out, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(ParseOut(r.out)["totals"]["tensors_quantized"] == 30);
  CHECK(lmkit::test::ListDir(out) == std::vector<std::string>{"config.json", "model-00001-of-00002.safetensors",
                                                              "model-00002-of-00002.safetensors",
                                                              "model.safetensors.index.json", "tokenizer.json"});
  Json oidx = ParseOut(ReadAll(out + "/model.safetensors.index.json"));
  CHECK(oidx["weight_map"]["model.layers.0.mlp.up_proj.weight_scale"] == "model-00001-of-00002.safetensors");
  CHECK(oidx["weight_map"]["model.layers.3.mlp.up_proj.weight_scale"] == "model-00002-of-00002.safetensors");
  CHECK_FALSE(oidx["weight_map"].contains("model.layers.3.mlp.down_proj.weight_scale"));
  Json cfg = ParseOut(ReadAll(out + "/config.json"));
  const Json& ignore = cfg["quantization_config"]["ignore"];
  CHECK(std::find(ignore.begin(), ignore.end(), Json("model.layers.2.mlp.down_proj")) != ignore.end());
  REQUIRE_PYTHON_OK(in + " " + out + " --min-tensor-sqnr 40");
}

TEST_CASE("quantize: w8a8 static input scales from a calibration table, dynamic without", "[quant][cli]") {
  TempDir dir;
  const std::string in = dir.file("toy.safetensors");
  WriteToyCheckpoint(in, io::DType::kBF16);
  lmkit::test::WriteAll(dir.file("calib.json"),
                        R"({"tensors": {"model.layers.0.mlp.up_proj.input": {"amax": 12.75}}})");
  auto r = RunLmkit(
      {"quantize", in, "-o", dir.file("s.safetensors"), "--scheme", "w8a8", "--calibration", dir.file("calib.json")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto f = io::SafetensorsFile::Open(dir.file("s.safetensors"));
  REQUIRE(f.ok());
  const io::TensorInfo* is = f->Find("model.layers.0.mlp.up_proj.input_scale");
  REQUIRE(is);
  CHECK(is->dtype == io::DType::kBF16);
  CHECK(is->shape == std::vector<uint64_t>{1});
  float v;
  io::ConvertToF32(io::DType::kBF16, f->Data(*is).data(), &v, 1);
  CHECK(v == io::Bf16ToF32(0x3dcd));  // 12.75 / 127.5 = 0.1, rounded up to BF16 (0x3dcd = 0.10009765625)
  REQUIRE_PYTHON_OK(in + " " + dir.file("s.safetensors") + " --scheme w8a8-static");
  // A missing module in the table is an error naming it; nothing is written.
  lmkit::test::WriteAll(dir.file("bad.json"), R"({"tensors": {"other": {"amax": 1}}})");
  auto bad = RunLmkit(
      {"quantize", in, "-o", dir.file("b.safetensors"), "--scheme", "w8a8", "--calibration", dir.file("bad.json")});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("no activation range for 'model.layers.0.mlp.up_proj'") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("b.safetensors")));
  // --calibration without w8a8 is a usage error.
  CHECK(
      RunLmkit({"quantize", in, "-o", dir.file("c.safetensors"), "--calibration", dir.file("calib.json")}).exit_code ==
      2);
}

TEST_CASE("quantize: NaN weights name the tensor - usage errors - deterministic across threads", "[quant][cli]") {
  TempDir dir;
  const std::string in = dir.file("nan.safetensors");
  WriteToyCheckpoint(in, io::DType::kF32, /*with_nan=*/true);
  auto r = RunLmkit({"quantize", in, "-o", dir.file("o.safetensors")});
  CHECK(r.exit_code == 1);
  CHECK(r.err ==
        "lmkit quantize: " + in + ": tensor 'model.layers.0.mlp.up_proj.weight': non-finite value at [3, 9]\n");
  CHECK_FALSE(fs::exists(dir.file("o.safetensors")));
  CHECK(RunLmkit({"quantize", in, "-o", dir.file("o.safetensors"), "--granularity", "row"}).exit_code == 2);
  CHECK(RunLmkit({"quantize", in, "-o", dir.file("o.safetensors"), "--scheme", "w3a16"}).exit_code == 2);
  CHECK(RunLmkit({"quantize", in, "-o", dir.file("o.safetensors"), "--exclude", "("}).exit_code == 2);
  // A selection that matches nothing wrote a full-precision copy labelled as quantized, with exit 0.
  auto none = RunLmkit({"quantize", in, "-o", dir.file("o.safetensors"), "--include", "no_such_module"});
  CHECK(none.exit_code == 1);
  CHECK(none.err == "lmkit quantize: " + in +
                        ": no Linear weight to quantize: the --include/--exclude patterns select none of the 2-D "
                        "float *.weight tensors\n");
  CHECK(RunLmkit({"quantize", in, "-o", dir.file("o.safetensors"), "--exclude", "."}).exit_code == 1);
  CHECK_FALSE(fs::exists(dir.file("o.safetensors")));
  CHECK(RunLmkit({"quantize", dir.file("missing.safetensors"), "-o", dir.file("o.safetensors")}).exit_code == 1);

  const std::string a = dir.file("a"), b = dir.file("b");
  REQUIRE(RunLmkit({"--threads", "1", "quantize", kStories, "-o", a}).exit_code == 0);
  REQUIRE(RunLmkit({"--threads", "2", "quantize", kStories, "-o", b}).exit_code == 0);
  CHECK(ReadAll(a + "/model.safetensors") == ReadAll(b + "/model.safetensors"));
  CHECK(ReadAll(a + "/config.json") == ReadAll(b + "/config.json"));
}

TEST_CASE("quantize: an amax past the scale dtype's range is an error, not an infinite input_scale", "[quant][cli]") {
  TempDir dir;
  const std::string in = dir.file("toy.safetensors");
  WriteToyCheckpoint(in, io::DType::kF16);
  // 1e7 / 127.5 = 78431 > 65504, the largest F16; 1e300 does not even fit a float.
  for (const char* amax : {"1e7", "1e300"}) {
    lmkit::test::WriteAll(dir.file("calib.json"),
                          std::string(R"({"tensors": {"model.layers.0.mlp.up_proj": {"amax": )") + amax + "}}}");
    auto r = RunLmkit(
        {"quantize", in, "-o", dir.file("s.safetensors"), "--scheme", "w8a8", "--calibration", dir.file("calib.json")});
    const std::string shown = amax == std::string("1e7") ? "1e+07" : "1e+300";  // fmt's {:g}
    CHECK(r.exit_code == 1);
    CHECK(r.err == "lmkit quantize: " + dir.file("calib.json") + ": amax " + shown +
                       " for 'model.layers.0.mlp.up_proj' gives an input_scale beyond the range of F16\n");
    CHECK_FALSE(fs::exists(dir.file("s.safetensors")));
  }
}

TEST_CASE("quantize: a failing directory input leaves no output directory and an existing one untouched",
          "[quant][cli]") {
  TempDir dir;
  // An index naming a missing shard: the output directory used to be created (and left) before the shards were opened.
  const std::string idx_only = dir.file("idx_only"), out = dir.file("out");
  fs::create_directories(idx_only);
  lmkit::test::WriteAll(idx_only + "/model.safetensors.index.json",
                        R"({"weight_map": {"a.weight": "model-00001-of-00002.safetensors"}})");
  auto r = RunLmkit({"quantize", idx_only, "-o", out});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit quantize: " + idx_only + "/model-00001-of-00002.safetensors: no such file\n");
  CHECK_FALSE(fs::exists(out));

  // A malformed config.json was read after model.safetensors had been written into the output.
  const std::string bad_cfg = dir.file("bad_cfg");
  fs::create_directories(bad_cfg);
  fs::copy_file(kStories + "/model.safetensors", bad_cfg + "/model.safetensors");
  lmkit::test::WriteAll(bad_cfg + "/config.json", "[1, 2");
  r = RunLmkit({"quantize", bad_cfg, "-o", out});
  CHECK(r.exit_code == 1);
  CHECK(r.err.rfind("lmkit quantize: " + bad_cfg + "/config.json: malformed JSON", 0) == 0);
  CHECK_FALSE(fs::exists(out));

  // NaN in the second shard: the first shard used to be committed already. An existing output keeps its files.
  const std::string sharded = dir.file("sharded");
  fs::create_directories(sharded);
  WriteToyCheckpoint(sharded + "/model-00001-of-00002.safetensors", io::DType::kF32);
  {
    std::vector<float> w(48 * 64, 0.01f);
    w[3 * 64 + 9] = std::numeric_limits<float>::quiet_NaN();
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4);
    REQUIRE(io::WriteSafetensors(sharded + "/model-00002-of-00002.safetensors",
                                 {{"model.layers.1.mlp.up_proj.weight", io::DType::kF32, {48, 64}, bytes}})
                .ok());
  }
  // The index maps every tensor to its shard (io/checkpoint.h holds it to that).
  Json wm = Json::object();
  auto first = io::SafetensorsFile::Open(sharded + "/model-00001-of-00002.safetensors");
  REQUIRE(first.ok());
  for (const io::TensorInfo& t : first->tensors()) wm[t.name] = "model-00001-of-00002.safetensors";
  wm["model.layers.1.mlp.up_proj.weight"] = "model-00002-of-00002.safetensors";
  Json index;
  index["weight_map"] = wm;
  lmkit::test::WriteAll(sharded + "/model.safetensors.index.json", DumpJson(index));
  r = RunLmkit({"quantize", sharded, "-o", out});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit quantize: " + sharded +
                     "/model-00002-of-00002.safetensors: tensor 'model.layers.1.mlp.up_proj.weight': non-finite "
                     "value at [3, 9]\n");
  CHECK_FALSE(fs::exists(out));
  fs::create_directories(out);
  lmkit::test::WriteAll(out + "/model-00001-of-00002.safetensors", "old");
  r = RunLmkit({"quantize", sharded, "-o", out});
  CHECK(r.exit_code == 1);
  CHECK(lmkit::test::ListDir(out) == std::vector<std::string>{"model-00001-of-00002.safetensors"});
  CHECK(ReadAll(out + "/model-00001-of-00002.safetensors") == "old");

  // A missing parent is an error, as for file outputs (it used to be created with all its parents).
  r = RunLmkit({"quantize", kStories, "-o", dir.file("no/such/q")});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit quantize: " + dir.file("no/such/q") +
                     ": cannot create the output directory: No such file or directory\n");
  CHECK_FALSE(fs::exists(dir.file("no")));
}

TEST_CASE("quantize and calibrate: an unwritable report or cache fails before any output is written", "[quant][cli]") {
  TempDir dir;
  const std::string in = dir.file("toy.safetensors");
  WriteToyCheckpoint(in, io::DType::kF32);
  auto r = RunLmkit({"quantize", in, "-o", dir.file("q.safetensors"), "--report", dir.file("no/r.json")});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit quantize: " + dir.file("no/r.json") + ": cannot create output in " + dir.file("no") +
                     ": No such file or directory\n");
  CHECK_FALSE(fs::exists(dir.file("q.safetensors")));

  const std::string acts = TestData("quant/laplace_acts.npy");
  r = RunLmkit(
      {"calibrate", acts, "--method", "minmax", "-o", dir.file("c.json"), "--trt-cache", dir.file("no/c.cache")});
  CHECK(r.exit_code == 1);
  CHECK(r.err.rfind("lmkit calibrate: " + dir.file("no/c.cache") + ": cannot create output in", 0) == 0);
  CHECK_FALSE(fs::exists(dir.file("c.json")));
  CHECK(lmkit::test::ListDir(dir.path()) == std::vector<std::string>{"toy.safetensors"});
}

TEST_CASE("calibrate/generate/quantize: an output naming an input is a usage error and the input survives",
          "[quant][cli]") {
  TempDir dir;
  const std::string acts = dir.file("acts.npy");
  fs::copy_file(TestData("quant/laplace_acts.npy"), acts);
  const std::string before = ReadAll(acts);
  auto r = RunLmkit({"calibrate", acts, "--method", "minmax", "-o", acts});
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "lmkit calibrate: " + acts + ": is also the output (-o " + acts + "); writing it would destroy the input\n");
  r = RunLmkit(
      {"calibrate", acts, "--method", "minmax", "-o", dir.file("c.json"), "--trt-cache", dir.path() + "/./acts.npy"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(": is also the output (--trt-cache ") != std::string::npos);
  CHECK(ReadAll(acts) == before);
  CHECK_FALSE(fs::exists(dir.file("c.json")));

  const std::string model = dir.file("m");
  fs::create_directories(model);
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(TestData(std::string("model/stories260K/") + f), model + "/" + f);
  const std::string weights = ReadAll(model + "/model.safetensors");
  r = RunLmkit({"generate", model, "--prompt-ids", "1", "--max-tokens", "3", "-o", model + "/model.safetensors"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit generate: " + model + ": -o " + model +
                     "/model.safetensors is a file of this input directory; writing it could destroy the input\n");
  CHECK(ReadAll(model + "/model.safetensors") == weights);
  // The model given as its .safetensors file: the config.json beside it is read too, so it is an input as well.
  const std::string config = ReadAll(model + "/config.json");
  r = RunLmkit({"generate", model + "/model.safetensors", "--prompt-ids", "1", "--max-tokens", "3", "-o",
                model + "/config.json"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit generate: " + model + "/config.json: is also the output (-o " + model +
                     "/config.json); writing it would destroy the input\n");
  CHECK(ReadAll(model + "/config.json") == config);
  r = RunLmkit({"calibrate", "--model", model, "--tokens", acts, "--method", "minmax", "-o", model + "/config.json"});
  CHECK(r.exit_code == 2);

  // quantize: the report replaced the checkpoint it was about (exit 0) before --report was checked; -o and the
  // calibration table are inputs too, and the report may not replace the quantized output.
  const std::string ckpt = model + "/model.safetensors", q = dir.file("q.safetensors");
  r = RunLmkit({"quantize", ckpt, "-o", q, "--report", ckpt});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit quantize: " + ckpt + ": is also the output (--report " + ckpt +
                     "); writing it would destroy the input\n");
  CHECK(ReadAll(ckpt) == weights);
  CHECK_FALSE(fs::exists(q));
  r = RunLmkit({"quantize", ckpt, "-o", q, "--report", dir.path() + "/./q.safetensors"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit quantize: -o and --report name the same file\n");
  CHECK_FALSE(fs::exists(q));
  const std::string calib = dir.file("calib.json");
  REQUIRE(RunLmkit({"calibrate", acts, "--method", "minmax", "-o", calib}).exit_code == 0);
  const std::string table = ReadAll(calib);
  r = RunLmkit({"quantize", ckpt, "-o", calib, "--scheme", "w8a8", "--calibration", calib});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(calib + ": is also the output (-o ") == r.err.find("lmkit quantize: ") + 16);
  CHECK(ReadAll(calib) == table);
}

TEST_CASE("calibrate: parity values, TensorRT cache, merging across files", "[quant][cli]") {
  TempDir dir;
  const std::string acts = TestData("quant/laplace_acts.npy");
  struct Case {
    const char* method;
    const char* flavor;
    double lo, hi;
  };
  for (const Case& c :
       {Case{"entropy", "nvidia", -10.954589, 10.954589}, Case{"percentile", "nvidia", -9.955690, 9.955690},
        Case{"entropy", "ort", -13.585022, 13.651615}, Case{"percentile", "ort", -27.669510, 27.669510},
        Case{"minmax", "nvidia", -68.191483, 68.191483}}) {
    auto r =
        RunLmkit({"calibrate", acts, "--method", c.method, "--flavor", c.flavor, "-o", dir.file("c.json"), "--json"});
    INFO(c.method << " " << c.flavor << " " << r.err);
    REQUIRE(r.exit_code == 0);
    Json t = ParseOut(ReadAll(dir.file("c.json")))["tensors"]["laplace_acts"];
    CHECK(t["range"][0].get<double>() == Approx(c.lo).epsilon(1e-5));
    CHECK(t["range"][1].get<double>() == Approx(c.hi).epsilon(1e-5));
    CHECK(t["samples"] == 400000);
    CHECK(t["batches"] == 4);
    CHECK(ParseOut(r.out)["tensors"] == ParseOut(ReadAll(dir.file("c.json")))["tensors"]);
  }
  // ORT's default 128 bins: its entropy search degenerates to min/max (onnxruntime issue 9597).
  auto deg = RunLmkit(
      {"calibrate", acts, "--method", "entropy", "--flavor", "ort", "--bins", "128", "-o", dir.file("d.json")});
  REQUIRE(deg.exit_code == 0);
  Json d = ParseOut(ReadAll(dir.file("d.json")))["tensors"]["laplace_acts"];
  CHECK(d["range"][0].get<double>() == Approx(-68.191483).epsilon(1e-6));
  CHECK(d["range"][1].get<double>() == Approx(55.126057).epsilon(1e-6));
  CHECK(RunLmkit({"calibrate", acts, "--method", "entropy", "--bins", "100", "-o", dir.file("d.json")}).exit_code == 2);
  // Options of another method were accepted and changed nothing; now they are usage errors naming the mismatch.
  auto pe = RunLmkit({"calibrate", acts, "--method", "entropy", "--percentile", "99.9", "-o", dir.file("e.json")});
  CHECK(pe.exit_code == 2);
  CHECK(pe.err == "lmkit calibrate: --percentile applies to --method percentile only\n");
  auto bm = RunLmkit({"calibrate", acts, "--method", "minmax", "--bins", "4096", "-o", dir.file("e.json")});
  CHECK(bm.exit_code == 2);
  CHECK(bm.err == "lmkit calibrate: --bins applies to the histogram methods (percentile, entropy, mse), not minmax\n");
  CHECK_FALSE(fs::exists(dir.file("e.json")));
  auto r =
      RunLmkit({"calibrate", acts, "--method", "minmax", "-o", dir.file("m.json"), "--trt-cache", dir.file("m.cache")});
  REQUIRE(r.exit_code == 0);
  CHECK(ReadAll(dir.file("m.cache")) == "TRT-8601-MinMaxCalibration\nlaplace_acts: 3f0974f4\n");

  // Split the rows over two files of the same tensor name: the merged result equals the single file's, for both
  // flavours (rows are fed in file order).
  auto f = io::NpyFile::Open(acts);
  REQUIRE(f.ok());
  fs::create_directories(dir.file("p1"));
  fs::create_directories(dir.file("p2"));
  const size_t half = 2 * 100000 * 4;
  REQUIRE(io::WriteNpy(dir.file("p1/laplace_acts.npy"), io::DType::kF32, {2, 100000}, f->data().subspan(0, half)).ok());
  REQUIRE(io::WriteNpy(dir.file("p2/laplace_acts.npy"), io::DType::kF32, {2, 100000}, f->data().subspan(half)).ok());
  for (const char* flavor : {"nvidia", "ort"}) {
    auto one = RunLmkit({"calibrate", acts, "--method", "entropy", "--flavor", flavor, "-o", dir.file("one.json")});
    auto two = RunLmkit({"calibrate", dir.file("p1/laplace_acts.npy"), dir.file("p2/laplace_acts.npy"), "--method",
                         "entropy", "--flavor", flavor, "-o", dir.file("two.json")});
    REQUIRE(one.exit_code == 0);
    REQUIRE(two.exit_code == 0);
    CHECK(ParseOut(ReadAll(dir.file("one.json")))["tensors"] == ParseOut(ReadAll(dir.file("two.json")))["tensors"]);
  }
  // The nvidia flavour does not depend on batch order: feeding the halves reversed gives the same threshold.
  auto rev = RunLmkit({"calibrate", dir.file("p2/laplace_acts.npy"), dir.file("p1/laplace_acts.npy"), "--method",
                       "entropy", "-o", dir.file("rev.json")});
  REQUIRE(rev.exit_code == 0);
  CHECK(ParseOut(ReadAll(dir.file("rev.json")))["tensors"]["laplace_acts"]["amax"].get<double>() ==
        Approx(10.954589).epsilon(1e-5));
}

TEST_CASE("calibrate: usage and input errors", "[quant][cli]") {
  TempDir dir;
  const std::string acts = TestData("quant/laplace_acts.npy");
  CHECK(RunLmkit({"calibrate", acts, "--method", "mse", "--flavor", "ort", "-o", dir.file("c.json")}).exit_code == 2);
  CHECK(RunLmkit({"calibrate", acts, "--method", "kl", "-o", dir.file("c.json")}).exit_code == 2);
  CHECK(RunLmkit({"calibrate", acts, "--method", "percentile", "--percentile", "101", "-o", dir.file("c.json")})
            .exit_code == 2);
  auto r = RunLmkit({"calibrate", dir.file("none.npy"), "--method", "minmax", "-o", dir.file("c.json")});
  CHECK(r.exit_code == 1);
  CHECK_FALSE(fs::exists(dir.file("c.json")));
}

TEST_CASE("calibrate: a tensor with no elements is an error, not amax 0 from zero samples", "[quant][cli]") {
  TempDir dir;
  const std::string empty = dir.file("empty.npy");
  REQUIRE(io::WriteNpy(empty, io::DType::kF32, {0, 16}, {}).ok());
  for (const char* flavor : {"nvidia", "ort"}) {
    auto r = RunLmkit({"calibrate", empty, "--method", "entropy", "--flavor", flavor, "-o", dir.file("c.json")});
    CHECK(r.exit_code == 1);
    CHECK(r.err == "lmkit calibrate: " + empty + ": tensor 'empty' has no elements to calibrate from\n");
    CHECK_FALSE(fs::exists(dir.file("c.json")));
  }
}

TEST_CASE("calibrate: ort flavour with values near FLT_MAX or a far outlier batch is a one-line error",
          "[quant][cli]") {
  // These crashed (SIGSEGV from a NaN bin index) or grew the histogram until memory ran out.
  TempDir dir;
  const std::string huge = dir.file("huge.npy"), far = dir.file("far.npy");
  const std::vector<float> h = {3e38f, 1.0f, -3.2e38f, 2.0f};  // two batches of 2
  const std::vector<float> f = {0.5f, 1.0f, 1e6f, 2.0f};
  REQUIRE(io::WriteNpy(huge, io::DType::kF32, {2, 2}, {reinterpret_cast<const uint8_t*>(h.data()), 16}).ok());
  REQUIRE(io::WriteNpy(far, io::DType::kF32, {2, 2}, {reinterpret_cast<const uint8_t*>(f.data()), 16}).ok());
  auto r = RunLmkit({"calibrate", huge, "--method", "entropy", "--flavor", "ort", "-o", dir.file("c.json")});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit calibrate: " + huge +
                     ": tensor 'huge': batch 2 (|x| up to 3.2e+38) would grow the ort flavour's histogram past 65536 "
                     "bins or beyond the float range; use --flavor nvidia\n");
  r = RunLmkit({"calibrate", far, "--method", "percentile", "--flavor", "ort", "-o", dir.file("c.json")});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("tensor 'far': batch 2 (|x| up to 1e+06) would grow") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("c.json")));
  // A single batch near FLT_MAX still calibrates.
  REQUIRE(io::WriteNpy(huge, io::DType::kF32, {4}, {reinterpret_cast<const uint8_t*>(h.data()), 16}).ok());
  r = RunLmkit({"calibrate", huge, "--method", "entropy", "--flavor", "ort", "-o", dir.file("c.json")});
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(dir.file("c.json")));
}

// ---- --format gguf-q8_0 ---------------------------------------------------------------------------------------------

namespace {

// A one-layer Llama directory (4 heads of 16, 2 KV heads) in `dtype`, with config.json. `extra` adds one more tensor.
void WriteToyLlama(const std::string& dir, io::DType dtype, bool with_nan = false, const std::string& extra = "",
                   const std::string& model_type = "llama") {
  fs::create_directories(dir);
  lmkit::test::WriteAll(dir + "/config.json",
                        "{\"model_type\": \"" + model_type +
                            "\", \"vocab_size\": 32, \"max_position_embeddings\": 128, \"hidden_size\": 64, "
                            "\"intermediate_size\": 96, \"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
                            "\"num_key_value_heads\": 2, \"rms_norm_eps\": 1e-5, \"rope_theta\": 500000.0}\n");
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<std::vector<uint8_t>> store;
  std::vector<io::TensorData> ts;
  auto add = [&](const std::string& name, std::vector<uint64_t> shape, bool nan = false) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::vector<float> v(n);
    for (float& x : v) x = shape.size() == 1 ? 1.0f + nd(rng) : nd(rng);
    if (n > 40) v[37] = 0.5f;  // a block with an outlier
    if (nan) v[n / 2] = std::numeric_limits<float>::quiet_NaN();
    store.emplace_back(n * io::DTypeSize(dtype));
    REQUIRE(io::ConvertFromF32(dtype, v.data(), store.back().data(), n).ok());
    ts.push_back({name, dtype, shape, std::span<const uint8_t>(store.back())});
  };
  add("model.embed_tokens.weight", {32, 64});
  add("model.layers.0.input_layernorm.weight", {64});
  add("model.layers.0.self_attn.q_proj.weight", {64, 64});
  add("model.layers.0.self_attn.k_proj.weight", {32, 64});
  add("model.layers.0.self_attn.v_proj.weight", {32, 64});
  add("model.layers.0.self_attn.o_proj.weight", {64, 64}, with_nan);
  add("model.layers.0.post_attention_layernorm.weight", {64});
  add("model.layers.0.mlp.gate_proj.weight", {96, 64});
  add("model.layers.0.mlp.up_proj.weight", {96, 64});
  add("model.layers.0.mlp.down_proj.weight", {64, 96});
  add("model.norm.weight", {64});
  add("lm_head.weight", {32, 64});
  if (!extra.empty()) add(extra, {8});
  REQUIRE(io::WriteSafetensors(dir + "/model.safetensors", ts, {{"format", "pt"}}).ok());
}

}  // namespace

TEST_CASE("quantize --format gguf-q8_0: stories260K as a llama.cpp GGUF, ggml's Q8_0 blocks bit for bit",
          "[quant][cli]") {
  TempDir dir;
  const std::string out = dir.file("s.gguf");
  auto r = RunLmkit({"quantize", kStories, "-o", out, "--format", "gguf-q8_0", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Json j = ParseOut(r.out);
  CHECK(j["format"] == "gguf-q8_0");
  CHECK(j["granularity"] == "group:32");
  // 5 layers x 6 projections in Q8_0; the 172-wide down_proj rows cannot be cut into blocks of 32 and stay F32, with
  // the embedding (tied output) and the 11 norms.
  CHECK(j["totals"]["tensors_quantized"] == 30);
  CHECK(j["totals"]["tensors_copied"] == 17);
  CHECK(j["totals"]["params_quantized"] == 171520);
  REQUIRE(j["kept_unquantized"].size() == 5);
  CHECK(j["kept_unquantized"][0] == "model.layers.0.mlp.down_proj.weight");
  // Floor (docs/quant.md): a block's noise is d^2 / 12 with d = max|x| / 127, so SQNR = 52.9 - 20 log10(max|x| / rms)
  // dB; blocks of 32 Gaussian-like weights have max/rms ~ 2.5-3.5, 42-45 dB. Measured: total 44.20, worst 42.89.
  CHECK(j["totals"]["sqnr_db"].get<double>() > 43.5);
  for (const Json& t : j["tensors"]) {
    CHECK(t["sqnr_db"].get<double>() > 42.0);
    CHECK(t["clipped_share"].get<double>() == 0.0);
  }
  CHECK(ReadAll(out).substr(0, 8) == std::string("GGUF\x03\0\0\0", 8));
  REQUIRE_SCRIPT_OK("check_gguf.py", kStories + " " + out + " --min-tensor-sqnr 42 --min-total-sqnr 43.5");
}

TEST_CASE("quantize --format gguf-q8_0: BF16 and F16 inputs, q/k rows reordered, same bytes for any thread count",
          "[quant][cli]") {
  for (io::DType dt : {io::DType::kBF16, io::DType::kF16}) {
    TempDir dir;
    const std::string in = dir.file("toy");
    WriteToyLlama(in, dt);
    auto r1 = RunLmkit({"quantize", in, "-o", dir.file("a.gguf"), "--format", "gguf-q8_0", "--threads", "1"});
    auto r2 = RunLmkit({"quantize", in, "-o", dir.file("b.gguf"), "--format", "gguf-q8_0", "--threads", "2"});
    INFO(r1.err);
    REQUIRE(r1.exit_code == 0);
    REQUIRE(r2.exit_code == 0);
    CHECK(ReadAll(dir.file("a.gguf")) == ReadAll(dir.file("b.gguf")));
    // Every projection, down_proj too (its rows are 96 long), is Q8_0; lm_head and the embedding keep their dtype.
    CHECK(r1.out.find("7 tensors quantized") != std::string::npos);
    REQUIRE_SCRIPT_OK("check_gguf.py", in + " " + dir.file("a.gguf") + " --min-tensor-sqnr 38");
  }
}

TEST_CASE("quantize --format gguf-q8_0: inputs it cannot write are one-line errors and leave no file", "[quant][cli]") {
  TempDir dir;
  const std::string toy = dir.file("toy"), out = dir.file("o.gguf");
  WriteToyLlama(toy, io::DType::kF32);
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{toy + "/model.safetensors"},
       2,
       "lmkit quantize: --format gguf-q8_0 needs a model directory (its config.json gives the architecture and the "
       "hyperparameters of the GGUF header), not a .safetensors file\n"},
      {{toy, "--scheme", "w8a8"},
       2,
       "lmkit quantize: --format gguf-q8_0 stores weights only: --scheme w8a16, no "
       "--calibration\n"},
      {{toy, "--granularity", "channel"},
       2,
       "lmkit quantize: --format gguf-q8_0 quantizes in Q8_0 blocks of 32 weights along each row: --granularity "
       "group:32 (the default with this format), not channel\n"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"quantize"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    for (const char* a : {"-o", "", "--format", "gguf-q8_0"}) args.push_back(*a ? a : out);
    auto r = RunLmkit(args);
    CHECK(r.exit_code == c.code);
    CHECK(r.err == c.err);
    CHECK_FALSE(fs::exists(out));
  }
  // A NaN in a weight names the tensor; a tensor llama.cpp has no place for names itself; other architectures are
  // refused by name.
  const std::string nan_dir = dir.file("nan"), odd_dir = dir.file("odd"), gpt_dir = dir.file("gpt");
  WriteToyLlama(nan_dir, io::DType::kBF16, true);
  WriteToyLlama(odd_dir, io::DType::kF32, false, "model.layers.0.mlp.gate_proj.bias");
  WriteToyLlama(gpt_dir, io::DType::kF32, false, "", "gpt2");
  auto r = RunLmkit({"quantize", nan_dir, "-o", out, "--format", "gguf-q8_0"});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit quantize: " + nan_dir +
                     "/model.safetensors: tensor 'model.layers.0.self_attn.o_proj.weight': NaN or Inf in the weight\n");
  r = RunLmkit({"quantize", odd_dir, "-o", out, "--format", "gguf-q8_0"});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit quantize: " + odd_dir +
                     "/model.safetensors: tensor 'model.layers.0.mlp.gate_proj.bias' has no place in llama.cpp's "
                     "Llama layout\n");
  r = RunLmkit({"quantize", gpt_dir, "-o", out, "--format", "gguf-q8_0"});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit quantize: " + gpt_dir +
                     "/config.json: --format gguf-q8_0 writes Llama-architecture models (model_type llama or "
                     "mistral), not model_type 'gpt2'\n");
  CHECK_FALSE(fs::exists(out));
  // OUTPUT must be a file.
  r = RunLmkit({"quantize", toy, "-o", dir.path(), "--format", "gguf-q8_0"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit quantize: -o must be a file path with --format gguf-q8_0\n");
}

TEST_CASE("quantize: fp8 and fp8-static write float-quantized E4M3 that an independent reader dequantizes",
          "[quant][cli][fp8]") {
  TempDir dir;
  const std::string out = dir.file("fp8");
  auto r = RunLmkit({"quantize", kStories, "-o", out, "--scheme", "fp8", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  Json j = ParseOut(r.out);
  CHECK(j["scheme"] == "fp8");
  CHECK(j["granularity"] == "channel");
  CHECK(j["totals"]["tensors_quantized"] == 35);
  // 3 mantissa bits: the measured total SQNR of stories260K is 31.2 dB (per-channel INT8: 42.5 dB).
  CHECK(j["totals"]["sqnr_db"].get<double>() > 30.0);
  CHECK(j["totals"]["clipped_share"] == 0);
  auto f = io::SafetensorsFile::Open(out + "/model.safetensors");
  REQUIRE(f.ok());
  CHECK(f->Find("model.layers.0.self_attn.q_proj.weight")->dtype == io::DType::kF8E4M3);
  CHECK(f->Find("model.layers.0.self_attn.q_proj.weight_scale")->shape == std::vector<uint64_t>{64, 1});
  CHECK(f->Find("model.embed_tokens.weight")->dtype == io::DType::kF32);
  const Json qc = ParseOut(ReadAll(out + "/config.json"))["quantization_config"];
  CHECK(qc["format"] == "float-quantized");
  const Json& g = qc["config_groups"]["group_0"];
  CHECK(g["weights"] == ParseOut(R"({"num_bits": 8, "type": "float", "symmetric": true, "strategy": "channel",
                                      "group_size": null, "dynamic": false})"));
  CHECK(g["input_activations"] ==
        ParseOut(R"({"num_bits": 8, "type": "float", "symmetric": true, "strategy": "token", "dynamic": true})"));
  CHECK(qc["ignore"] == Json::array({"lm_head", "model.embed_tokens"}));
  REQUIRE_PYTHON_OK(kStories + " " + out + " --scheme fp8 --min-total-sqnr 30");

  // fp8-static: per-tensor weights (llm-compressor's FP8 preset) and input_scale = amax / 448 rounded up.
  const std::string in = dir.file("toy.safetensors");
  WriteToyCheckpoint(in, io::DType::kBF16);
  lmkit::test::WriteAll(dir.file("calib.json"), R"({"tensors": {"model.layers.0.mlp.up_proj": {"amax": 44.8}}})");
  auto s = RunLmkit({"quantize", in, "-o", dir.file("s.safetensors"), "--scheme", "fp8-static", "--calibration",
                     dir.file("calib.json")});
  INFO(s.err);
  REQUIRE(s.exit_code == 0);
  auto sf = io::SafetensorsFile::Open(dir.file("s.safetensors"));
  REQUIRE(sf.ok());
  CHECK(sf->Find("model.layers.0.mlp.up_proj.weight_scale")->shape == std::vector<uint64_t>{1});
  float v;
  io::ConvertToF32(io::DType::kBF16, sf->Data(*sf->Find("model.layers.0.mlp.up_proj.input_scale")).data(), &v, 1);
  CHECK(v == io::Bf16ToF32(0x3dcd));  // 44.8 / 448 = 0.1, rounded up to BF16
  REQUIRE_PYTHON_OK(in + " " + dir.file("s.safetensors") + " --scheme fp8-static");
  // Without a calibration table fp8-static has no activation scales.
  auto no = RunLmkit({"quantize", in, "-o", dir.file("n.safetensors"), "--scheme", "fp8-static"});
  CHECK(no.exit_code == 2);
  CHECK(no.err == "lmkit quantize: --scheme fp8-static needs --calibration (its static activation scales)\n");
}

TEST_CASE("quantize: a combination vLLM cannot serve is refused, or written with a warning naming the loader",
          "[quant][cli]") {
  TempDir dir;
  const std::string in = dir.file("toy.safetensors");
  WriteToyCheckpoint(in, io::DType::kBF16);
  auto g = RunLmkit({"quantize", in, "-o", dir.file("g.safetensors"), "--scheme", "w8a8", "--granularity", "group:16"});
  CHECK(g.exit_code == 2);
  CHECK(g.err ==
        "lmkit quantize: vLLM cannot serve --scheme w8a8 with group:16 scales: its INT8 kernels take tensor or channel "
        "weight scales, not group; use --granularity channel or tensor\n");
  CHECK_FALSE(fs::exists(dir.file("g.safetensors")));
  auto f = RunLmkit({"quantize", in, "-o", dir.file("f.safetensors"), "--scheme", "fp8", "--granularity", "group:16"});
  CHECK(f.exit_code == 2);
  CHECK(f.err.find("vLLM cannot serve --scheme fp8 with group:16 scales") != std::string::npos);
  // w8a16 per-tensor: transformers loads it, vLLM's WNA16 path does not: one warning line, and it is written.
  auto t = RunLmkit({"quantize", in, "-o", dir.file("t.safetensors"), "--granularity", "tensor", "--json"});
  REQUIRE(t.exit_code == 0);
  CHECK(t.err ==
        "lmkit quantize: warning: vLLM cannot serve --scheme w8a16 with tensor scales: its WNA16 path "
        "(_is_wNa16_group_channel) takes channel or group weight scales, not tensor; transformers + "
        "compressed-tensors loads it\n");
  CHECK(ParseOut(t.out)["warnings"][0].get<std::string>().rfind("vLLM cannot serve scheme w8a16", 0) == 0);
  REQUIRE_PYTHON_OK(in + " " + dir.file("t.safetensors"));
  auto q = RunLmkit({"--quiet", "quantize", in, "-o", dir.file("q.safetensors"), "--granularity", "tensor"});
  CHECK(q.exit_code == 0);
  CHECK(q.err.empty());
  // A group size Marlin does not take warns too; 32, 64 and 128 do not.
  auto g48 = RunLmkit({"quantize", in, "-o", dir.file("g48.safetensors"), "--granularity", "group:16"});
  CHECK(g48.exit_code == 0);
  CHECK(g48.err.find("its Marlin kernels take group sizes 32, 64 and 128, not 16") != std::string::npos);
  auto g32 = RunLmkit({"quantize", in, "-o", dir.file("g32.safetensors"), "--granularity", "group:32"});
  CHECK(g32.exit_code == 0);
  CHECK(g32.err.empty());
}

TEST_CASE("quantize: quantizing only part of q/k/v or gate/up is refused unless --split-fused", "[quant][cli]") {
  TempDir dir;
  auto r = RunLmkit({"quantize", kStories, "-o", dir.file("a"), "--exclude", "layers\\.2\\.self_attn\\.k_proj"});
  CHECK(r.exit_code == 2);
  CHECK(
      r.err ==
      "lmkit quantize: 'model.layers.2.self_attn.q_proj' is quantized but 'model.layers.2.self_attn.k_proj' is not, "
      "and vLLM loads both as one layer (qkv_proj), which must have one scheme; quantize all of them or none, or pass "
      "--split-fused to write it anyway\n");
  CHECK_FALSE(fs::exists(dir.file("a")));
  auto up = RunLmkit({"quantize", kStories, "-o", dir.file("b"), "--include", "gate_proj"});
  CHECK(up.exit_code == 2);
  CHECK(up.err.find("(gate_up_proj)") != std::string::npos);
  // Excluding whole groups is fine; asking explicitly writes it with a warning.
  CHECK(RunLmkit({"quantize", kStories, "-o", dir.file("c"), "--exclude", "self_attn"}).exit_code == 0);
  auto s = RunLmkit({"quantize", kStories, "-o", dir.file("d"), "--exclude", "k_proj", "--split-fused"});
  CHECK(s.exit_code == 0);
  CHECK(s.err.find("lmkit quantize: warning: 'model.layers.0.self_attn.q_proj' is quantized but") == 0);
  CHECK(s.err.find("vLLM will refuse this checkpoint (written as asked by --split-fused)") != std::string::npos);
}

TEST_CASE("quantize --list-schemes: every scheme and what each loader does with it, as text or one JSON document",
          "[quant][cli]") {
  auto r = RunLmkit({"quantize", "--list-schemes", "--json"});
  REQUIRE(r.exit_code == 0);
  Json j = ParseOut(r.out);
  std::vector<std::string> names;
  for (const Json& s : j["schemes"]) names.push_back(s["name"]);
  CHECK(names == std::vector<std::string>{"w8a16", "w8a8", "fp8", "fp8-static", "w4a16"});
  CHECK(j["schemes"][3]["calibration"] == "required");
  CHECK(j["schemes"][1]["calibration"] == "optional");
  // Each written combination says which loaders serve it; everything lmkit writes transformers loads.
  int write = 0, warn = 0, refuse = 0;
  for (const Json& c : j["checkpoints"]) {
    const std::string p = c["policy"];
    write += p == "write";
    warn += p == "warn";
    refuse += p == "refuse";
    if (p != "refuse") CHECK(c["loaders"]["transformers"]["serves"] == true);
    if (p == "write") CHECK(c["loaders"]["vLLM"]["serves"] == true);
    if (p != "write") CHECK(c["message"].get<std::string>().rfind("vLLM cannot serve", 0) == 0);
  }
  CHECK(write >= 10);
  CHECK(warn >= 2);
  CHECK(refuse >= 6);
  auto t = RunLmkit({"quantize", "--list-schemes"});
  CHECK(t.exit_code == 0);
  CHECK(t.out.find("fp8-static  FP8 E4M3 weights") != std::string::npos);
  CHECK(RunLmkit({"quantize"}).exit_code == 2);
}

TEST_CASE("quantize: weights near the float maximum are a one-line error, not SQNR -inf", "[quant][cli]") {
  TempDir dir;
  const std::string in = dir.file("big.safetensors");
  std::vector<float> w(16 * 64, 0.01f), e(8 * 64, 0.01f);
  w[5 * 64 + 2] = -3.4e38f;
  std::vector<io::TensorData> ts;
  auto bytes = [](const std::vector<float>& v) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4);
  };
  ts.push_back({"model.layers.0.mlp.up_proj.weight", io::DType::kF32, {16, 64}, bytes(w)});
  ts.push_back({"model.embed_tokens.weight", io::DType::kF32, {8, 64}, bytes(e)});
  REQUIRE(io::WriteSafetensors(in, ts).ok());
  for (const char* scheme : {"w8a16", "w8a8"}) {
    auto r = RunLmkit({"quantize", in, "-o", dir.file("o.safetensors"), "--scheme", scheme});
    INFO(scheme);
    CHECK(r.exit_code == 1);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find("tensor 'model.layers.0.mlp.up_proj.weight': |w| = 3.4e+38") != std::string::npos);
    CHECK(r.err.find("beyond the range of F32, so a loader would dequantize it to inf\n") != std::string::npos);
    CHECK_FALSE(fs::exists(dir.file("o.safetensors")));
  }
  // FP8's largest code times its scale is about |w| itself, so the same weight codes there, with a finite report.
  auto f = RunLmkit({"quantize", in, "-o", dir.file("f.safetensors"), "--scheme", "fp8", "--json"});
  REQUIRE(f.exit_code == 0);
  CHECK(ParseOut(f.out)["totals"]["sqnr_db"].is_number());
  CHECK(std::isfinite(ParseOut(f.out)["totals"]["max_abs_err"].get<double>()));
}

TEST_CASE("calibrate and quantize: an amax of 0 is a warning in the table and refused as an input_scale",
          "[quant][cli]") {
  TempDir dir;
  const std::string acts = dir.file("model.layers.0.mlp.up_proj.npy");
  REQUIRE(io::WriteNpy(acts, io::DType::kF32, {2, 64}, std::vector<uint8_t>(2 * 64 * 4, 0)).ok());
  auto c = RunLmkit({"calibrate", acts, "--method", "minmax", "-o", dir.file("calib.json")});
  REQUIRE(c.exit_code == 0);
  CHECK(c.err ==
        "lmkit calibrate: warning: tensor 'model.layers.0.mlp.up_proj': amax 0 (every sample is 0); a quantized layer "
        "cannot take an input_scale of 0 from it\n");
  const std::string in = dir.file("toy.safetensors");
  WriteToyCheckpoint(in, io::DType::kBF16);
  for (const char* scheme : {"w8a8", "fp8-static"}) {
    auto q = RunLmkit(
        {"quantize", in, "-o", dir.file("q.safetensors"), "--scheme", scheme, "--calibration", dir.file("calib.json")});
    CHECK(q.exit_code == 1);
    CHECK(q.err == "lmkit quantize: " + dir.file("calib.json") +
                       ": amax 0 for 'model.layers.0.mlp.up_proj': its input_scale would be 0 and every activation of "
                       "the layer would be coded as 0; calibrate on inputs that reach it, or exclude it\n");
    CHECK_FALSE(fs::exists(dir.file("q.safetensors")));
  }
}

TEST_CASE("calibrate --method mse near the float maximum gives the scaled threshold, not an overflow", "[quant][cli]") {
  // Every step of the mse search scales by a power of two, so data scaled by 2^121 (max |x| 1.8e38, two adjacent
  // histogram edges summing past FLT_MAX) must give the threshold scaled by 2^121.
  TempDir dir;
  auto src = io::NpyFile::Open(TestData("quant/laplace_acts.npy"));
  REQUIRE(src.ok());
  std::vector<float> x(src->header().num_bytes() / 4);
  std::memcpy(x.data(), src->data().data(), x.size() * 4);
  for (float& v : x) v = std::ldexp(v, 121);
  std::vector<uint8_t> raw(x.size() * 4);
  std::memcpy(raw.data(), x.data(), raw.size());
  REQUIRE(io::WriteNpy(dir.file("big.npy"), io::DType::kF32, src->shape(), raw).ok());
  auto a = RunLmkit({"calibrate", TestData("quant/laplace_acts.npy"), "--method", "mse", "-o", dir.file("a.json")});
  auto b = RunLmkit({"calibrate", dir.file("big.npy"), "--method", "mse", "-o", dir.file("b.json")});
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  const double small = ParseOut(ReadAll(dir.file("a.json")))["tensors"]["laplace_acts"]["amax"];
  const double big = ParseOut(ReadAll(dir.file("b.json")))["tensors"]["big"]["amax"];
  CHECK(std::isfinite(big));
  CHECK(big == std::ldexp(small, 121));
}

TEST_CASE("quantize --report and calibrate --trt-cache are written before the main output is renamed into place",
          "[quant][cli]") {
  // /dev/full accepts the open and fails the write at commit (ENOSPC): the secondary output fails last of all its
  // steps, and the main output must not be in place when it does.
  if (!fs::exists("/dev/full")) {
    LMKIT_SKIP("no /dev/full");
  }
  TempDir dir;
  auto q = RunLmkit({"quantize", kStories, "-o", dir.file("q"), "--report", "/dev/full"});
  CHECK(q.exit_code == 1);
  CHECK(q.err.find("/dev/full") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("q")));
  auto c = RunLmkit({"calibrate", TestData("quant/laplace_acts.npy"), "--method", "minmax", "-o", dir.file("c.json"),
                     "--trt-cache", "/dev/full"});
  CHECK(c.exit_code == 1);
  CHECK_FALSE(fs::exists(dir.file("c.json")));
}

TEST_CASE("quantize --smoothquant maps Gemma and DeepSeek norms to every Linear that reads them",
          "[quant][cli][gptq]") {
  TempDir dir;
  const std::string tokens = lmkit::test::WriteTokenFile(dir, 256, 200);
  // fixture, a norm SmoothQuant folds into, the Linears it balances
  const std::vector<std::tuple<std::string, std::string, std::vector<std::string>>> cases = {
      {"gemma2",
       "model.layers.0.pre_feedforward_layernorm",
       {"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"}},
      {"deepseek_v2",
       "model.layers.1.input_layernorm",
       {"model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.kv_a_proj_with_mqa"}},
      {"deepseek_v3_fused",
       "model.layers.1.input_layernorm",
       {"model.layers.1.self_attn.q_a_proj", "model.layers.1.self_attn.kv_a_proj_with_mqa"}}};
  for (const auto& [fixture, norm, balanced] : cases) {
    auto r = RunLmkit({"quantize", TestData("model/" + fixture), "-o", dir.file(fixture), "--scheme", "w8a8",
                       "--smoothquant", "0.5", "--calibration-tokens", tokens, "--seq-len", "64", "--json"});
    INFO(fixture << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    const Json j = ParseOut(r.out);
    bool found = false;
    for (const Json& g : j["smoothquant"])
      if (g["norm"] == norm) {
        found = true;
        CHECK(g["balanced"].get<std::vector<std::string>>() == balanced);
      }
    CHECK(found);
    // Gemma's post_attention_layernorm normalizes the attention output: never smoothed.
    if (fixture.starts_with("gemma"))
      for (const Json& g : j["smoothquant"])
        CHECK(g["norm"].get<std::string>().find("post_attention") == std::string::npos);
  }
}

TEST_CASE("quantize --method gptq --smoothquant: exit codes, --json report and text tables", "[quant][cli][gptq]") {
  TempDir dir;
  const std::string model = TestData("model/stories260K");
  const std::string tokens = lmkit::test::WriteTokenFile(dir, 1024, 500);
  auto r = RunLmkit({"quantize", model, "-o", dir.file("a"), "--method", "gptq"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit quantize: --method gptq needs --calibration-tokens\n");
  r = RunLmkit({"quantize", model, "-o", dir.file("a"), "--smoothquant", "1.5", "--calibration-tokens", tokens});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--smoothquant must be a number in [0, 1] or auto") != std::string::npos);
  r = RunLmkit({"quantize", model, "-o", dir.file("a"), "--method", "obs"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--method must be rtn or gptq, not 'obs'") != std::string::npos);
  r = RunLmkit({"quantize", model, "-o", dir.file("a"), "--calibration-tokens", tokens});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--calibration-tokens is read by --method gptq and --smoothquant only") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("a")));
  r = RunLmkit({"quantize", model, "-o", dir.file("a"), "--scheme", "w8a8", "--method", "gptq", "--smoothquant", "0.5",
                "--calibration-tokens", tokens, "--seq-len", "128", "--samples", "4", "--json"});
  REQUIRE(r.exit_code == 0);
  const Json j = ParseOut(r.out);
  CHECK(j["method"] == "gptq");
  CHECK(j["calibration_run"]["samples"] == 4);
  CHECK(j["calibration_run"]["seq_len"] == 128);
  CHECK(j["smoothquant_alpha"] == 0.5);
  REQUIRE(j["smoothquant"].size() == 10);
  CHECK(j["smoothquant"][0]["norm"] == "model.layers.0.input_layernorm");
  CHECK(j["smoothquant"][0]["scale_spread"].get<double>() >= 1.0);
  REQUIRE(j["tensors"].size() == 35);
  for (const Json& t : j["tensors"]) {
    CHECK(t["gptq_error"].get<double>() > 0);
    CHECK(t["rtn_error"].get<double>() > 0);
  }
  r = RunLmkit({"quantize", model, "-o", dir.file("b"), "--scheme", "w4a16", "--granularity", "group:4", "--method",
                "gptq", "--calibration-tokens", tokens, "--seq-len", "256"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("GPTQ reconstruction error") != std::string::npos);
  CHECK(r.out.find("model.layers.4.mlp.down_proj.weight") != std::string::npos);
}

TEST_CASE("quantize --calibration-text: text and JSONL through a tokenizer give the --calibration-tokens bytes",
          "[quant][cli][gptq]") {
  TempDir dir;
  const std::string text = TestData("bpe/tinystories_sample.txt");
  auto r = RunLmkit({"bpe", "train", text, "--vocab-size", "300", "--quiet", "-o", dir.file("tok")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  r = RunLmkit({"bpe", "encode", text, "-t", dir.file("tok"), "--dtype", "u32", "--quiet", "-o", dir.file("ids.bin")});
  REQUIRE(r.exit_code == 0);
  // One JSONL document holding the whole text: the same ids.
  Json doc = Json::object();
  doc["text"] = ReadAll(text);
  lmkit::test::WriteAll(dir.file("docs.jsonl"), doc.dump() + "\n");
  const std::string model = TestData("model/stories260K");
  const std::vector<std::string> common = {"--scheme",  "w8a8", "--method",  "gptq", "--smoothquant", "0.5",
                                           "--seq-len", "64",   "--samples", "4",    "--quiet"};
  auto run = [&](const std::string& out, std::vector<std::string> calib) {
    std::vector<std::string> args = {"quantize", model, "-o", dir.file(out)};
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), calib.begin(), calib.end());
    return RunLmkit(args);
  };
  r = run("ids", {"--calibration-tokens", dir.file("ids.bin"), "--tokens-dtype", "u32"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string want = ReadAll(dir.file("ids/model.safetensors"));
  REQUIRE(!want.empty());
  for (const std::string& in : {text, dir.file("docs.jsonl")}) {
    INFO(in);
    const std::string out = in == text ? "text" : "jsonl";
    std::vector<std::string> calib = {"--calibration-text", in, "--tokenizer", dir.file("tok"), "--json"};
    // One document: the separator that joins documents never appears.
    if (in != text) calib.insert(calib.end(), {"--doc-separator", "\n"});
    r = run(out, calib);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(ParseOut(r.out)["calibration_run"]["tokens"] == in);
    CHECK(ReadAll(dir.file(out + "/model.safetensors")) == want);
  }
  // No scratch ids are left beside the output.
  for (const auto& e : fs::directory_iterator(dir.path()))
    CHECK(e.path().filename().string().find(".lmkit-calibration-ids") == std::string::npos);
  r = run("c", {"--calibration-text", text});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit quantize: --calibration-text and --tokenizer go together\n");
  r = run("c",
          {"--calibration-text", text, "--tokenizer", dir.file("tok"), "--calibration-tokens", dir.file("ids.bin")});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit quantize: give --calibration-tokens or --calibration-text, not both\n");
  r = run("c", {"--calibration-text", dir.file("missing.txt"), "--tokenizer", dir.file("tok")});
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("missing.txt") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_FALSE(fs::exists(dir.file("c")));
}
