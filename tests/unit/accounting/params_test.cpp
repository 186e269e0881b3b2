// Parameter counts against published / HF module-shape counts (reference/accounting.md, configs/README.md).
#include "lmkit/accounting/params.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/model.h"
#include "support/run_lmkit.h"
#include "test_models.h"

using namespace lmkit::accounting;

TEST_CASE("params: HF configs match the golden totals", "[accounting][params]") {
  struct Golden {
    const char* preset;
    int64_t total;
    int64_t active;
  };
  const Golden golden[] = {
      {"gpt2", 124439808, 124439808},
      {"gpt2-medium", 354823168, 354823168},
      {"gpt2-large", 774030080, 774030080},
      {"gpt2-xl", 1557611200, 1557611200},
      {"llama-2-7b", 6738415616, 6738415616},
      {"llama-3-8b", 8030261248, 8030261248},
      {"llama-3.1-8b", 8030261248, 8030261248},
      {"mistral-7b-v0.1", 7241732096, 7241732096},
      {"qwen2.5-7b", 7615616512, 7615616512},
      {"qwen2.5-0.5b", 494032768, 494032768},
      {"mixtral-8x7b-v0.1", 46702792704, 12879925248},
      {"qwen3-30b-a3b", 30532122624, 3353032704},
      // [computed] from the module shapes; the DeepSeekMoE paper reports 16.4B total, 2.8B activated.
      {"deepseek-moe-16b", 16375728128, 2828650496},
      {"deepseek-v3", 671026419200, 37552297472},
  };
  for (const auto& g : golden) {
    auto c = CountParameters(lmkit::test::Preset(g.preset));
    INFO(g.preset);
    CHECK(c.total == g.total);
    CHECK(c.active == g.active);
    CHECK(c.total == c.embedding + c.lm_head + c.non_embedding);
    CHECK(c.total == c.embedding + c.lm_head + c.attention + c.ffn + c.router + c.norms);
  }
}

TEST_CASE("params: CS336 shapes and nanoGPT", "[accounting][params]") {
  CHECK(CountParameters(lmkit::test::Preset("cs336-gpt2-small")).total == 190460160);
  CHECK(CountParameters(lmkit::test::Preset("cs336-gpt2-medium")).total == 505629696);
  CHECK(CountParameters(lmkit::test::Preset("cs336-gpt2-large")).total == 1072469760);
  CHECK(CountParameters(lmkit::test::Preset("cs336-gpt2-xl")).total == 2127057600);
  auto n = CountParameters(lmkit::test::Preset("nanogpt-gpt2-124m"));
  CHECK(n.total == 124337664);
  CHECK(n.lm_head == 0);  // tied
  CHECK(n.embedding == 50257 * 768 + 1024 * 768);
}

TEST_CASE("params: tied vs untied and embedding split", "[accounting][params]") {
  auto q = CountParameters(lmkit::test::Preset("qwen2.5-0.5b"));
  CHECK(q.lm_head == 0);
  CHECK(q.embedding == 151936LL * 896);
  auto l = CountParameters(lmkit::test::Preset("llama-2-7b"));
  CHECK(l.lm_head == 32000LL * 4096);
  CHECK(l.non_embedding == 6738415616LL - 2 * 32000LL * 4096);
}

namespace {
ModelSpec ParseParams(const char* text) {
  auto j = lmkit::ParseJson(text, "inline");
  REQUIRE(j.ok());
  auto m = ParseModelConfig(*j, "inline.json");
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  return *m;
}

}  // namespace

TEST_CASE("params: qwen2_moe shared expert with gate, sparse step and mlp_only_layers", "[accounting][params]") {
  // Qwen1.5-MoE-A2.7B's architecture fields; published: 14.3B total, 2.7B activated.
  const char* cfg = R"({"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24,
    "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632, "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "vocab_size": 151936, "tie_word_embeddings": false})";
  auto c = CountParameters(ParseParams(cfg));
  CHECK(c.total == 14315784192);  // [computed]
  CHECK(c.active == 2689173504);  // [computed]
  // Every second layer sparse, and layer 1 forced dense: 11 MoE layers of 24.
  std::string alt = cfg;
  alt.replace(alt.find("\"decoder_sparse_step\": 1"), 24, "\"decoder_sparse_step\": 2");
  alt.replace(alt.find("\"mlp_only_layers\": []"), 21, "\"mlp_only_layers\": [1]");
  auto m = ParseParams(alt.c_str());
  int64_t moe = 0;
  for (const auto& k : m.kinds) moe += k.moe ? k.count : 0;
  CHECK(moe == 11);
}

TEST_CASE("params: deepseek_v2 MLA without q compression (V2-Lite shape)", "[accounting][params]") {
  const char* cfg = R"({"model_type": "deepseek_v2", "hidden_size": 2048, "num_hidden_layers": 27,
    "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 10944, "moe_intermediate_size": 1408,
    "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
    "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "topk_method": "greedy", "vocab_size": 102400, "tie_word_embeddings": false})";
  auto m = ParseParams(cfg);
  CHECK(m.mla);
  CHECK(m.head_dim == 192);
  auto c = CountParameters(m);
  CHECK(c.total == 15706484224);      // [computed]; published "15.7B"
  CHECK(c.router == 26 * 64 * 2048);  // no correction bias outside noaux_tc
}

// Published counts (tests/data/accounting/PROVENANCE.md): safetensors total_size / bytes per element, or the model
// card's table. Each family's own fields are what make these exact: gemma's four norms per layer and head_dim 256
// (q width 4096 != hidden 3584), gemma3's q/k norms, olmo2's q/k norms over the whole projections, GPT-NeoX's biased
// fused QKV and LayerNorms, Falcon's multi-query QKV and one shared LayerNorm per parallel block, phi3's fused
// projections (the same shapes split).
TEST_CASE("params: new families match published parameter counts exactly", "[accounting][params]") {
  struct Golden {
    const char* file;
    int64_t total;
    int64_t active;
  };
  const Golden golden[] = {
      {"gemma-2-9b.json", 9241705984, 9241705984},          // total_size 36,966,823,936 B fp32
      {"gemma-2-2b.json", 2614341888, 2614341888},          // total_size 10,457,367,552 B fp32
      {"gemma-3-1b.json", 999885952, 999885952},            // model.safetensors 1,999,771,904 B bf16
      {"phi-3-mini-4k.json", 3821079552, 3821079552},       // total_size 7,642,159,104 B bf16
      {"olmo-2-1124-7b.json", 7298617344, 7298617344},      // total_size 29,194,469,376 B fp32
      {"pythia-160m.json", 162322944, 162322944},           // Pythia model card
      {"pythia-1b.json", 1011781632, 1011781632},           // Pythia model card
      {"falcon-7b.json", 6921720704, 6921720704},           // total_size 13,843,441,408 B bf16
      {"llama-3-70b.json", 70553706496, 70553706496},       // total_size 141,107,412,992 B bf16
      {"mistral-nemo-12b.json", 12247782400, 12247782400},  // total_size 24,495,564,800 B bf16
      {"llama-3.2-3b.json", 3212749824, 3212749824},        // total_size 6,425,499,648 B bf16 (tied)
      {"distilgpt2.json", 81912576, 81912576},
      // Model cards: 235B total / 22B activated; 57B / 14B (exact figures from the module shapes).
      {"qwen3-235b-a22b.json", 235093634560, 22190763520},
      {"qwen2-57b-a14b.json", 57408658944, 14249270784},
  };
  for (const auto& g : golden) {
    INFO(g.file);
    auto c = CountParameters(lmkit::test::RealConfig(g.file));
    CHECK(c.total == g.total);
    CHECK(c.active == g.active);
    CHECK(c.total == c.embedding + c.lm_head + c.attention + c.ffn + c.router + c.norms);
  }
  // Pythia's card also lists the non-embedding count (embed_in + embed_out excluded).
  CHECK(CountParameters(lmkit::test::RealConfig("pythia-160m.json")).non_embedding == 85056000);
  CHECK(CountParameters(lmkit::test::RealConfig("pythia-1b.json")).non_embedding == 805736448);
  // Qwen3-235B-A22B: 235.09B and 22.19B round to the card's figures.
  auto q = CountParameters(lmkit::test::RealConfig("qwen3-235b-a22b.json"));
  CHECK(std::llround(q.total / 1e9) == 235);
  CHECK(std::llround(q.active / 1e9) == 22);
}

TEST_CASE("params: family features that change KV or FLOPs are read", "[accounting][params]") {
  // Gemma-2: a 4096-token window on every other layer (layer 0 local), soft-capping noted (not FLOPs).
  auto g2 = lmkit::test::RealConfig("gemma-2-9b.json");
  REQUIRE(g2.kinds.size() == 2);
  CHECK(g2.kinds[0].window == 4096);
  CHECK(g2.kinds[0].count == 21);
  CHECK(g2.kinds[1].window == 0);
  CHECK(g2.attn_softcap == 50.0);
  CHECK(g2.final_softcap == 30.0);
  CHECK(g2.head_dim == 256);
  CHECK(DescribeModel(g2).find("GeGLU") != std::string::npos);
  // Gemma-3: 5 local (512) layers per global one; 26 layers -> 4 global.
  auto g3 = lmkit::test::RealConfig("gemma-3-1b.json");
  int64_t global = 0, local = 0;
  for (const auto& k : g3.kinds) (k.window == 0 ? global : local) += k.count;
  CHECK(global == 4);
  CHECK(local == 22);
  // The multimodal config lists only what differs from Gemma3TextConfig; the rest takes its defaults.
  auto g34 = lmkit::test::RealConfig("gemma-3-4b.json");
  CHECK(g34.heads == 8);
  CHECK(g34.kv_heads == 4);
  CHECK(g34.head_dim == 256);
  CHECK(g34.vocab == 262208);
  CHECK(g34.tied);
  CHECK(CountParameters(g34).total == 3880263168);
  CHECK(std::find(g34.notes.begin(), g34.notes.end(),
                  "vision tower and multimodal projector not counted (language model only)") != g34.notes.end());
  // Phi-3: sliding window 2047 everywhere. GPT-NeoX and Falcon: parallel attention/MLP. Falcon-7B: one KV head.
  CHECK(lmkit::test::RealConfig("phi-3-mini-4k.json").kinds[0].window == 2047);
  CHECK(lmkit::test::RealConfig("pythia-160m.json").parallel_block);
  auto f = lmkit::test::RealConfig("falcon-7b.json");
  CHECK(f.parallel_block);
  CHECK(f.kv_heads == 1);
  CHECK(f.norms_per_layer == 1);
  CHECK(f.tied);
}

// Configs exactly as transformers 5.24 writes them (tests/data/accounting/tiny-hf5/make_tiny.py): the parameter count
// of each family equals the number of elements in the safetensors save_pretrained wrote beside it. Qwen3-MoE names
// its expert count num_local_experts there, and DeepSeek-V3's router holds e_score_correction_bias without a
// topk_method key.
TEST_CASE("params: every family's count equals its transformers 5 checkpoint", "[accounting][params]") {
  const std::pair<const char*, int64_t> golden[] = {
      {"deepseek_v2", 99968},  {"deepseek_v3", 95412}, {"falcon", 94592},   {"gemma2", 70208},
      {"gemma3_text", 70272},  {"gpt2", 112384},       {"gpt_neox", 75200}, {"llama", 78144},
      {"mistral", 78144},      {"mixtral", 189248},    {"olmo2", 78336},    {"phi3", 78144},
      {"qwen2", 78400},        {"qwen2_moe", 109760},  {"qwen3", 78208},    {"qwen3_moe", 91008},
      {"llama4_text", 149056}, {"gpt_oss", 191696},
  };
  for (const auto& [family, count] : golden) {
    INFO(family);
    CHECK(CountParameters(lmkit::test::RealConfig(std::string("tiny-hf5/") + family + ".json")).total == count);
  }
}

// The planning presets added for training at scale: their parameter counts equal the published ones
// (data/models/README.md, tests/data/accounting/PROVENANCE.md).
TEST_CASE("params: training presets equal the published counts", "[accounting][params]") {
  const std::pair<const char*, int64_t> golden[] = {
      {"llama-3.1-70b", 70553706496},  // as Meta-Llama-3-70B: total_size 141,107,412,992 B bf16
      {"llama-3.1-405b", 405853388800}, {"qwen3-235b-a22b", 235093634560},
      {"gemma-3-4b", 3880263168},    // the language model of google/gemma-3-4b-it
      {"olmo-2-7b", 7298617344},     // total_size 29,194,469,376 B fp32
      {"qwen2.5-72b", 72706203648},  // model card 72.7B
      {"phi-4", 14659507200},        // Hub: 14.7B
  };
  for (const auto& [name, count] : golden) {
    INFO(name);
    CHECK(CountParameters(lmkit::test::Preset(name)).total == count);
  }
}

// The Qwen3 dense presets against their model cards, which give the total and the non-embedding count rounded
// (0.6B / 0.44B, 1.7B / 1.4B, 4.0B / 3.6B, 8.2B / 6.95B, 14.8B / 13.2B, 32.8B / 31.2B).
TEST_CASE("params: Qwen3 dense presets match the model cards", "[accounting][params]") {
  struct Card {
    const char* preset;
    double total, non_embedding;
    int decimals;  // of the non-embedding figure
  };
  const Card cards[] = {{"qwen3-0.6b", 0.6, 0.44, 2}, {"qwen3-1.7b", 1.7, 1.4, 1},  {"qwen3-4b", 4.0, 3.6, 1},
                        {"qwen3-8b", 8.2, 6.95, 2},   {"qwen3-14b", 14.8, 13.2, 1}, {"qwen3-32b", 32.8, 31.2, 1}};
  for (const auto& c : cards) {
    INFO(c.preset);
    auto p = CountParameters(lmkit::test::Preset(c.preset));
    CHECK(std::round(static_cast<double>(p.total) / 1e8) / 10 == Approx(c.total));
    const double scale = std::pow(10.0, c.decimals);
    CHECK(std::round(static_cast<double>(p.non_embedding) / 1e9 * scale) / scale == Approx(c.non_embedding));
  }
  CHECK(CountParameters(lmkit::test::Preset("qwen3-0.6b")).total == 596049920);  // tied: embedding counted once
}

TEST_CASE("params: Mixtral 8x22B, OLMo 2 13B and DeepSeek-R1 presets match their model cards", "[accounting][params]") {
  auto x = CountParameters(lmkit::test::Preset("mixtral-8x22b-v0.1"));
  CHECK(std::round(static_cast<double>(x.total) / 1e9) == 141);  // "141B parameters, 39B active"
  CHECK(std::round(static_cast<double>(x.active) / 1e9) == 39);
  CHECK(std::round(CountParameters(lmkit::test::Preset("olmo-2-13b")).total / 1e8) == 137);  // Hub: 13.7B
  CHECK(CountParameters(lmkit::test::Preset("deepseek-r1")).total ==
        CountParameters(lmkit::test::Preset("deepseek-v3")).total);  // 671B, V3's architecture
}

// Llama 4, gpt-oss, Mistral Large 2 and Gemma 3 27B (data/models/README.md names each config's source). The exact
// golden counts are transformers 5.24's own modules built from the same config.json on the meta device
// (tests/data/accounting/count_presets.py), language model and vision tower + projector apart; the published figures
// they are checked against: Meta's model cards (Scout 17B active / 109B total, Maverick 17B / 400B, both totals with
// the vision encoder), OpenAI's gpt-oss model card (20.91B total / 3.61B active, 116.83B / 5.13B; its active count
// leaves out the token embedding, as PaLM's N does), Mistral's 123B and Google's 27B and 4B.
TEST_CASE("params: Llama 4, gpt-oss, Mistral Large 2 and Gemma 3 presets equal transformers and the model cards",
          "[accounting][params]") {
  struct Golden {
    const char* preset;
    int64_t language_model, vision;
  };
  const Golden golden[] = {
      {"llama-4-scout", 107769861120, 871932416},
      {"llama-4-maverick", 400711848960, 871932416},
      {"gpt-oss-20b", 20914757184, 0},
      {"gpt-oss-120b", 116829156672, 0},
      {"mistral-large-2", 122610069504, 0},
      {"gemma-3-27b", 27009346304, 423060336},
      {"gemma-3-4b", 3880263168, 419816304},
  };
  for (const auto& g : golden) {
    INFO(g.preset);
    auto c = CountParameters(lmkit::test::Preset(g.preset));
    CHECK(c.total == g.language_model);
    CHECK(c.vision == g.vision);
    CHECK(c.total == c.embedding + c.lm_head + c.attention + c.ffn + c.router + c.norms);
  }
  auto billions = [](int64_t n, int decimals) {
    const double scale = std::pow(10.0, decimals);
    return std::round(static_cast<double>(n) / 1e9 * scale) / scale;
  };
  // Llama 4: 109B and 400B count the vision encoder (the language model alone is 107.8B and 400.7B).
  auto scout = CountParameters(lmkit::test::Preset("llama-4-scout"));
  CHECK(billions(scout.total + scout.vision, 0) == 109);
  CHECK(billions(scout.total, 0) == 108);
  CHECK(billions(scout.active, 0) == 17);  // top-1 of 16 experts plus the shared expert in every layer
  auto maverick = CountParameters(lmkit::test::Preset("llama-4-maverick"));
  CHECK(std::round((maverick.total + maverick.vision) / 1e11) == 4);  // "400B": 401.58B to the card's one digit
  CHECK(billions(maverick.active, 0) == 17);  // 24 dense layers (16384 wide) and 24 of top-1 of 128 + shared
  // gpt-oss: OpenAI's active count is lmkit's active less the token embedding (PalmParameters).
  auto oss20 = CountParameters(lmkit::test::Preset("gpt-oss-20b"));
  CHECK(billions(oss20.total, 2) == Approx(20.91));
  CHECK(billions(oss20.active - oss20.embedding, 2) == Approx(3.61));
  CHECK(PalmParameters(lmkit::test::Preset("gpt-oss-20b")) == oss20.active - oss20.embedding);
  auto oss120 = CountParameters(lmkit::test::Preset("gpt-oss-120b"));
  CHECK(billions(oss120.total, 2) == Approx(116.83));
  CHECK(billions(oss120.active - oss120.embedding, 2) == Approx(5.13));
  CHECK(billions(CountParameters(lmkit::test::Preset("mistral-large-2")).total, 0) == 123);
  auto g27 = CountParameters(lmkit::test::Preset("gemma-3-27b"));
  CHECK(billions(g27.total + g27.vision, 0) == 27);
  auto g4 = CountParameters(lmkit::test::Preset("gemma-3-4b"));
  CHECK(billions(g4.total + g4.vision, 1) == Approx(4.3));
}

// The layer structure of the new families: Maverick's MoE layers are the odd ones (interleave_moe_layer_step 2) with a
// shared expert as wide as a routed one, its dense layers intermediate_size_mlp wide; gpt-oss alternates a 128-token
// window (even layers) with full attention, carries one sink per head and biases on attention, router and experts.
TEST_CASE("params: Llama 4 and gpt-oss layer structure", "[accounting][params]") {
  auto mav = lmkit::test::Preset("llama-4-maverick");
  REQUIRE(mav.kinds.size() == 2);
  CHECK(mav.kinds[0].name == "dense");
  CHECK(mav.kinds[0].count == 24);
  CHECK(mav.kinds[1].count == 24);
  CHECK(mav.d_ff == 16384);
  CHECK(mav.moe.expert_d_ff == 8192);
  CHECK(mav.moe.shared_d_ff == 8192);
  CHECK(mav.moe.routed_experts == 128);
  CHECK(mav.moe.top_k == 1);
  CHECK_FALSE(mav.moe.router_bias);
  CHECK(mav.qk_norm == lmkit::accounting::QkNorm::kNone);  // Llama 4's L2 q/k norm has no weights
  auto scout = lmkit::test::Preset("llama-4-scout");
  REQUIRE(scout.kinds.size() == 1);
  CHECK(scout.kinds[0].moe);
  CHECK(std::find(scout.notes.begin(), scout.notes.end(),
                  "chunked attention (8192-token chunks) on 36 of 48 layers counted as full attention (FLOPs, KV "
                  "cache)") != scout.notes.end());
  auto oss = lmkit::test::Preset("gpt-oss-120b");
  REQUIRE(oss.kinds.size() == 2);
  CHECK(oss.kinds[0].window == 128);
  CHECK(oss.kinds[0].count == 18);
  CHECK(oss.kinds[1].window == 0);
  CHECK(oss.attn_sinks);
  CHECK(oss.qkv_bias);
  CHECK(oss.out_bias);
  CHECK(oss.mlp_bias);
  CHECK(oss.moe.router_bias);
  CHECK(oss.head_dim == 64);
  CHECK(oss.q_dim() == 4096);  // wider than d_model 2880
  // One layer by hand: q/k/v/o with biases, 64 sinks, two norms, router 2880x128 + 128, 128 experts of fused
  // gate_up (2880 x 5760 + 5760) and down (2880 x 2880 + 2880).
  const int64_t attn = (2880 * 4096 + 4096) + 2 * (2880 * 512 + 512) + (4096 * 2880 + 2880) + 64;
  const int64_t experts = int64_t{128} * (2880 * 5760 + 5760 + 2880 * 2880 + 2880);
  CHECK(CountParameters(oss).per_layer_max == attn + 2 * 2880 + (2880 * 128 + 128) + experts);
}
