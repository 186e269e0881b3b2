// `lmkit quantize --method gptq --smoothquant` streams layer by layer (quant/calibrated.h): on a generated fp32 Llama
// of 64 layers the process's peak RSS (VmHWM, reported as peak_rss_bytes) stays below a quarter of the checkpoint plus
// the footprint of a run without calibration (RTN on a 2-layer model: the binary, the C++ runtime, the allocator, the
// thread pool, the writer's buffers), and barely grows with the number of layers.
#include <catch2/catch.hpp>
#include <filesystem>
#include <random>

#include "lmkit/common/json.h"
#include "lmkit/io/safetensors.h"
#include "support/run_lmkit.h"
#include "support/skip.h"

using namespace lmkit;
using lmkit::test::RunLmkit;
using lmkit::test::TempDir;

namespace {

constexpr uint32_t kHidden = 128, kVocab = 256;

// A Llama of `layers` decoder layers, hidden = intermediate = 128, fp32, random weights (tied embeddings), written
// tensor by tensor. Returns the directory; `bytes` gets the safetensors file's size.
[[maybe_unused]] std::string Generated(const TempDir& d, uint32_t layers, uint64_t* bytes) {
  const std::string dir = d.file("gen" + std::to_string(layers));
  std::filesystem::create_directory(dir);
  lmkit::test::WriteAll(dir + "/config.json", R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
"hidden_size": 128, "intermediate_size": 128, "num_hidden_layers": )" +
                                                  std::to_string(layers) +
                                                  R"(, "num_attention_heads": 4, "num_key_value_heads": 4,
"vocab_size": 256, "max_position_embeddings": 64, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "hidden_act": "silu",
"tie_word_embeddings": true, "torch_dtype": "float32"})");
  std::vector<io::TensorSpec> specs = {{"model.embed_tokens.weight", io::DType::kF32, {kVocab, kHidden}},
                                       {"model.norm.weight", io::DType::kF32, {kHidden}}};
  for (uint32_t l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char* n : {"input_layernorm", "post_attention_layernorm"})
      specs.push_back({p + n + ".weight", io::DType::kF32, {kHidden}});
    for (const char* n : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                          "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
      specs.push_back({p + n + ".weight", io::DType::kF32, {kHidden, kHidden}});
  }
  auto w = io::SafetensorsWriter::Create(dir + "/model.safetensors", specs);
  REQUIRE(w.ok());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-0.08f, 0.08f);
  std::vector<float> v;
  for (const io::TensorSpec& s : specs) {
    v.resize(s.shape.size() == 1 ? s.shape[0] : s.shape[0] * s.shape[1]);
    for (float& x : v) x = s.shape.size() == 1 ? 1.0f + u(rng) : u(rng);
    REQUIRE(w->Write(v.data(), v.size() * sizeof(float)).ok());
  }
  REQUIRE(w->Commit().ok());
  *bytes = std::filesystem::file_size(dir + "/model.safetensors");
  return dir;
}

// peak_rss_bytes of `lmkit quantize MODEL` with `args`.
[[maybe_unused]] uint64_t PeakRss(const TempDir& d, const std::string& model, const std::string& out,
                                  const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"quantize", model, "-o", d.file(out), "--threads", "2", "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunLmkit(argv);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const Json j = lmkit::test::StdoutJson(r);
  return j["totals"]["peak_rss_bytes"].get<uint64_t>();
}

}  // namespace

TEST_CASE("quantize --method gptq streams layer by layer: peak RSS below a quarter of the checkpoint",
          "[quant][cli][gptq][sequential]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  LMKIT_SKIP("the sanitizers' shadow memory and quarantine change resident memory");
#else
  TempDir d;
  const std::string tokens = lmkit::test::WriteTokenFile(d, 4 * 64, kVocab);  // 4 windows of 64
  uint64_t big_bytes = 0, small_bytes = 0;
  const std::string big = Generated(d, 64, &big_bytes);
  const std::string small = Generated(d, 2, &small_bytes);
  const std::vector<std::string> gptq = {
      "--scheme", "w8a8",      "--method", "gptq", "--smoothquant", "0.8", "--calibration-tokens",
      tokens,     "--seq-len", "64"};
  const uint64_t peak_big = PeakRss(d, big, "q64", gptq);
  const uint64_t peak_small = PeakRss(d, small, "q2", gptq);
  const uint64_t base = PeakRss(d, small, "rtn", {"--scheme", "w8a8"});
  INFO("checkpoint " << big_bytes << " B, peak " << peak_big << " B; 2 layers " << peak_small << " B; RTN " << base
                     << " B");
  CHECK(big_bytes > 29'000'000);
  CHECK(peak_big < big_bytes / 4 + base);
  // 32x the layers (+28 MB of checkpoint), a few MB more at most: the report and the allocator's bookkeeping.
  CHECK(peak_big < peak_small + (uint64_t{4} << 20));
#endif
}
