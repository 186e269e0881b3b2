// The one config.json parser: transformers' class defaults per model_type, nested text configs, and errors that name
// the file and the key.
#include "lmkit/io/hf_config.h"

#include <catch2/catch.hpp>

using lmkit::ErrorCode;
using lmkit::Json;
using lmkit::io::HfConfig;
using lmkit::io::ParseHfConfigText;
using lmkit::io::QkNorm;

namespace {
HfConfig Parse(const std::string& text) {
  auto c = ParseHfConfigText(text, "c.json");
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  return *c;
}
std::string Error(const std::string& text) {
  auto c = ParseHfConfigText(text, "c.json");
  REQUIRE_FALSE(c.ok());
  return c.status().ToString();
}
// 32 heads: every family's default KV head count (8 for mistral, 32 for qwen2, 4 for gemma) divides them.
const std::string kDims = R"("hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                              "num_attention_heads": 32, "vocab_size": 100)";
}  // namespace

TEST_CASE("hf_config: absent keys take the model_type's transformers defaults", "[io][hf_config]") {
  // LlamaConfig: num_key_value_heads = heads, head_dim = hidden / heads, max_position_embeddings 2048, untied.
  HfConfig l = Parse(R"({"model_type": "llama", )" + kDims + "}");
  CHECK(l.kv_heads == 32);
  CHECK(l.head_dim == 2);
  CHECK(l.max_positions == 2048);
  CHECK(l.norm_eps == 1e-6);
  CHECK(l.rope_theta == 10000.0);
  CHECK_FALSE(l.tie_word_embeddings);
  CHECK(l.window == std::vector<int64_t>{0, 0});
  // MistralConfig: a 4096-token window and 131,072 positions unless the config says otherwise; an explicit null
  // window is None (full attention), not the default.
  HfConfig m = Parse(R"({"model_type": "mistral", )" + kDims + "}");
  CHECK(m.kv_heads == 8);
  CHECK(m.window == std::vector<int64_t>{4096, 4096});
  CHECK(m.max_positions == 131072);
  CHECK(Parse(R"({"model_type": "mistral", "sliding_window": null, )" + kDims + "}").window ==
        std::vector<int64_t>{0, 0});
  // Qwen3Config: head_dim 128 (not hidden / heads), q/k norms per head.
  HfConfig q3 = Parse(R"({"model_type": "qwen3", )" + kDims + "}");
  CHECK(q3.head_dim == 128);
  CHECK(q3.qk_norm == QkNorm::kPerHead);
  // Qwen2: q/k/v biases from the modelling code; a window from max_window_layers (default 28) on.
  HfConfig q2 = Parse(R"({"model_type": "qwen2", "use_sliding_window": true, "max_window_layers": 1, )" + kDims + "}");
  CHECK(q2.kv_heads == 32);
  CHECK(q2.qkv_bias);
  CHECK_FALSE(q2.out_bias);
  CHECK(q2.window == std::vector<int64_t>{0, 4096});
  // Gemma2Config: tied, head_dim 256, soft-capping 50 / 30, every other layer local.
  HfConfig g2 = Parse(R"({"model_type": "gemma2", )" + kDims + "}");
  CHECK(g2.tie_word_embeddings);
  CHECK(g2.head_dim == 256);
  CHECK(g2.attn_logit_softcap == 50.0);
  CHECK(g2.final_logit_softcap == 30.0);
  CHECK(g2.norms_per_layer == 4);
  CHECK(g2.window == std::vector<int64_t>{4096, 0});
  // Falcon: multi-query and one shared LayerNorm unless the new decoder architecture is on.
  HfConfig f = Parse(R"({"model_type": "falcon", "n_layer": 2, "hidden_size": 64, "n_head": 8, "vocab_size": 100})");
  CHECK(f.kv_heads == 1);
  CHECK(f.norms_per_layer == 1);
  CHECK(f.intermediate == 256);
  CHECK(f.parallel_block);
  HfConfig f40 = Parse(R"({"model_type": "falcon", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 8,
                          "vocab_size": 100, "new_decoder_architecture": true, "num_kv_heads": 2})");
  CHECK(f40.kv_heads == 2);
  CHECK(f40.norms_per_layer == 2);
  // GPT-NeoX: parallel residual and biased attention by default; untied.
  HfConfig n = Parse(R"({"model_type": "gpt_neox", )" + kDims + "}");
  CHECK(n.parallel_block);
  CHECK(n.qkv_bias);
  CHECK(n.layer_norm);
  CHECK_FALSE(n.gated_mlp);
  // Explicit layer_types win over the pattern.
  HfConfig lt = Parse(R"({"model_type": "gemma3_text", "layer_types": ["full_attention", "sliding_attention"],
                         "sliding_window": 512, )" +
                      kDims + "}");
  CHECK(lt.window == std::vector<int64_t>{0, 512});
}

TEST_CASE("hf_config: a nested text_config is a diff against Gemma3TextConfig", "[io][hf_config]") {
  HfConfig g = Parse(R"({"model_type": "gemma3", "text_config": {"hidden_size": 2560, "num_hidden_layers": 34}})");
  CHECK(g.hidden == 2560);
  CHECK(g.layers == 34);
  CHECK(g.heads == 8);
  CHECK(g.kv_heads == 4);
  CHECK(g.head_dim == 256);
  CHECK(g.intermediate == 9216);
  CHECK(g.vocab == 262208);
  CHECK(g.tie_word_embeddings);
  CHECK(g.qk_norm == QkNorm::kPerHead);
  // pattern 6: layers 5, 11, ... are global.
  CHECK(g.window[5] == 0);
  CHECK(g.window[4] == 4096);
}

TEST_CASE("hf_config: errors name the file and the key", "[io][hf_config]") {
  CHECK(Error(R"({"model_type": "llama", "hidden_size": 64})") == "c.json: missing field 'num_hidden_layers'");
  CHECK(Error(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 8})") ==
        "c.json: missing field 'vocab_size'");
  CHECK(Error(R"({"model_type": "llama", "num_key_value_heads": 3, )" + kDims + "}") ==
        "c.json: field 'num_key_value_heads' (3) does not divide the attention heads (32)");
  // A class default that does not fit is the config's omission, and the message says so.
  CHECK(Error(R"({"model_type": "mistral", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                  "num_attention_heads": 4, "vocab_size": 100})") ==
        "c.json: the config has no 'num_key_value_heads' and mistral's default (8) does not divide the attention "
        "heads (4)");
  // #31: a huge size is implausible, not "not a positive integer".
  CHECK(Error(R"({"model_type": "llama", "hidden_size": 1099511627776, "intermediate_size": 128,
                  "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 100})") ==
        "c.json: field 'hidden_size' is implausibly large (1099511627776 > 4194304)");
  CHECK(Error(R"({"model_type": "llama", "hidden_size": 18446744073709551615, "intermediate_size": 128,
                  "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 100})") ==
        "c.json: field 'hidden_size' is implausibly large (18446744073709551615)");
  CHECK(Error(R"({"model_type": "gemma3_text", "layer_types": ["full_attention"], )" + kDims + "}") ==
        "c.json: field 'layer_types' has 1 entries for 2 layers");
  auto u = ParseHfConfigText(R"({"model_type": "mamba"})", "c.json");
  CHECK(u.status().code() == ErrorCode::kUnsupported);
  CHECK(Error("[1]") == "c.json: config is not a JSON object");
}
