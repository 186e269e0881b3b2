// Every supported family against transformers: tiny random checkpoints that transformers 5 saved itself
// (tests/data/model/<family>/, scripts/model-fixtures.py) with its fp32 logits over a fixed sequence and its greedy
// ids. lmkit's logits must be within 1e-4 of transformers' at every position, and greedy decoding with the KV cache
// must give the same ids. The two silent defects of #39 are the llama3 (rope_parameters, theta 500000) and mistral
// (sliding window 8 over 48 tokens) fixtures; the variants below show they would fail when read the old way.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"
#include "lmkit/io/npy.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/model/llama.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::model;
using lmkit::test::TempDir;
using lmkit::test::TestData;
namespace fs = std::filesystem;

namespace {

template <typename T>
std::vector<T> Npy(const std::string& path) {
  auto f = io::NpyFile::Open(path);
  REQUIRE(f.ok());
  std::vector<T> out(f->header().num_elements());
  REQUIRE(f->data().size() == out.size() * sizeof(T));
  std::memcpy(out.data(), f->data().data(), f->data().size());
  return out;
}

struct Fixture {
  std::vector<uint32_t> tokens, greedy;
  std::vector<float> logits;  // [T, vocab]
};

Fixture Load(const std::string& dir) {
  Fixture f;
  for (uint32_t t : Npy<uint32_t>(dir + "/tokens.npy")) f.tokens.push_back(t);
  for (uint32_t t : Npy<uint32_t>(dir + "/greedy.npy")) f.greedy.push_back(t);
  f.logits = Npy<float>(dir + "/logits.npy");
  return f;
}

// max |lmkit - transformers| over every position's logits.
double MaxDelta(const LlamaModel& m, const Fixture& f, unsigned threads) {
  const uint32_t n = static_cast<uint32_t>(f.tokens.size()), V = m.config().vocab;
  std::vector<float> out(size_t{n} * V);
  KvCache c = m.NewCache(n);
  ThreadPool pool(threads);
  const Status s = m.Forward(f.tokens, c, &pool, out.data(), true);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out.size() == f.logits.size());
  double d = 0;
  for (size_t i = 0; i < out.size(); ++i) d = std::max(d, std::abs(static_cast<double>(out[i]) - f.logits[i]));
  return d;
}

// Greedy decoding from the fixture's prompt: one prefill, then one token at a time through the KV cache.
std::vector<uint32_t> Greedy(const LlamaModel& m, const std::vector<uint32_t>& prompt, size_t total) {
  const uint32_t V = m.config().vocab;
  KvCache c = m.NewCache(static_cast<uint32_t>(total));
  std::vector<float> logits(V);
  std::vector<uint32_t> ids = prompt;
  std::vector<uint32_t> step = prompt;
  ThreadPool pool(2);
  while (ids.size() < total) {
    REQUIRE(m.Forward(step, c, &pool, logits.data(), false).ok());
    const uint32_t next = static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    ids.push_back(next);
    step = {next};
  }
  return ids;
}

const char* const kFamilies[] = {"llama3",  "llama_linear", "llama_dynamic",   "mistral",     "qwen2",
                                 "qwen3",   "gemma2",       "gemma3",          "phi3",        "olmo2",
                                 "mixtral", "qwen2_moe",    "qwen3_moe_fused", "deepseek_v2", "deepseek_v3_fused"};

// A copy of fixture `family` in `dir` with config.json edited by `edit` (the weights linked, not copied).
std::string Variant(const std::string& family, const std::string& dir, const std::function<void(Json&)>& edit) {
  const std::string src = TestData("model/" + family);
  auto cfg = ParseJson(*ReadFileToString(src + "/config.json"), "cfg");
  REQUIRE(cfg.ok());
  edit(*cfg);
  fs::create_directories(dir);
  lmkit::test::WriteAll(dir + "/config.json", DumpJson(*cfg));
  fs::copy_file(src + "/model.safetensors", dir + "/model.safetensors");
  return dir;
}

}  // namespace

TEST_CASE("families: logits within 1e-4 of transformers' and the same greedy ids, for every family",
          "[model][families]") {
  for (const char* family : kFamilies) {
    const std::string dir = TestData(std::string("model/") + family);
    INFO(family);
    auto m = LlamaModel::Load(dir);
    INFO(m.status().ToString());
    REQUIRE(m.ok());
    const Fixture f = Load(dir);
    const double d1 = MaxDelta(*m, f, 1);
    CHECK(d1 <= 1e-4);
    CHECK(MaxDelta(*m, f, 3) == d1);  // the same bytes for any thread count
    const std::vector<uint32_t> prompt(f.greedy.begin(), f.greedy.begin() + 16);
    CHECK(Greedy(*m, prompt, f.greedy.size()) == f.greedy);
  }
}

TEST_CASE("families: the two silent defects of #39 fail the references when read the old way", "[model][families]") {
  TempDir tmp;
  // (a) rope_parameters ignored = theta 10000 and no llama3 scaling.
  const Fixture llama = Load(TestData("model/llama3"));
  auto old = LlamaModel::Load(Variant("llama3", tmp.path() + "/a", [](Json& j) { j.erase("rope_parameters"); }));
  REQUIRE(old.ok());
  CHECK(MaxDelta(*old, llama, 1) > 1e-2);
  // The same parameters in transformers 4's spelling (top-level rope_theta + rope_scaling) give the same logits.
  auto v4 = LlamaModel::Load(Variant("llama3", tmp.path() + "/b", [](Json& j) {
    Json p = j["rope_parameters"];
    j.erase("rope_parameters");
    j["rope_theta"] = p["rope_theta"];
    p.erase("rope_theta");
    j["rope_scaling"] = p;
  }));
  REQUIRE(v4.ok());
  CHECK(MaxDelta(*v4, llama, 1) <= 1e-4);
  // (b) the sliding window ignored = full attention over 48 tokens.
  const Fixture mistral = Load(TestData("model/mistral"));
  auto full = LlamaModel::Load(Variant("mistral", tmp.path() + "/c", [](Json& j) { j["sliding_window"] = nullptr; }));
  REQUIRE(full.ok());
  CHECK(MaxDelta(*full, mistral, 1) > 1e-2);
  CHECK(full->config().window == std::vector<uint32_t>{0, 0});
  // qwen2: the window applies from max_window_layers on, only with use_sliding_window.
  auto q = LlamaModel::Load(TestData("model/qwen2"));
  REQUIRE(q.ok());
  CHECK(q->config().window == std::vector<uint32_t>{0, 8});
  auto qoff = LlamaModel::Load(Variant("qwen2", tmp.path() + "/d", [](Json& j) { j["use_sliding_window"] = false; }));
  REQUIRE(qoff.ok());
  CHECK(qoff->config().window == std::vector<uint32_t>{0, 0});
  CHECK(MaxDelta(*qoff, Load(TestData("model/qwen2")), 1) > 1e-3);
}

TEST_CASE("families: MoE experts load from per-expert 2-D tensors and fused 3-D ones alike", "[model][families]") {
  auto fused = LlamaModel::Load(TestData("model/qwen3_moe_fused"));
  REQUIRE(fused.ok());
  const auto names = fused->LinearNames();
  // Per layer: q, k, v, o, router, 4 experts x (gate, up, down).
  REQUIRE(names.size() == 2 * (4 + 1 + 12));
  CHECK(names[4] == "model.layers.0.mlp.gate");
  CHECK(names[5] == "model.layers.0.mlp.experts.0.gate_proj");
  const auto src = fused->LinearInputSource();
  CHECK(src[1] == 0);
  CHECK(src[5] == 5);
  CHECK(src[6] == 5);
  CHECK(src[7] == 7);
  auto mixtral = LlamaModel::Load(TestData("model/mixtral"));
  REQUIRE(mixtral.ok());
  CHECK(mixtral->LinearNames()[5] == "model.layers.0.block_sparse_moe.experts.0.w1");
  auto qwen2 = LlamaModel::Load(TestData("model/qwen2_moe"));
  REQUIRE(qwen2.ok());
  // Layer 0 is dense (mlp_only_layers); layer 1: router, 4 experts, shared expert, shared_expert_gate.
  const auto q2 = qwen2->LinearNames();
  REQUIRE(q2.size() == 7 + 4 + 1 + 12 + 3 + 1);
  CHECK(q2.back() == "model.layers.1.mlp.shared_expert_gate");
  CHECK(qwen2->LinearInputSource().back() == 7 + 4);
}

// gemma3 (Gemma3ForConditionalGeneration): the text model nested in text_config, its tensors under
// model.language_model. (transformers 5) with a vision tower beside them, gives gemma3_text's logits.
TEST_CASE("families: gemma3's multimodal layout runs its language model", "[model][families]") {
  TempDir tmp;
  const std::string src = TestData("model/gemma3"), dir = tmp.path() + "/mm";
  fs::create_directories(dir);
  auto text = ParseJson(*ReadFileToString(src + "/config.json"), "cfg");
  REQUIRE(text.ok());
  (*text)["model_type"] = "gemma3_text";
  Json cfg = {{"model_type", "gemma3"}, {"text_config", *text}, {"vision_config", {{"hidden_size", 8}}}};
  lmkit::test::WriteAll(dir + "/config.json", DumpJson(cfg));
  auto st = io::SafetensorsFile::Open(src + "/model.safetensors");
  REQUIRE(st.ok());
  std::vector<io::TensorData> out;
  for (const auto& t : st->tensors()) {
    std::string name = t.name;
    if (name.rfind("model.", 0) == 0) name = "model.language_model." + name.substr(6);
    out.push_back({name, t.dtype, t.shape, st->Data(t)});
  }
  const float patch[4] = {1, 2, 3, 4};
  out.push_back({"model.vision_tower.patch.weight",
                 io::DType::kF32,
                 {2, 2},
                 std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(patch), sizeof patch)});
  REQUIRE(io::WriteSafetensors(dir + "/model.safetensors", out).ok());
  auto m = LlamaModel::Load(dir);
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  CHECK(m->config().model_type == "gemma3");
  CHECK(MaxDelta(*m, Load(src), 1) <= 1e-4);
}

// BF16 and F16 checkpoints of every family load (upcast to fp32) and stay close to the fp32 model: the difference is
// the rounding of the stored weights (and gemma's sqrt(hidden) embedding scale rounded to the embeddings' dtype).
TEST_CASE("families: BF16 and F16 copies of every family run", "[model][families]") {
  TempDir tmp;
  for (const char* family : kFamilies) {
    const std::string src = TestData(std::string("model/") + family);
    const Fixture f = Load(src);
    for (io::DType dt : {io::DType::kBF16, io::DType::kF16}) {
      INFO(family << " " << io::DTypeName(dt));
      const std::string dir = tmp.path() + "/" + family + std::string(io::DTypeName(dt));
      fs::create_directories(dir);
      fs::copy_file(src + "/config.json", dir + "/config.json");
      auto st = io::SafetensorsFile::Open(src + "/model.safetensors");
      REQUIRE(st.ok());
      std::vector<std::vector<uint8_t>> bufs;
      std::vector<io::TensorData> out;
      for (const auto& t : st->tensors()) {
        const auto bytes = st->Data(t);
        std::vector<float> v(t.num_elements());
        std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
        bufs.emplace_back(v.size() * 2);
        REQUIRE(io::ConvertFromF32(dt, v.data(), bufs.back().data(), v.size()).ok());
        out.push_back({t.name, dt, t.shape, bufs.back()});
      }
      REQUIRE(io::WriteSafetensors(dir + "/model.safetensors", out).ok());
      auto m = LlamaModel::Load(dir);
      INFO(m.status().ToString());
      REQUIRE(m.ok());
      // Top-1 agreement with the fp32 references over the 48 positions (a MoE router may flip an expert, so no
      // bound on the largest logit difference).
      const uint32_t n = static_cast<uint32_t>(f.tokens.size()), V = m->config().vocab;
      std::vector<float> logits(size_t{n} * V);
      KvCache c = m->NewCache(n);
      REQUIRE(m->Forward(f.tokens, c, nullptr, logits.data(), true).ok());
      uint32_t agree = 0;
      for (uint32_t t = 0; t < n; ++t) {
        const float* a = &logits[size_t{t} * V];
        const float* b = &f.logits[size_t{t} * V];
        CHECK(std::isfinite(a[0]));
        agree += std::max_element(a, a + V) - a == std::max_element(b, b + V) - b;
      }
      CHECK(agree >= n * 3 / 4);
    }
  }
}

// 16-bit weights are kept as stored, so their NaN/infinity check runs on the stored bits: the error names the tensor
// and the element as the fp32 path does.
TEST_CASE("families: a non-finite BF16 or F16 weight is refused naming the element", "[model][families]") {
  TempDir tmp;
  const std::string src = TestData("model/llama3");
  const std::string bad = "model.layers.0.self_attn.q_proj.weight";
  for (io::DType dt : {io::DType::kBF16, io::DType::kF16}) {
    INFO(io::DTypeName(dt));
    const std::string dir = tmp.path() + "/" + std::string(io::DTypeName(dt));
    fs::create_directories(dir);
    fs::copy_file(src + "/config.json", dir + "/config.json");
    auto st = io::SafetensorsFile::Open(src + "/model.safetensors");
    REQUIRE(st.ok());
    std::vector<std::vector<uint8_t>> bufs;
    std::vector<io::TensorData> out;
    for (const auto& t : st->tensors()) {
      std::vector<float> v(t.num_elements());
      std::memcpy(v.data(), st->Data(t).data(), v.size() * sizeof(float));
      bufs.emplace_back(v.size() * 2);
      REQUIRE(io::ConvertFromF32(dt, v.data(), bufs.back().data(), v.size()).ok());
      if (t.name == bad) {
        REQUIRE(t.shape.size() == 2);
        const uint16_t bits = dt == io::DType::kBF16 ? 0x7FC0 : 0x7C00;  // a bf16 NaN, an fp16 infinity
        std::memcpy(bufs.back().data() + 2 * (2 * t.shape[1] + 5), &bits, 2);
      }
      out.push_back({t.name, dt, t.shape, bufs.back()});
    }
    REQUIRE(io::WriteSafetensors(dir + "/model.safetensors", out).ok());
    auto m = LlamaModel::Load(dir);
    REQUIRE(!m.ok());
    CHECK(m.status().message() == "tensor '" + bad + "': non-finite value at [2, 5]");
  }
}

// DeepSeek: MLA's Linear order and shared inputs; the fused 3-D experts rewritten as per-expert 2-D tensors (as Hub
// checkpoints ship them, with a multi-token-prediction layer after the decoder's) give the same logits; and the fields
// that change the maths fail the references when changed.
TEST_CASE("families: deepseek MLA layout, both expert layouts, and the fields that matter", "[model][families]") {
  TempDir tmp;
  const std::string src = TestData("model/deepseek_v3_fused");
  auto fused = LlamaModel::Load(src);
  REQUIRE(fused.ok());
  const auto names = fused->LinearNames();
  REQUIRE(names.size() >= 8);
  CHECK(names[0] == "model.layers.0.self_attn.q_a_proj");
  CHECK(names[1] == "model.layers.0.self_attn.q_b_proj");
  CHECK(names[2] == "model.layers.0.self_attn.kv_a_proj_with_mqa");
  CHECK(names[3] == "model.layers.0.self_attn.kv_b_proj");
  CHECK(names[4] == "model.layers.0.self_attn.o_proj");
  CHECK(names[8] == "model.layers.1.self_attn.q_a_proj");
  CHECK(names[13] == "model.layers.1.mlp.gate");
  CHECK(names.back() == "model.layers.2.mlp.shared_experts.down_proj");
  const auto srcs = fused->LinearInputSource();
  CHECK(srcs[1] == 1);
  CHECK(srcs[2] == 0);
  CHECK(srcs[3] == 3);
  auto v2 = LlamaModel::Load(TestData("model/deepseek_v2"));
  REQUIRE(v2.ok());
  CHECK(v2->LinearNames()[0] == "model.layers.0.self_attn.q_proj");  // q_lora_rank null
  CHECK(v2->LinearInputSource()[1] == 0);                            // kv_a_proj_with_mqa reads q_proj's input

  const Fixture f = Load(src);
  const double d_fused = MaxDelta(*fused, f, 1);
  {
    const std::string dir = tmp.path() + "/per_expert";
    fs::create_directories(dir);
    fs::copy_file(src + "/config.json", dir + "/config.json");
    auto st = io::SafetensorsFile::Open(src + "/model.safetensors");
    REQUIRE(st.ok());
    std::vector<std::vector<float>> bufs;
    std::vector<io::TensorData> out;
    auto add = [&](const std::string& name, std::vector<uint64_t> shape, const float* v, size_t n) {
      bufs.emplace_back(v, v + n);
      out.push_back({name, io::DType::kF32, shape,
                     std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bufs.back().data()), n * 4)});
    };
    bufs.reserve(256);
    for (const auto& t : st->tensors()) {
      const float* v = reinterpret_cast<const float*>(st->Data(t).data());
      if (t.name.ends_with(".experts.gate_up_proj")) {
        const std::string p = t.name.substr(0, t.name.size() - std::string("gate_up_proj").size());
        const uint64_t E = t.shape[0], I2 = t.shape[1], H = t.shape[2];
        for (uint64_t e = 0; e < E; ++e) {
          add(p + std::to_string(e) + ".gate_proj.weight", {I2 / 2, H}, v + e * I2 * H, I2 / 2 * H);
          add(p + std::to_string(e) + ".up_proj.weight", {I2 / 2, H}, v + e * I2 * H + I2 / 2 * H, I2 / 2 * H);
        }
      } else if (t.name.ends_with(".experts.down_proj")) {  // not shared_experts.down_proj.weight
        const std::string p = t.name.substr(0, t.name.size() - std::string("down_proj").size());
        const uint64_t E = t.shape[0], H = t.shape[1], I = t.shape[2];
        for (uint64_t e = 0; e < E; ++e) add(p + std::to_string(e) + ".down_proj.weight", {H, I}, v + e * H * I, H * I);
      } else {
        add(t.name, t.shape, v, t.num_elements());
      }
    }
    const float mtp[4] = {1, 2, 3, 4};  // DeepSeek-V3's model.layers.61.* (num_nextn_predict_layers 1)
    add("model.layers.3.eh_proj.weight", {2, 2}, mtp, 4);
    REQUIRE(io::WriteSafetensors(dir + "/model.safetensors", out).ok());
    auto per = LlamaModel::Load(dir);
    INFO(per.status().ToString());
    REQUIRE(per.ok());
    CHECK(per->LinearNames() == names);
    CHECK(MaxDelta(*per, f, 1) == d_fused);
    // Without num_nextn_predict_layers the extra layer is a config/weights mismatch.
    auto cfg = ParseJson(*ReadFileToString(dir + "/config.json"), "cfg");
    REQUIRE(cfg.ok());
    (*cfg)["num_nextn_predict_layers"] = 0;
    lmkit::test::WriteAll(dir + "/config.json", DumpJson(*cfg));
    auto no_mtp = LlamaModel::Load(dir);
    REQUIRE(!no_mtp.ok());
    CHECK(no_mtp.status().message().find("'model.layers.3.eh_proj.weight' is not part of the model") !=
          std::string::npos);
  }
  // Each of these changes the logits beyond the bound: the forward pass reads them.
  const std::vector<std::pair<const char*, std::function<void(Json&)>>> edits = {
      {"rope_interleave", [](Json& j) { j["rope_interleave"] = false; }},
      {"routed_scaling_factor", [](Json& j) { j["routed_scaling_factor"] = 1.0; }},
      {"norm_topk_prob", [](Json& j) { j["norm_topk_prob"] = false; }},
      {"mscale_all_dim", [](Json& j) { j["rope_parameters"]["mscale_all_dim"] = 0.5; }},
      {"topk_group", [](Json& j) { j["topk_group"] = 4; }},
  };
  for (const auto& [field, edit] : edits) {
    INFO(field);
    auto m = LlamaModel::Load(Variant("deepseek_v3_fused", tmp.path() + "/" + field, edit));
    INFO(m.status().ToString());
    REQUIRE(m.ok());
    CHECK(MaxDelta(*m, f, 1) > 1e-3);
  }
  const Fixture f2 = Load(TestData("model/deepseek_v2"));
  for (const auto& [field, edit] : std::vector<std::pair<const char*, std::function<void(Json&)>>>{
           {"topk_method", [](Json& j) { j["topk_method"] = "greedy"; }},
           {"mscale_all_dim", [](Json& j) { j["rope_parameters"]["mscale_all_dim"] = 1.0; }}}) {
    INFO(field);
    auto m = LlamaModel::Load(Variant("deepseek_v2", tmp.path() + "/v2" + field, edit));
    REQUIRE(m.ok());
    CHECK(MaxDelta(*m, f2, 1) > 1e-3);
  }
}
