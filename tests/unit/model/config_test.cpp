// The runtime's view of a Llama-family config.json: defaults per model_type, GQA checks, what it does not implement.
#include "lmkit/model/config.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <numbers>

#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"
#include "lmkit/model/rope.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::model;

TEST_CASE("config: config.json parsing - defaults, GQA checks, unsupported variants", "[model][config]") {
  Json j = {{"model_type", "llama"},  {"hidden_size", 64},        {"intermediate_size", 172},
            {"num_hidden_layers", 2}, {"num_attention_heads", 8}, {"vocab_size", 100}};
  auto c = ParseLlamaConfig(j, "c.json");
  REQUIRE(c.ok());
  CHECK(c->kv_heads == 8);
  CHECK(c->head_dim == 8);
  CHECK(c->rms_eps == 1e-6);
  CHECK(c->rope_theta == 10000.0);
  CHECK_FALSE(c->tie_embeddings);
  j["num_key_value_heads"] = 3;
  CHECK(ParseLlamaConfig(j, "c.json").status().ToString() ==
        "c.json: field 'num_key_value_heads' (3) does not divide the attention heads (8)");
  j["num_key_value_heads"] = 2;
  j.erase("vocab_size");
  CHECK(ParseLlamaConfig(j, "c.json").status().ToString() == "c.json: missing field 'vocab_size'");
  j["vocab_size"] = 100;
  j["rope_scaling"] = {{"rope_type", "su"}};
  CHECK(ParseLlamaConfig(j, "c.json").status().code() == ErrorCode::kUnsupported);
  j["rope_scaling"] = nullptr;
  j["model_type"] = "gpt2";
  CHECK(ParseLlamaConfig(j, "c.json").status().code() == ErrorCode::kUnsupported);
}

// Llama 4 and gpt-oss are read for accounting (the shared parser knows them) but have no forward pass: a one-line
// kUnsupported naming the model_type, never a half-built model.
TEST_CASE("config: llama4 and gpt_oss are refused by the forward pass in one line", "[model][config]") {
  for (const char* family : {"llama4_text", "gpt_oss"}) {
    INFO(family);
    auto text = lmkit::ReadFileToString(lmkit::test::TestData(std::string("accounting/tiny-hf5/") + family + ".json"));
    REQUIRE(text.ok());
    auto c = ParseLlamaConfig(*lmkit::ParseJson(*text, "c.json"), "c.json");
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == ErrorCode::kUnsupported);
    const std::string msg = c.status().ToString();
    CHECK(msg.find(std::string("model_type '") + family + "' has no forward pass") != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
}

// The runtime's LlamaConfig is a view of the one config.json parser: the same defaults as accounting's model
// description (transformers' per model_type), and its bounds.
TEST_CASE("config: defaults are transformers' per model_type, shared with accounting", "[model][config]") {
  Json j = {{"model_type", "mistral"}, {"hidden_size", 64},        {"intermediate_size", 172},
            {"num_hidden_layers", 2},  {"num_attention_heads", 8}, {"vocab_size", 100}};
  auto c = ParseLlamaConfig(j, "c.json");
  REQUIRE(c.ok());
  CHECK(c->max_positions == 131072);  // MistralConfig: 4096 * 32 (was 2048 for every family)
  CHECK(c->kv_heads == 8);
  j["model_type"] = "qwen2";
  j["num_key_value_heads"] = 8;  // Qwen2Config's default, 32, does not divide 8 heads
  CHECK(ParseLlamaConfig(j, "c.json")->max_positions == 32768);
  j["model_type"] = "llama";
  CHECK(ParseLlamaConfig(j, "c.json")->max_positions == 2048);
  // #31: 2^40 is an implausible size, not a non-positive one.
  j["hidden_size"] = int64_t{1} << 40;
  CHECK(ParseLlamaConfig(j, "c.json").status().ToString() ==
        "c.json: field 'hidden_size' is implausibly large (1099511627776 > 4194304)");
}

namespace {

Json Small(const std::string& type) {
  return {{"model_type", type},       {"hidden_size", 64},
          {"intermediate_size", 128}, {"num_hidden_layers", 4},
          {"num_attention_heads", 4}, {"num_key_value_heads", 2},
          {"vocab_size", 100},        {"max_position_embeddings", 256}};
}

std::string Err(const Json& j) { return ParseLlamaConfig(j, "c.json").status().ToString(); }

}  // namespace

// #39 (a): transformers 5 writes rope_parameters (with rope_theta inside); the older top-level rope_theta and
// rope_scaling are still read, rope_scaling winning as transformers' convert_rope_params_to_dict does.
TEST_CASE("config: rope_parameters and the older rope_theta / rope_scaling", "[model][config]") {
  Json j = Small("llama");
  j["rope_parameters"] = {{"rope_type", "llama3"},   {"rope_theta", 500000.0},
                          {"factor", 8.0},           {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}};
  auto c = ParseLlamaConfig(j, "c.json");
  REQUIRE(c.ok());
  CHECK(c->rope.type == "llama3");
  CHECK(c->rope_theta == 500000.0);
  CHECK(c->rope.original_max == 64);
  j.erase("rope_parameters");
  j["rope_theta"] = 250000.0;
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  c = ParseLlamaConfig(j, "c.json");
  REQUIRE(c.ok());
  CHECK(c->rope.type == "linear");
  CHECK(c->rope_theta == 250000.0);
  // A rope type or parameter the forward pass does not implement is refused, naming it.
  j["rope_scaling"] = {{"rope_type", "mrope"}};
  CHECK(Err(j) ==
        "c.json: field 'rope_parameters.rope_type' 'mrope' is not implemented (default, linear, dynamic, "
        "llama3, yarn, longrope)");
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"mrope_section", {1, 2}}};
  CHECK(Err(j) == "c.json: field 'rope_parameters.mrope_section' is not implemented for rope_type 'linear'");
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"high_freq_factor", 4.0}};
  CHECK(Err(j) == "c.json: rope_type 'llama3' needs field 'rope_parameters.low_freq_factor'");
  j["rope_scaling"] = {{"rope_type", "linear"}};
  CHECK(Err(j) == "c.json: rope_type 'linear' needs field 'rope_parameters.factor'");
  j["rope_scaling"] = "linear";
  CHECK(Err(j) == "c.json: field 'rope_scaling' is not an object");
  // partial_rotary_factor, top level or in the dict.
  j.erase("rope_scaling");
  j["partial_rotary_factor"] = 0.5;
  c = ParseLlamaConfig(j, "c.json");
  REQUIRE(c.ok());
  CHECK(c->rope.partial == 0.5);
  j["partial_rotary_factor"] = 0.1;  // 16 * 0.1 = 1 rotary dimension
  CHECK(Err(j) ==
        "c.json: partial_rotary_factor 0.1 gives 1 rotary dimensions of head_dim 16 (needs an even number "
        ">= 2)");
}

TEST_CASE("config: rope formulas - yarn and longrope attention factors, llama3 bands, dynamic growth",
          "[model][config]") {
  io::RopeSpec s;
  s.type = "yarn";
  s.theta = 10000;
  s.original_max = 16;
  s.params = {{"rope_type", "yarn"}, {"factor", 4.0}};
  auto y = RopeSchedule::Make(s, 16, 256, "c");
  REQUIRE(y.ok());
  CHECK(y->At(8).attention_factor == Approx(0.1 * std::log(4.0) + 1).epsilon(1e-12));
  // The fastest frequency is extrapolated (unchanged), the slowest interpolated (divided by the factor).
  CHECK(y->At(8).inv_freq[0] == 1.0);
  CHECK(y->At(8).inv_freq[7] == Approx(std::pow(10000.0, -14.0 / 16) / 4).epsilon(1e-12));
  s.type = "longrope";
  s.original_max = 32;
  s.params = {{"rope_type", "longrope"}, {"short_factor", {1, 1, 1, 2}}, {"long_factor", {1, 2, 4, 8}}};
  auto l = RopeSchedule::Make(s, 8, 128, "c");
  REQUIRE(l.ok());
  CHECK(l->At(32).attention_factor == Approx(std::sqrt(1 + std::log(4.0) / std::log(32.0))).epsilon(1e-12));
  CHECK(l->At(32).inv_freq[3] == Approx(std::pow(10000.0, -6.0 / 8) / 2).epsilon(1e-12));
  CHECK(l->At(33).inv_freq[3] == Approx(std::pow(10000.0, -6.0 / 8) / 8).epsilon(1e-12));
  s.type = "llama3";
  s.theta = 500000;
  s.original_max = 64;
  s.params = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0}};
  auto m = RopeSchedule::Make(s, 16, 256, "c");
  REQUIRE(m.ok());
  const auto f = m->At(1).inv_freq;
  // wavelength 2 pi / f: < 16 kept, > 64 divided by 8, in between smoothed.
  CHECK(f[0] == 1.0);
  const double f1 = std::pow(500000.0, -2.0 / 16), wl1 = 2 * std::numbers::pi / f1, sm = (64 / wl1 - 1) / 3;
  REQUIRE(wl1 > 16);
  REQUIRE(wl1 < 64);
  CHECK(f[1] == Approx((1 - sm) * f1 / 8 + sm * f1).epsilon(1e-12));
  CHECK(f[2] == Approx(std::pow(500000.0, -4.0 / 16) / 8).epsilon(1e-12));
  CHECK(f[7] == Approx(std::pow(500000.0, -14.0 / 16) / 8).epsilon(1e-12));
  s.type = "dynamic";
  s.theta = 10000;
  s.params = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  auto d = RopeSchedule::Make(s, 16, 32, "c");
  REQUIRE(d.ok());
  CHECK(d->At(32).inv_freq[1] == Approx(std::pow(10000.0, -2.0 / 16)).epsilon(1e-12));
  const double base = 10000 * std::pow(2.0 * 48 / 32 - 1, 16.0 / 14);
  CHECK(d->At(48).inv_freq[1] == Approx(std::pow(base, -2.0 / 16)).epsilon(1e-12));
}

// #39 (b) and the per-layer fields: each family's window rule, as transformers' config classes apply them.
TEST_CASE("config: sliding windows per layer and the fields that change the maths", "[model][config]") {
  Json j = Small("mistral");
  j["sliding_window"] = 16;
  CHECK(ParseLlamaConfig(j, "c.json")->window == std::vector<uint32_t>{16, 16, 16, 16});
  j["sliding_window"] = nullptr;
  CHECK(ParseLlamaConfig(j, "c.json")->window == std::vector<uint32_t>{0, 0, 0, 0});
  j = Small("qwen2");
  j["sliding_window"] = 16;
  j["max_window_layers"] = 2;
  CHECK(ParseLlamaConfig(j, "c.json")->window == std::vector<uint32_t>{0, 0, 0, 0});  // use_sliding_window false
  j["use_sliding_window"] = true;
  CHECK(ParseLlamaConfig(j, "c.json")->window == std::vector<uint32_t>{0, 0, 16, 16});
  j["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention", "full_attention"};
  CHECK(ParseLlamaConfig(j, "c.json")->window == std::vector<uint32_t>{16, 0, 16, 0});
  CHECK(ParseLlamaConfig(j, "c.json")->qkv_bias);
  CHECK_FALSE(ParseLlamaConfig(j, "c.json")->o_bias);
  j = Small("gemma2");
  j["sliding_window"] = 8;
  auto g = ParseLlamaConfig(j, "c.json");
  REQUIRE(g.ok());
  CHECK(g->window == std::vector<uint32_t>{8, 0, 8, 0});
  CHECK(g->attn_softcap == 50.0);
  CHECK(g->final_softcap == 30.0);
  CHECK(g->attn_scale == Approx(1 / 16.0));  // query_pre_attn_scalar 256 by default
  CHECK(g->act == Activation::kGeluTanh);
  CHECK(g->norms == NormPlacement::kSandwich);
  CHECK(g->tie_embeddings);
  j = Small("gemma3_text");
  j["sliding_window"] = 8;
  j["sliding_window_pattern"] = 2;
  j["query_pre_attn_scalar"] = 64;
  auto g3 = ParseLlamaConfig(j, "c.json");
  REQUIRE(g3.ok());
  CHECK(g3->window == std::vector<uint32_t>{8, 0, 8, 0});
  CHECK(g3->local_rope == std::vector<bool>{true, false, true, false});
  CHECK(g3->rope.theta == 1000000.0);
  CHECK(g3->rope_local.theta == 10000.0);
  CHECK(g3->attn_scale == Approx(1 / 8.0));
  j["rope_local_base_freq"] = 20000.0;
  CHECK(ParseLlamaConfig(j, "c.json")->rope_local.theta == 20000.0);
  // head_dim given explicitly (not hidden / heads), tied embeddings, biases, norm eps.
  j = Small("llama");
  j["head_dim"] = 32;
  j["tie_word_embeddings"] = true;
  j["attention_bias"] = true;
  j["mlp_bias"] = true;
  j["rms_norm_eps"] = 1e-5;
  auto l = ParseLlamaConfig(j, "c.json");
  REQUIRE(l.ok());
  CHECK(l->head_dim == 32);
  CHECK(l->tie_embeddings);
  CHECK(l->qkv_bias);
  CHECK(l->o_bias);
  CHECK(l->mlp_bias);
  CHECK(l->rms_eps == 1e-5);
  CHECK(l->attn_scale == Approx(1 / std::sqrt(32.0)));
  // Fields other classes read that would change the maths are refused, naming them; their no-op values pass.
  j["use_qk_norm"] = false;
  CHECK(ParseLlamaConfig(j, "c.json").ok());
  j["use_qk_norm"] = true;
  CHECK(Err(j) == "c.json: field 'use_qk_norm' (true) is not implemented by the forward pass");
  j.erase("use_qk_norm");
  j["attention_chunk_size"] = 8192;
  CHECK(Err(j) == "c.json: field 'attention_chunk_size' (8192) is not implemented by the forward pass");
  j.erase("attention_chunk_size");
  j["hidden_act"] = "relu2";
  CHECK(Err(j) == "c.json: field 'hidden_act' \"relu2\" is not implemented (silu, gelu, gelu_pytorch_tanh)");
  // Families: olmo2 (post-norms, full-width q/k norms), phi3 (fused), MoE counts.
  auto o = ParseLlamaConfig(Small("olmo2"), "c.json");
  REQUIRE(o.ok());
  CHECK(o->norms == NormPlacement::kPost);
  CHECK(o->qk_norm == io::QkNorm::kFullWidth);
  CHECK(ParseLlamaConfig(Small("phi3"), "c.json")->fused_qkv);
  j = Small("qwen3_moe");
  j["num_local_experts"] = 6;
  j["moe_intermediate_size"] = 32;
  j["num_experts_per_tok"] = 2;
  j["norm_topk_prob"] = true;
  auto q = ParseLlamaConfig(j, "c.json");
  INFO(q.status().ToString());
  REQUIRE(q.ok());
  CHECK(q->experts == 6);
  CHECK(q->norm_topk_prob);
  CHECK(q->qk_norm == io::QkNorm::kPerHead);
}

// DeepSeek V2/V3: MLA sizes, the router's fields with transformers 5.24's class defaults, and each field whose other
// values the forward pass does not implement refused by name.
TEST_CASE("config: deepseek_v2 / deepseek_v3 MLA and routing fields", "[model][config]") {
  Json j = Small("deepseek_v3");
  j["num_key_value_heads"] = 4;
  for (const char* k : {"qk_nope_head_dim", "qk_rope_head_dim"}) j[k] = 8;
  j["kv_lora_rank"] = 16;
  j["v_head_dim"] = 12;
  j["q_lora_rank"] = 24;
  j["n_routed_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  j["moe_intermediate_size"] = 32;
  j["first_k_dense_replace"] = 1;
  j["n_group"] = 4;
  j["topk_group"] = 2;
  j["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 10000.0}, {"factor", 4.0},
                          {"mscale", 1.0},       {"mscale_all_dim", 0.5}, {"original_max_position_embeddings", 64}};
  auto c = ParseLlamaConfig(j, "c.json");
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  CHECK(c->mla);
  CHECK(c->head_dim == 16);
  CHECK(c->v_head_dim == 12);
  CHECK(c->rope_head_dim() == 8);
  CHECK(c->q_lora_rank == 24);
  CHECK(c->rope_interleave);  // DeepseekV3Config's default
  CHECK(c->mtp_layers == 1);  // num_nextn_predict_layers' default
  CHECK(c->scoring == RouterScoring::kSigmoid);
  CHECK(c->router_bias);
  CHECK(c->norm_topk_prob);       // default True in V3
  CHECK(c->routed_scale == 2.5);  // default 2.5 in V3
  CHECK(c->group_limit == GroupLimit::kTop2Sum);
  CHECK(c->moe == std::vector<bool>{false, true, true, true});
  // 16^-1/2 x (0.1 x 0.5 x ln 4 + 1)^2: yarn's mscale_all_dim scales the softmax.
  const double m = 0.1 * 0.5 * std::log(4.0) + 1.0;
  CHECK(c->attn_scale == Approx(m * m / 4.0).epsilon(1e-12));
  j["rope_interleave"] = false;
  j["routed_scaling_factor"] = 1.0;
  CHECK_FALSE(ParseLlamaConfig(j, "c.json")->rope_interleave);
  CHECK(ParseLlamaConfig(j, "c.json")->routed_scale == 1.0);
  j["topk_method"] = "greedy";
  CHECK(Err(j) == "c.json: field 'topk_method' (\"greedy\") is not implemented for deepseek_v3 (noaux_tc only)");
  j.erase("topk_method");
  j["scoring_func"] = "softmax";
  CHECK(Err(j) == "c.json: field 'scoring_func' (\"softmax\") is not implemented for deepseek_v3 (sigmoid only)");
  j.erase("scoring_func");
  j["moe_layer_freq"] = 2;
  CHECK(ParseLlamaConfig(j, "c.json").status().code() == ErrorCode::kUnsupported);
  j.erase("moe_layer_freq");
  j["n_group"] = 3;
  CHECK(Err(j) == "c.json: field 'n_group' (3) must divide the 8 routed experts");
  j["n_group"] = 8;
  j["topk_group"] = 4;
  CHECK(Err(j) == "c.json: field 'n_group' (8) leaves fewer than 2 experts per group");
  j["n_group"] = 4;
  j["topk_group"] = 1;
  j["num_experts_per_tok"] = 3;
  CHECK(Err(j) == "c.json: field 'num_experts_per_tok' (3) exceeds the 2 experts of topk_group 1 groups");
  j["num_experts_per_tok"] = 2;
  j["num_key_value_heads"] = 2;
  CHECK(ParseLlamaConfig(j, "c.json").status().code() == ErrorCode::kUnsupported);
  j["num_key_value_heads"] = 4;

  // V2: softmax, greedy unless group_limited_greedy, never renormalised, routed_scaling_factor 1 by default.
  j["model_type"] = "deepseek_v2";
  j.erase("n_group");
  j.erase("topk_group");
  j["q_lora_rank"] = nullptr;  // DeepSeek-V2-Lite: a plain q_proj
  j["norm_topk_prob"] = false;
  j.erase("routed_scaling_factor");
  j["rope_interleave"] = false;  // not read by DeepseekV2 (always interleaved)
  c = ParseLlamaConfig(j, "c.json");
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  CHECK(c->q_lora_rank == 0);
  CHECK(c->rope_interleave);
  CHECK(c->scoring == RouterScoring::kSoftmax);
  CHECK_FALSE(c->router_bias);
  CHECK(c->group_limit == GroupLimit::kNone);
  CHECK(c->routed_scale == 1.0);
  CHECK(c->mtp_layers == 0);
  j["topk_method"] = "group_limited_greedy";
  CHECK(Err(j) == "c.json: field 'n_group' is needed by group-limited routing");
  j["n_group"] = 2;
  j["topk_group"] = 1;
  CHECK(ParseLlamaConfig(j, "c.json")->group_limit == GroupLimit::kMax);
  j["topk_method"] = "noaux_tc";
  CHECK(Err(j) ==
        "c.json: field 'topk_method' (\"noaux_tc\") is not implemented for deepseek_v2 (greedy, group_limited_greedy)");
  j.erase("topk_method");
  j["norm_topk_prob"] = true;
  CHECK(Err(j) ==
        "c.json: field 'norm_topk_prob' (true) is not implemented for deepseek_v2 (transformers' router "
        "never renormalises)");
}
