// Sequential GPTQ (calibrated.h RunSequential) against the one-pass path on stories260K: where both see the same
// inputs (a one-layer model, the first layer of any model) they give the same bytes; after the first layer the
// sequential Hessians come from the quantized layers' outputs, so codes differ; the scratch file and the in-memory
// tensors write the same checkpoint; thread counts do not change bytes.
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>

#include "lmkit/common/json.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/io/token_file.h"
#include "lmkit/model/generate.h"
#include "lmkit/quant/quantize.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::quant;
using lmkit::test::TempDir;

namespace {

const std::string kModel = lmkit::test::TestData("model/stories260K");

std::string Tokens(const TempDir& d) {
  model::GenerateRequest g;
  g.model = kModel;
  g.prompt = {1};
  g.max_tokens = 63;
  g.samples = 8;
  g.temperature = 1.0;
  g.seed = 5;
  g.threads = 2;
  auto r = model::Generate(g, nullptr);
  REQUIRE(r.ok());
  std::vector<uint32_t> ids;
  for (const auto& s : r->sequences) ids.insert(ids.end(), s.begin(), s.end());
  const std::string p = d.file("calib.npy");
  auto w = io::TokenWriter::Create(p, io::TokenFormatFromPath(p), io::TokenDtype::kU16);
  REQUIRE(w.ok());
  REQUIRE(w->Append(ids).ok());
  REQUIRE(w->Commit().ok());
  return p;
}

// stories260K cut to its first `layers` decoder layers (config and tensors).
std::string Truncated(const TempDir& d, uint32_t layers) {
  const std::string dir = d.file("trunc" + std::to_string(layers));
  std::filesystem::create_directory(dir);
  std::string cfg = lmkit::test::ReadAll(kModel + "/config.json");
  cfg = std::regex_replace(cfg, std::regex("\"num_hidden_layers\": 5"),
                           "\"num_hidden_layers\": " + std::to_string(layers));
  lmkit::test::WriteAll(dir + "/config.json", cfg);
  auto st = io::SafetensorsFile::Open(kModel + "/model.safetensors");
  REQUIRE(st.ok());
  std::vector<io::TensorSpec> specs;
  std::vector<const io::TensorInfo*> keep;
  for (const io::TensorInfo& t : st->tensors()) {
    std::smatch m;
    if (std::regex_search(t.name, m, std::regex("^model\\.layers\\.(\\d+)\\.")) && std::stoul(m[1].str()) >= layers)
      continue;
    specs.push_back({t.name, t.dtype, t.shape});
    keep.push_back(&t);
  }
  auto w = io::SafetensorsWriter::Create(dir + "/model.safetensors", specs);
  REQUIRE(w.ok());
  for (const io::TensorInfo* t : keep) REQUIRE(w->Write(st->Data(*t)).ok());
  REQUIRE(w->Commit().ok());
  return dir;
}

QuantizeRequest Gptq(const std::string& model, const std::string& tokens, const std::string& out) {
  QuantizeRequest o;
  o.input = model;
  o.output = out;
  o.scheme = QuantScheme::kW8A8;
  o.method = QuantMethod::kGptq;
  o.calibration_tokens = tokens;
  o.seq_len = 64;
  o.threads = 2;
  return o;
}

std::vector<int8_t> Codes(const std::string& dir, const std::string& name) {
  auto st = io::SafetensorsFile::Open(dir + "/model.safetensors");
  REQUIRE(st.ok());
  const io::TensorInfo* t = st->Find(name);
  REQUIRE(t != nullptr);
  REQUIRE(t->dtype == io::DType::kI8);
  const auto d = st->Data(*t);
  return std::vector<int8_t>(reinterpret_cast<const int8_t*>(d.data()),
                             reinterpret_cast<const int8_t*>(d.data()) + d.size());
}

}  // namespace

TEST_CASE("sequential GPTQ: one layer gives the one-pass bytes, the first layer of five too, the later ones not",
          "[quant][gptq][sequential]") {
  TempDir d;
  const std::string tokens = Tokens(d);
  const std::string one = Truncated(d, 1);
  QuantizeRequest seq = Gptq(one, tokens, d.file("seq1"));
  QuantizeRequest pass = Gptq(one, tokens, d.file("pass1"));
  pass.sequential = false;
  auto rs = Quantize(seq, nullptr);
  INFO(rs.status().ToString());
  REQUIRE(rs.ok());
  REQUIRE(Quantize(pass, nullptr).ok());
  CHECK(lmkit::test::ReadAll(seq.output + "/model.safetensors") ==
        lmkit::test::ReadAll(pass.output + "/model.safetensors"));
  REQUIRE(rs->calibration_run.has_value());
  CHECK(rs->calibration_run->samples == 8);
  CHECK(rs->tensors.size() == 7);

  // Five layers: layer 0's inputs are the float model's either way; layer 4's come from quantized layers.
  QuantizeRequest seq5 = Gptq(kModel, tokens, d.file("seq5"));
  QuantizeRequest pass5 = Gptq(kModel, tokens, d.file("pass5"));
  pass5.sequential = false;
  auto r5 = Quantize(seq5, nullptr);
  REQUIRE(r5.ok());
  REQUIRE(Quantize(pass5, nullptr).ok());
  for (const char* m : {"q_proj", "k_proj", "v_proj"}) {
    const std::string n0 = std::string("model.layers.0.self_attn.") + m + ".weight";
    CHECK(Codes(seq5.output, n0) == Codes(pass5.output, n0));
  }
  const std::string n4 = "model.layers.4.mlp.down_proj.weight";
  CHECK(Codes(seq5.output, n4) != Codes(pass5.output, n4));
  for (const TensorReport& t : r5->tensors) {
    INFO(t.name);
    REQUIRE(t.gptq_error.has_value());
    CHECK(*t.gptq_error <= *t.rtn_error);
  }
}

TEST_CASE("sequential GPTQ + SmoothQuant: scratch file and in-memory write the same bytes, for 1 and 2 threads",
          "[quant][gptq][sequential]") {
  TempDir d;
  const std::string tokens = Tokens(d);
  QuantizeRequest a = Gptq(kModel, tokens, d.file("a"));
  a.smoothquant_alpha = 0.8;
  a.threads = 1;
  QuantizeRequest b = a;
  b.output = d.file("b");
  b.keep_in_memory = true;
  b.threads = 2;
  auto ra = Quantize(a, nullptr);
  INFO(ra.status().ToString());
  REQUIRE(ra.ok());
  REQUIRE(Quantize(b, nullptr).ok());
  CHECK(lmkit::test::ReadAll(a.output + "/model.safetensors") == lmkit::test::ReadAll(b.output + "/model.safetensors"));
  CHECK(ra->smoothquant.size() == 10);  // two norms a layer
  // Nothing but the output is left in its directory (the scratch file was unlinked).
  std::vector<std::string> names = lmkit::test::ListDir(d.path());
  for (const std::string& n : names) CHECK(n.find("scratch") == std::string::npos);
}

TEST_CASE("sequential SmoothQuant without GPTQ: the float model's statistics, the one-pass bytes",
          "[quant][gptq][sequential]") {
  // SmoothQuant's ranges come from the float layers (llm-compressor runs SmoothQuant's own pass first), which the
  // chained layers compute bit for bit as Forward does.
  TempDir d;
  const std::string tokens = Tokens(d);
  QuantizeRequest seq = Gptq(kModel, tokens, d.file("s"));
  seq.method = QuantMethod::kRtn;
  seq.smoothquant_alpha = 0.5;
  QuantizeRequest pass = seq;
  pass.output = d.file("p");
  pass.sequential = false;
  auto rs = Quantize(seq, nullptr);
  auto rp = Quantize(pass, nullptr);
  REQUIRE(rs.ok());
  REQUIRE(rp.ok());
  REQUIRE(rs->smoothquant.size() == 10);
  CHECK(lmkit::test::ReadAll(seq.output + "/model.safetensors") ==
        lmkit::test::ReadAll(pass.output + "/model.safetensors"));
}
