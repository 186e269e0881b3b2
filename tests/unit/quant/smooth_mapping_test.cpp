// SmoothQuant's mapping per family (quant/smooth_mapping.h) on the tiny checkpoints of tests/data/model: which Linear
// layers share which norm, what stays unsmoothed, and that a smoothed model computes what the original does (the
// folded norm times each balanced weight equals the original product, Gemma's 1 + w included, and the logits agree).
#include "lmkit/quant/smooth_mapping.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "lmkit/io/safetensors.h"
#include "lmkit/io/token_file.h"
#include "lmkit/model/eval.h"
#include "lmkit/model/generate.h"
#include "lmkit/model/llama.h"
#include "lmkit/quant/quantize.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::quant;
using lmkit::test::TempDir;

namespace {

std::string SqFixture(const std::string& family) { return lmkit::test::TestData("model/" + family); }

SmoothMapping SqMapOf(const std::string& family) {
  auto m = model::LlamaModel::Load(SqFixture(family));
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  return MapSmoothing(m->config(), m->LinearNames());
}

const SmoothGroup& SqGroupOf(const SmoothMapping& m, const std::string& norm) {
  for (const SmoothGroup& g : m.groups)
    if (g.norm == norm) return g;
  FAIL("no group for " << norm);
  return m.groups.front();
}

bool SqGrouped(const SmoothMapping& m, const std::string& norm) {
  for (const SmoothGroup& g : m.groups)
    if (g.norm == norm) return true;
  return false;
}

std::vector<std::string> SqNames(const std::string& prefix, std::initializer_list<const char*> leaves) {
  std::vector<std::string> out;
  for (const char* l : leaves) out.push_back(prefix + l);
  return out;
}

}  // namespace

TEST_CASE("SmoothQuant mapping: Llama-style families pair input_layernorm with q/k/v and the MLP norm with gate/up",
          "[quant][smoothquant]") {
  for (const char* family : {"llama3", "mistral", "qwen2", "qwen3"}) {
    INFO(family);
    const SmoothMapping m = SqMapOf(family);
    REQUIRE(m.groups.size() == 4);  // two layers
    CHECK(SqGroupOf(m, "model.layers.1.input_layernorm").linears ==
          SqNames("model.layers.1.self_attn.", {"q_proj", "k_proj", "v_proj"}));
    CHECK(SqGroupOf(m, "model.layers.1.post_attention_layernorm").linears ==
          SqNames("model.layers.1.mlp.", {"gate_proj", "up_proj"}));
    CHECK_FALSE(m.groups[0].unit_offset);
    CHECK(m.unsmoothed.empty());
  }
}

TEST_CASE("SmoothQuant mapping: Gemma's MLP reads pre_feedforward_layernorm, its norms are 1 + w, post-norms stay",
          "[quant][smoothquant]") {
  for (const char* family : {"gemma2", "gemma3"}) {
    INFO(family);
    const SmoothMapping m = SqMapOf(family);
    REQUIRE(m.groups.size() == 4);
    CHECK(SqGroupOf(m, "model.layers.0.input_layernorm").linears ==
          SqNames("model.layers.0.self_attn.", {"q_proj", "k_proj", "v_proj"}));
    CHECK(SqGroupOf(m, "model.layers.0.pre_feedforward_layernorm").linears ==
          SqNames("model.layers.0.mlp.", {"gate_proj", "up_proj"}));
    for (const SmoothGroup& g : m.groups) CHECK(g.unit_offset);
    CHECK_FALSE(SqGrouped(m, "model.layers.0.post_attention_layernorm"));
    CHECK_FALSE(SqGrouped(m, "model.layers.0.post_feedforward_layernorm"));
  }
}

TEST_CASE("SmoothQuant mapping: Phi-3's fused Linears, OLMo 2's post-norms, DeepSeek's MLA", "[quant][smoothquant]") {
  const SmoothMapping phi = SqMapOf("phi3");
  CHECK(SqGroupOf(phi, "model.layers.0.input_layernorm").linears ==
        std::vector<std::string>{"model.layers.0.self_attn.qkv_proj"});
  CHECK(SqGroupOf(phi, "model.layers.0.post_attention_layernorm").linears ==
        std::vector<std::string>{"model.layers.0.mlp.gate_up_proj"});

  const SmoothMapping olmo = SqMapOf("olmo2");
  CHECK(olmo.groups.empty());
  CHECK(olmo.unsmoothed ==
        std::vector<std::string>{"model.layers.*: the attention and MLP inputs are no norm's output (post-norms), "
                                 "not smoothed"});

  // V2 without q_lora_rank: q_proj and kv_a_proj_with_mqa read input_layernorm; layer 0 is dense.
  const SmoothMapping v2 = SqMapOf("deepseek_v2");
  CHECK(SqGroupOf(v2, "model.layers.1.input_layernorm").linears ==
        SqNames("model.layers.1.self_attn.", {"q_proj", "kv_a_proj_with_mqa"}));
  CHECK(SqGroupOf(v2, "model.layers.0.post_attention_layernorm").linears ==
        SqNames("model.layers.0.mlp.", {"gate_proj", "up_proj"}));
  CHECK(v2.unsmoothed == std::vector<std::string>{"model.layers.*.self_attn.kv_a_layernorm: not smoothed (MLA's "
                                                  "inner norm, as llm-compressor)"});
  // V3 with q_lora_rank: q_a_proj beside kv_a_proj_with_mqa; q_b_proj reads q_a_layernorm, left unsmoothed.
  const SmoothMapping v3 = SqMapOf("deepseek_v3_fused");
  CHECK(SqGroupOf(v3, "model.layers.2.input_layernorm").linears ==
        SqNames("model.layers.2.self_attn.", {"q_a_proj", "kv_a_proj_with_mqa"}));
  CHECK(v3.unsmoothed.size() == 2);
}

TEST_CASE("SmoothQuant mapping: a MoE block's router, every expert and the shared expert share the MLP norm",
          "[quant][smoothquant]") {
  const SmoothMapping mix = SqMapOf("mixtral");
  const std::string p = "model.layers.1.block_sparse_moe.";
  CHECK(SqGroupOf(mix, "model.layers.1.post_attention_layernorm").linears ==
        SqNames(p, {"gate", "experts.0.w1", "experts.0.w3", "experts.1.w1", "experts.1.w3", "experts.2.w1",
                    "experts.2.w3", "experts.3.w1", "experts.3.w3"}));

  const SmoothMapping q2 = SqMapOf("qwen2_moe");
  const std::vector<std::string>& g = SqGroupOf(q2, "model.layers.1.post_attention_layernorm").linears;
  REQUIRE(g.size() == 1 + 4 * 2 + 2 + 1);
  CHECK(g.front() == "model.layers.1.mlp.gate");
  CHECK(g[g.size() - 3] == "model.layers.1.mlp.shared_expert.gate_proj");
  CHECK(g.back() == "model.layers.1.mlp.shared_expert_gate");

  // transformers 5's fused 3-D experts, named as their per-expert matrices.
  const SmoothMapping q3 = SqMapOf("qwen3_moe_fused");
  const std::vector<std::string>& f = SqGroupOf(q3, "model.layers.0.post_attention_layernorm").linears;
  CHECK(f.size() == 1 + 4 * 2);
  CHECK(f[1] == "model.layers.0.mlp.experts.0.gate_proj");
}

namespace {

// Tokens the fixture samples itself, `samples` windows of 32.
std::string SqSampledTokens(const TempDir& d, const std::string& family) {
  model::GenerateRequest g;
  g.model = SqFixture(family);
  g.prompt = {1};
  g.max_tokens = 31;
  g.samples = 6;
  g.temperature = 1.0;
  g.seed = 7;
  g.threads = 2;
  auto r = model::Generate(g, nullptr);
  REQUIRE(r.ok());
  std::vector<uint32_t> ids;
  for (const auto& s : r->sequences) ids.insert(ids.end(), s.begin(), s.end());
  const std::string p = d.file(family + ".npy");
  auto w = io::TokenWriter::Create(p, io::TokenFormatFromPath(p), io::TokenDtype::kU32);
  REQUIRE(w.ok());
  REQUIRE(w->Append(ids).ok());
  REQUIRE(w->Commit().ok());
  return p;
}

// One Linear outside every SmoothQuant group quantized (w8a16, round to nearest), so both checkpoints differ from the
// original by the same rounding; with `alpha`, the rest smoothed and written in float.
Result<QuantizeResult> SqOnlyOProj(const std::string& family, const std::string& tokens, const std::string& out,
                                   std::optional<double> alpha) {
  QuantizeRequest o;
  o.input = SqFixture(family);
  o.output = out;
  o.scheme = QuantScheme::kW8A16;
  o.include = {"layers\\.0\\.self_attn\\.o_proj\\.weight$"};
  o.threads = 2;
  if (alpha) {
    o.calibration_tokens = tokens;
    o.seq_len = 32;
    o.smoothquant_alpha = alpha;
  }
  return Quantize(o, nullptr);
}

std::vector<float> SqFloats(const io::SafetensorsFile& st, const std::string& name) {
  const io::TensorInfo* t = st.Find(name);
  REQUIRE(t != nullptr);
  std::vector<float> out(t->num_elements());
  io::ConvertToF32(t->dtype, st.Data(*t).data(), out.data(), out.size());
  return out;
}

// Rows [first, first + rows) of the weight `module` (".weight"), or of the fused 3-D expert tensor it is a slice of.
std::vector<float> SqWeight(const io::SafetensorsFile& st, const std::string& module) {
  if (st.Find(module + ".weight")) return SqFloats(st, module + ".weight");
  // "...experts.E.gate_proj" inside "...experts.gate_up_proj" [E, 2I, H].
  const size_t e0 = module.rfind("experts.") + 8, dot = module.find('.', e0);
  const uint64_t e = std::stoull(module.substr(e0, dot - e0));
  const std::string leaf = module.substr(dot + 1), prefix = module.substr(0, e0);
  const io::TensorInfo* t = st.Find(prefix + "gate_up_proj");
  REQUIRE(t != nullptr);
  const std::vector<float> all = SqFloats(st, prefix + "gate_up_proj");
  const uint64_t half = t->shape[1] / 2 * t->shape[2];
  const uint64_t begin = (2 * e + (leaf == "gate_proj" ? 0 : 1)) * half;
  return std::vector<float>(all.begin() + begin, all.begin() + begin + half);
}

}  // namespace

TEST_CASE("SmoothQuant keeps the float function for every family fixture (folded products and logits)",
          "[quant][smoothquant][families]") {
  TempDir d;
  for (const char* family : {"llama3", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "mixtral", "qwen2_moe",
                             "qwen3_moe_fused", "deepseek_v2", "deepseek_v3_fused"}) {
    INFO(family);
    const std::string tokens = SqSampledTokens(d, family);
    const std::string plain = d.file(std::string(family) + "-plain"), smooth = d.file(std::string(family) + "-sq");
    auto rp = SqOnlyOProj(family, tokens, plain, std::nullopt);
    INFO(rp.status().ToString());
    REQUIRE(rp.ok());
    auto rs = SqOnlyOProj(family, tokens, smooth, 0.8);
    INFO(rs.status().ToString());
    REQUIRE(rs.ok());
    REQUIRE(!rs->smoothquant.empty());
    const bool offset = std::string(family).starts_with("gemma");
    auto orig = io::SafetensorsFile::Open(SqFixture(family) + "/model.safetensors");
    auto out = io::SafetensorsFile::Open(smooth + "/model.safetensors");
    REQUIRE(orig.ok());
    REQUIRE(out.ok());
    // The folded norm times every balanced weight is the original product, channel by channel.
    for (const SmoothReport& s : rs->smoothquant) {
      INFO(s.norm);
      CHECK(s.scale_max > s.scale_min);
      const std::vector<float> g = SqFloats(*orig, s.norm + ".weight"), g2 = SqFloats(*out, s.norm + ".weight");
      CHECK(g2 != g);
      for (const std::string& l : s.balanced) {
        INFO(l);
        const std::vector<float> w = SqWeight(*orig, l), w2 = SqWeight(*out, l);
        REQUIRE(w.size() == w2.size());
        const size_t cols = g.size();
        double diff = 0, scale = 0;
        for (size_t i = 0; i < w.size(); ++i) {
          const size_t j = i % cols;
          const double a = (offset ? 1.0 + g[j] : g[j]) * static_cast<double>(w[i]);
          const double b = (offset ? 1.0 + g2[j] : g2[j]) * static_cast<double>(w2[i]);
          diff = std::max(diff, std::fabs(a - b));
          scale = std::max(scale, std::fabs(a));
        }
        CHECK(diff < 1e-5 * scale);
      }
    }
    // And the logits: KL(plain || smoothed) at float rounding level.
    model::EvalRequest e;
    e.model = plain;
    e.compare = smooth;
    e.tokens = tokens;
    e.seq_len = 32;
    e.threads = 2;
    auto er = model::Evaluate(e, nullptr);
    INFO(er.status().ToString());
    REQUIRE(er.ok());
    REQUIRE(er->compare.has_value());
    CHECK(er->compare->max_kl < 1e-6);
    CHECK(std::fabs(er->compare->ppl_delta) < 1e-4 * er->perplexity);
  }
}

TEST_CASE("SmoothQuant on OLMo 2 smooths nothing and says why", "[quant][smoothquant]") {
  TempDir d;
  const std::string tokens = SqSampledTokens(d, "olmo2");
  auto r = SqOnlyOProj("olmo2", tokens, d.file("olmo2-sq"), 0.8);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CHECK(r->smoothquant.empty());
  CHECK(r->smoothquant_unsmoothed ==
        std::vector<std::string>{
            "model.layers.*: the attention and MLP inputs are no norm's output (post-norms), not smoothed"});
}
