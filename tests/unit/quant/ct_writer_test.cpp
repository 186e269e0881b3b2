// The compressed-tensors output of `lmkit quantize` on stories260K: the tensors each scheme writes, codes within half
// a step of the weights at scale = row absmax / 127.5, copied tensors byte for byte, and config.json's
// quantization_config.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"
#include "lmkit/formats/pack_quantized.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/quant/quantize.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::quant;

namespace {

const std::string kCtModel = lmkit::test::TestData("model/stories260K");

io::SafetensorsFile CtQuantized(const lmkit::test::TempDir& dir, QuantScheme scheme, Json* config) {
  QuantizeRequest o;
  o.input = kCtModel;
  o.output = dir.file("out");
  o.scheme = scheme;
  auto rep = Quantize(o, nullptr);
  INFO(rep.status().ToString());
  REQUIRE(rep.ok());
  auto cfg = ParseJson(*ReadFileToString(dir.file("out/config.json")), "config.json");
  REQUIRE(cfg.ok());
  *config = *cfg;
  auto st = io::SafetensorsFile::Open(dir.file("out/model.safetensors"));
  REQUIRE(st.ok());
  return std::move(*st);
}

std::vector<float> CtFloats(const io::SafetensorsFile& st, const std::string& name) {
  const io::TensorInfo* t = st.Find(name);
  REQUIRE(t != nullptr);
  REQUIRE(t->dtype == io::DType::kF32);
  std::vector<float> v(t->num_elements());
  std::memcpy(v.data(), st.Data(*t).data(), v.size() * sizeof(float));
  return v;
}

}  // namespace

TEST_CASE("ct writer: w8a16 packs codes within half a step of the weights", "[quant][ct_writer]") {
  lmkit::test::TempDir dir;
  Json cfg;
  const io::SafetensorsFile out = CtQuantized(dir, QuantScheme::kW8A16, &cfg);
  auto in = io::SafetensorsFile::Open(kCtModel + "/model.safetensors");
  REQUIRE(in.ok());
  const std::string m = "model.layers.2.self_attn.q_proj";
  CHECK(out.Find(m + ".weight") == nullptr);
  const io::TensorInfo* packed = out.Find(m + ".weight_packed");
  REQUIRE(packed != nullptr);
  CHECK(packed->dtype == io::DType::kI32);
  CHECK(packed->shape == std::vector<uint64_t>{64, formats::PackedWords(64)});
  const io::TensorInfo* shape = out.Find(m + ".weight_shape");
  REQUIRE(shape != nullptr);
  int64_t dims[2];
  std::memcpy(dims, out.Data(*shape).data(), sizeof dims);
  CHECK(dims[0] == 64);
  CHECK(dims[1] == 64);
  const std::vector<float> w = CtFloats(*in, m + ".weight");
  const std::vector<float> scale = CtFloats(out, m + ".weight_scale");
  REQUIRE(scale.size() == 64);
  const uint8_t* rows = out.Data(*packed).data();
  double worst = 0;
  for (int r = 0; r < 64; ++r) {
    float amax = 0;
    for (int c = 0; c < 64; ++c) amax = std::max(amax, std::fabs(w[r * 64 + c]));
    CHECK(scale[r] == Approx(amax / 127.5).epsilon(1e-6));
    for (int c = 0; c < 64; ++c) {
      const double q = formats::UnpackCode8(rows + r * formats::PackedWords(64) * 4, static_cast<uint64_t>(c));
      worst = std::max(worst, std::fabs(w[r * 64 + c] - q * scale[r]) / scale[r]);
    }
  }
  CHECK(worst <= 0.5 + 1e-5);
  // Norms and the embedding are copied unchanged.
  for (const char* name : {"model.norm.weight", "model.embed_tokens.weight", "model.layers.0.input_layernorm.weight"}) {
    const io::TensorInfo* a = in->Find(name);
    const io::TensorInfo* b = out.Find(name);
    REQUIRE(b != nullptr);
    CHECK(std::memcmp(in->Data(*a).data(), out.Data(*b).data(), a->num_bytes()) == 0);
  }
  const Json& qc = cfg["quantization_config"];
  CHECK(qc["quant_method"] == "compressed-tensors");
  CHECK(qc["format"] == "pack-quantized");
  CHECK(qc["config_groups"]["group_0"]["targets"] == Json::array({"Linear"}));
  CHECK(qc["config_groups"]["group_0"]["weights"]["strategy"] == "channel");
  CHECK(qc["config_groups"]["group_0"]["input_activations"].is_null());
  CHECK(cfg["model_type"] == "llama");  // the rest of config.json is kept
}

TEST_CASE("ct writer: w8a8 stores int8 weights, fp8 E4M3 weights, both with dynamic activations",
          "[quant][ct_writer]") {
  lmkit::test::TempDir dir;
  Json cfg;
  {
    const io::SafetensorsFile out = CtQuantized(dir, QuantScheme::kW8A8, &cfg);
    const io::TensorInfo* w = out.Find("model.layers.0.mlp.up_proj.weight");
    REQUIRE(w != nullptr);
    CHECK(w->dtype == io::DType::kI8);
    CHECK(w->shape == std::vector<uint64_t>{172, 64});
    CHECK(out.Find("model.layers.0.mlp.up_proj.weight_scale") != nullptr);
    CHECK(out.Find("model.layers.0.mlp.up_proj.input_scale") == nullptr);  // dynamic: no calibration
    CHECK(cfg["quantization_config"]["format"] == "int-quantized");
    CHECK(cfg["quantization_config"]["config_groups"]["group_0"]["input_activations"]["strategy"] == "token");
  }
  lmkit::test::TempDir dir8;
  const io::SafetensorsFile out = CtQuantized(dir8, QuantScheme::kFp8, &cfg);
  const io::TensorInfo* w = out.Find("model.layers.0.mlp.up_proj.weight");
  REQUIRE(w != nullptr);
  CHECK(w->dtype == io::DType::kF8E4M3);
  CHECK(cfg["quantization_config"]["format"] == "float-quantized");
  CHECK(cfg["quantization_config"]["config_groups"]["group_0"]["weights"]["type"] == "float");
}
