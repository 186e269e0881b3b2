// Calibration on the model's own activations: windows of seq_len over the token file, one range per Linear input,
// and the first layer's range held to RMSNorm of the embeddings computed here from the checkpoint.
#include "lmkit/model/calibrate_model.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "lmkit/io/safetensors.h"
#include "lmkit/io/token_file.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::model;
using lmkit::test::TempDir;

namespace {

const std::string kCalibModel = lmkit::test::TestData("model/stories260K");

std::string WriteCalibTokens(const TempDir& d, const std::vector<uint32_t>& ids) {
  const std::string p = d.file("t.bin");
  auto w = io::TokenWriter::Create(p, io::TokenFormat::kBin, io::TokenDtype::kU16);
  REQUIRE(w.ok());
  REQUIRE(w->Append(ids).ok());
  REQUIRE(w->Commit().ok());
  return p;
}

std::vector<float> F32Tensor(const io::SafetensorsFile& st, const std::string& name) {
  const io::TensorInfo* t = st.Find(name);
  REQUIRE(t != nullptr);
  std::vector<float> v(t->num_elements());
  std::memcpy(v.data(), st.Data(*t).data(), v.size() * sizeof(float));
  return v;
}

}  // namespace

TEST_CASE("calibrate model: the first layer's input range is max |RMSNorm(embedding) x weight|",
          "[model][calibrate_model]") {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 40; ++i) ids.push_back((i * 37 + 5) % 512);
  TempDir d;
  CalibrateModelRequest o;
  o.model = kCalibModel;
  o.tokens = WriteCalibTokens(d, ids);
  o.seq_len = 16;  // windows of 16, 16 and 8 tokens
  o.calib.method = quant::CalibMethod::kMinMax;
  auto table = CalibrateModel(o, nullptr);
  INFO(table.status().ToString());
  REQUIRE(table.ok());
  REQUIRE(table->tensors.size() == 35);  // 5 layers x 7 Linears
  const auto& q = table->tensors[0];
  CHECK(q.name == "model.layers.0.self_attn.q_proj");
  CHECK(q.samples == 40 * 64);              // every token, in_features 64
  CHECK(table->tensors[1].amax == q.amax);  // k_proj: the same input
  CHECK(table->tensors[2].amax == q.amax);  // v_proj
  CHECK(table->tensors[6].name == "model.layers.0.mlp.down_proj");
  CHECK(table->tensors[6].samples == 40 * 172);

  // Layer 0's attention input depends on the token alone: x / sqrt(mean(x^2) + 1e-5) * w, in double here.
  auto st = io::SafetensorsFile::Open(kCalibModel + "/model.safetensors");
  REQUIRE(st.ok());
  const auto emb = F32Tensor(*st, "model.embed_tokens.weight");
  const auto w = F32Tensor(*st, "model.layers.0.input_layernorm.weight");
  double amax = 0;
  for (uint32_t id : ids) {
    const float* x = emb.data() + size_t{id} * 64;
    double ss = 0;
    for (int i = 0; i < 64; ++i) ss += double{x[i]} * x[i];
    const double inv = 1.0 / std::sqrt(ss / 64 + 1e-5);
    for (int i = 0; i < 64; ++i) amax = std::max(amax, std::fabs(x[i] * inv * w[i]));
  }
  CHECK(q.amax == Approx(amax).epsilon(1e-5));
}

TEST_CASE("calibrate model: seq_len, token ids and an empty file are refused before any work",
          "[model][calibrate_model]") {
  TempDir d;
  CalibrateModelRequest o;
  o.model = kCalibModel;
  o.calib.method = quant::CalibMethod::kMinMax;
  o.tokens = WriteCalibTokens(d, {1, 2, 3});
  o.seq_len = 513;
  auto long_window = CalibrateModel(o, nullptr);
  CHECK(long_window.status().code() == ErrorCode::kInvalidArgument);
  CHECK(long_window.status().message().find("exceeds max_position_embeddings 512") != std::string::npos);
  o.seq_len = 0;
  o.tokens = WriteCalibTokens(d, {1, 600, 3});
  auto bad_id = CalibrateModel(o, nullptr);
  CHECK(bad_id.status().code() == ErrorCode::kInvalidInput);
  CHECK(bad_id.status().message() == "token id 600 at index 1 is >= vocab_size 512");
  o.tokens = WriteCalibTokens(d, {});
  CHECK(CalibrateModel(o, nullptr).status().code() == ErrorCode::kInvalidInput);
}
