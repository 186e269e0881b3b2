// GPTQ, SmoothQuant and W4A16 through `lmkit quantize` on stories260K (quantize.h, calibrated.h): the calibration run,
// the checkpoints they write (codes against scales, smoothed norms times smoothed weights equal to the originals), the
// model's KL against the float model, and the request errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"
#include "lmkit/formats/pack_quantized.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/io/token_file.h"
#include "lmkit/model/eval.h"
#include "lmkit/model/generate.h"
#include "lmkit/quant/quantize.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::quant;
using lmkit::test::TempDir;

namespace {

const std::string kModel = lmkit::test::TestData("model/stories260K");

// Text the model itself samples (temperature 1), so the activations are those of real sequences.
std::string SampledTokens(const TempDir& d, const std::string& name, uint32_t samples, uint64_t seed) {
  model::GenerateRequest g;
  g.model = kModel;
  g.prompt = {1};
  g.max_tokens = 127;
  g.samples = samples;
  g.temperature = 1.0;
  g.seed = seed;
  g.threads = 2;
  auto r = model::Generate(g, nullptr);
  REQUIRE(r.ok());
  std::vector<uint32_t> ids;
  for (const auto& s : r->sequences) ids.insert(ids.end(), s.begin(), s.end());
  const std::string p = d.file(name);
  auto w = io::TokenWriter::Create(p, io::TokenFormatFromPath(p), io::TokenDtype::kU16);
  REQUIRE(w.ok());
  REQUIRE(w->Append(ids).ok());
  REQUIRE(w->Commit().ok());
  return p;
}

std::vector<float> Floats(const io::SafetensorsFile& st, const std::string& name) {
  const io::TensorInfo* t = st.Find(name);
  REQUIRE(t != nullptr);
  std::vector<float> out(t->num_elements());
  io::ConvertToF32(t->dtype, st.Data(*t).data(), out.data(), out.size());
  return out;
}

QuantizeRequest Calibrated(const std::string& tokens, const std::string& out, QuantScheme scheme) {
  QuantizeRequest o;
  o.input = kModel;
  o.output = out;
  o.scheme = scheme;
  o.calibration_tokens = tokens;
  o.seq_len = 128;
  o.threads = 2;
  return o;
}

double MeanKl(const std::string& quantized, const std::string& tokens) {
  model::EvalRequest e;
  e.model = kModel;
  e.compare = quantized;
  e.tokens = tokens;
  e.seq_len = 128;
  e.threads = 2;
  auto r = model::Evaluate(e, nullptr);
  REQUIRE(r.ok());
  REQUIRE(r->compare.has_value());
  return r->compare->mean_kl;
}

}  // namespace

TEST_CASE("quantize --method gptq: W8A8 codes within range, errors below RTN's, KL below RTN's", "[quant][gptq]") {
  TempDir d;
  const std::string calib = SampledTokens(d, "calib.bin", 16, 1), held = SampledTokens(d, "held.bin", 8, 2);
  QuantizeRequest o = Calibrated(calib, d.file("gptq"), QuantScheme::kW8A8);
  o.method = QuantMethod::kGptq;
  auto rep = Quantize(o, nullptr);
  INFO(rep.status().ToString());
  REQUIRE(rep.ok());
  CHECK(rep->method == "gptq");
  REQUIRE(rep->calibration_run);
  CHECK(rep->calibration_run->samples == 16);
  CHECK(rep->calibration_run->seq_len == 128);
  REQUIRE(rep->tensors.size() == 35);  // 5 layers x 7 Linears
  double gptq = 0, rtn = 0;
  int better = 0;
  for (const TensorReport& t : rep->tensors) {
    REQUIRE(t.gptq_error);
    REQUIRE(t.rtn_error);
    CHECK(*t.gptq_error > 0);
    gptq += *t.gptq_error;
    rtn += *t.rtn_error;
    better += *t.gptq_error <= *t.rtn_error ? 1 : 0;
    CHECK(t.stats.SqnrDb() > 30);
  }
  CHECK(gptq < 0.7 * rtn);
  CHECK(better >= 33);
  // The checkpoint: I8 codes with channel scales, loaded and run by lmkit's own forward pass.
  auto st = io::SafetensorsFile::Open(d.file("gptq/model.safetensors"));
  REQUIRE(st.ok());
  const io::TensorInfo* q = st->Find("model.layers.0.self_attn.q_proj.weight");
  REQUIRE(q != nullptr);
  CHECK(q->dtype == io::DType::kI8);
  o.method = QuantMethod::kRtn;
  o.calibration_tokens.clear();
  o.output = d.file("rtn");
  REQUIRE(Quantize(o, nullptr).ok());
  const double kl_gptq = MeanKl(d.file("gptq"), held), kl_rtn = MeanKl(d.file("rtn"), held);
  CHECK(kl_gptq < kl_rtn);
}

TEST_CASE("quantize --smoothquant: norm / s times W * s is the original product, scales reported", "[quant][gptq]") {
  TempDir d;
  const std::string calib = SampledTokens(d, "calib.bin", 8, 3);
  QuantizeRequest o = Calibrated(calib, d.file("sq"), QuantScheme::kW8A8);
  o.smoothquant_alpha = 0.8;
  o.method = QuantMethod::kGptq;
  auto rep = Quantize(o, nullptr);
  INFO(rep.status().ToString());
  REQUIRE(rep.ok());
  REQUIRE(rep->smoothquant.size() == 10);  // 2 norms per layer
  CHECK(rep->smoothquant[0].norm == "model.layers.0.input_layernorm");
  CHECK(rep->smoothquant[1].balanced ==
        std::vector<std::string>{"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"});
  for (const SmoothReport& s : rep->smoothquant) {
    CHECK(s.scale_min >= 1e-5f);
    CHECK(s.scale_max > s.scale_min);
  }
  // The smoothed norm (written as float) times the dequantized smoothed weight is the original norm times weight,
  // within the weight's quantization error.
  auto orig = io::SafetensorsFile::Open(kModel + "/model.safetensors");
  auto out = io::SafetensorsFile::Open(d.file("sq/model.safetensors"));
  REQUIRE(orig.ok());
  REQUIRE(out.ok());
  const std::vector<float> g = Floats(*orig, "model.layers.2.post_attention_layernorm.weight");
  const std::vector<float> g2 = Floats(*out, "model.layers.2.post_attention_layernorm.weight");
  const std::vector<float> w = Floats(*orig, "model.layers.2.mlp.up_proj.weight");
  const io::TensorInfo* codes = out->Find("model.layers.2.mlp.up_proj.weight");
  REQUIRE(codes != nullptr);
  const std::vector<float> sc = Floats(*out, "model.layers.2.mlp.up_proj.weight_scale");
  const uint64_t rows = codes->shape[0], cols = codes->shape[1];
  const int8_t* c = reinterpret_cast<const int8_t*>(out->Data(*codes).data());
  double num = 0, den = 0;
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t j = 0; j < cols; ++j) {
      const double want = static_cast<double>(g[j]) * w[r * cols + j];
      const double got = static_cast<double>(g2[j]) * c[r * cols + j] * sc[r];
      num += (got - want) * (got - want);
      den += want * want;
    }
  CHECK(num / den < 1e-3);  // INT8 noise only: the smoothing itself is exact
  CHECK(g2 != g);
}

TEST_CASE("quantize --smoothquant auto picks the alpha with the lowest held-out KL", "[quant][gptq]") {
  TempDir d;
  const std::string calib = SampledTokens(d, "calib.bin", 10, 4);
  QuantizeRequest o = Calibrated(calib, d.file("auto"), QuantScheme::kW8A8);
  o.smoothquant_auto = true;
  auto rep = Quantize(o, nullptr);
  INFO(rep.status().ToString());
  REQUIRE(rep.ok());
  REQUIRE(rep->calibration_run);
  CHECK(rep->calibration_run->held_out == 2);
  CHECK(rep->calibration_run->samples == 8);
  REQUIRE(rep->alpha_sweep.size() == SmoothQuantAlphas().size());
  double best = 1e9, best_alpha = -1;
  for (const AlphaTrial& t : rep->alpha_sweep) {
    CHECK(t.mean_kl > 0);
    if (t.mean_kl < best) {
      best = t.mean_kl;
      best_alpha = t.alpha;
    }
  }
  REQUIRE(rep->smoothquant_alpha);
  CHECK(*rep->smoothquant_alpha == best_alpha);
  CHECK(!std::filesystem::exists(d.file("auto.lmkit-alpha-sweep")));
}

TEST_CASE("quantize --scheme w4a16: nibbles packed as compressed-tensors, codes within half a step", "[quant][gptq]") {
  TempDir d;
  for (bool gptq : {false, true}) {
    INFO("gptq " << gptq);
    const std::string calib = gptq ? SampledTokens(d, "calib.bin", 4, 5) : std::string();
    QuantizeRequest o = Calibrated(calib, d.file(gptq ? "w4g" : "w4r"), QuantScheme::kW4A16);
    o.granularity = Granularity{Granularity::Kind::kGroup, 4};
    if (gptq) o.method = QuantMethod::kGptq;
    auto rep = Quantize(o, nullptr);
    INFO(rep.status().ToString());
    REQUIRE(rep.ok());
    auto cfg = ParseJson(*ReadFileToString(o.output + "/config.json"), "config.json");
    REQUIRE(cfg.ok());
    const Json& weights = (*cfg)["quantization_config"]["config_groups"]["group_0"]["weights"];
    CHECK(weights["num_bits"] == 4);
    CHECK(weights["strategy"] == "group");
    CHECK(weights["group_size"] == 4);
    CHECK((*cfg)["quantization_config"]["format"] == "pack-quantized");
    auto orig = io::SafetensorsFile::Open(kModel + "/model.safetensors");
    auto out = io::SafetensorsFile::Open(o.output + "/model.safetensors");
    REQUIRE(out.ok());
    const std::string m = "model.layers.1.mlp.down_proj";
    const io::TensorInfo* packed = out->Find(m + ".weight_packed");
    REQUIRE(packed != nullptr);
    const uint64_t rows = 64, cols = 172;
    CHECK(packed->shape == std::vector<uint64_t>{rows, (cols + 7) / 8});
    const std::vector<float> sc = Floats(*out, m + ".weight_scale");
    REQUIRE(sc.size() == rows * cols / 4);
    const std::vector<float> w = Floats(*orig, m + ".weight");
    const uint8_t* bytes = out->Data(*packed).data();
    int far = 0;
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t c = 0; c < cols; ++c) {
        const int code = formats::UnpackCode4(bytes + r * packed->shape[1] * 4, c);
        const float s = sc[r * (cols / 4) + c / 4];
        CHECK(code >= -8);
        CHECK(code <= 7);
        if (!gptq)
          CHECK(std::fabs(code * s - w[r * cols + c]) <= s * 0.5f * (1 + 1e-5f));
        else
          far += std::fabs(code * s - w[r * cols + c]) > s * 0.5f * (1 + 1e-5f) ? 1 : 0;  // GPTQ moves some codes
      }
    if (gptq) CHECK(far > 0);
  }
}

TEST_CASE("quantize: the calibrated methods' request errors", "[quant][gptq]") {
  TempDir d;
  QuantizeRequest o;
  o.input = kModel;
  o.output = d.file("out");
  o.method = QuantMethod::kGptq;
  CHECK(Quantize(o, nullptr).status().message() == Field("method") + " gptq needs " + Field("calibration_tokens"));
  o.method = QuantMethod::kRtn;
  o.calibration_tokens = d.file("t.bin");
  CHECK(Quantize(o, nullptr).status().message().find("is read by") != std::string::npos);
  o.smoothquant_alpha = 1.5;
  CHECK(Quantize(o, nullptr).status().message() == Field("smoothquant") + " alpha must be in [0, 1]");
  o.smoothquant_alpha.reset();
  o.method = QuantMethod::kGptq;
  o.scheme = QuantScheme::kFp8;
  CHECK(Quantize(o, nullptr).status().code() == ErrorCode::kInvalidArgument);
  o.scheme = QuantScheme::kW8A16;
  o.format = QuantFormat::kGgufQ8_0;
  CHECK(Quantize(o, nullptr).status().message().find("compressed-tensors only") != std::string::npos);
  o.format = QuantFormat::kCompressedTensors;
  CHECK(Quantize(o, nullptr).status().code() == ErrorCode::kNotFound);  // the token file
  CHECK(!std::filesystem::exists(o.output));
  const std::string few = lmkit::test::WriteTokenFile(d, 100, 500);
  o.calibration_tokens = few;
  o.seq_len = 128;
  auto r = Quantize(o, nullptr);
  CHECK(r.status().code() == ErrorCode::kInvalidInput);
  CHECK(r.status().message().find("window") != std::string::npos);
  CHECK(!std::filesystem::exists(o.output));
}
