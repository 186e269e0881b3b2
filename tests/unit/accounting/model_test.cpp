// Building a ModelSpec from a config.json, a preset or explicit dimensions: what is refused, and how it is named.
#include "lmkit/accounting/model.h"

#include <catch2/catch.hpp>
#include <string>

#include "lmkit/common/json.h"

using namespace lmkit::accounting;

namespace {
// The message of a config the reader refuses; every such refusal is kInvalidInput naming the file.
std::string ConfigError(const std::string& text) {
  auto j = lmkit::ParseJson(text, "inline");
  REQUIRE(j.ok());
  auto m = ParseModelConfig(*j, "bad.json");
  REQUIRE(!m.ok());
  CHECK(m.status().code() == lmkit::ErrorCode::kInvalidInput);
  CHECK(m.status().subject() == "bad.json");
  return m.status().message();
}
}  // namespace

TEST_CASE("model: config errors name the field", "[accounting][model]") {
  auto err = [](const char* text) {
    auto j = lmkit::ParseJson(text, "inline");
    REQUIRE(j.ok());
    return ParseModelConfig(*j, "bad.json").status();
  };
  auto a = err(R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 5,
                   "num_hidden_layers": 2, "intermediate_size": 11008, "vocab_size": 32000})");
  CHECK(a.code() == lmkit::ErrorCode::kInvalidInput);
  CHECK(a.subject() == "bad.json");
  CHECK(a.message().find("num_key_value_heads") != std::string::npos);
  auto b = err(R"({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12})");
  CHECK(b.message() == "missing field 'vocab_size'");
  auto c = err(R"({"model_type": "llama", "hidden_size": 0, "num_attention_heads": 1,
                   "num_hidden_layers": 2, "intermediate_size": 11008, "vocab_size": 32000})");
  CHECK(c.message() == "field 'hidden_size' must be positive (got 0)");
  auto d = err(R"({"model_type": "mixtral", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                   "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 100, "num_local_experts": 2,
                   "num_experts_per_tok": 3})");
  CHECK(d.message().find("num_experts_per_tok") != std::string::npos);
  auto e = err(R"({"hidden_size": 64})");
  CHECK(e.message() == "missing field 'model_type'");
  auto f = err(R"({"model_type": "mamba"})");
  CHECK(f.code() == lmkit::ErrorCode::kUnsupported);
  auto g = err(R"({"model_type": "llama", "hidden_size": "big", "num_attention_heads": 1,
                   "num_hidden_layers": 2, "intermediate_size": 11008, "vocab_size": 32000})");
  CHECK(g.message() == "field 'hidden_size' is not an integer");
  auto h = err(R"({"model_type": "llama", "hidden_size": 4000000, "num_attention_heads": 1, "num_hidden_layers": 16000,
                   "intermediate_size": 4000000, "vocab_size": 32000})");
  CHECK(h.message() == "the model is implausibly large (over 1e18 parameters)");
  auto i = err(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 1, "num_hidden_layers": 100000,
                   "intermediate_size": 128, "vocab_size": 32000})");
  CHECK(i.message() == "field 'num_hidden_layers' is implausibly large (100000 > 16384)");
}

TEST_CASE("model: out-of-range numbers found by fuzz_config are errors, not undefined arithmetic",
          "[accounting][model]") {
  // Run under the UBSan build in CI: each of these was a float-to-int cast, a signed overflow or a 10^12-entry
  // allocation before the bounds were checked.
  const std::string llama = R"("model_type": "llama", "num_attention_heads": 1, "intermediate_size": 128,
                                "vocab_size": 32000)";
  CHECK(ConfigError("{" + llama + R"(, "hidden_size": 1e300, "num_hidden_layers": 2})") ==
        "field 'hidden_size' is not an integer");
  CHECK(ConfigError("{" + llama + R"(, "hidden_size": -1e19, "num_hidden_layers": 2})") ==
        "field 'hidden_size' is not an integer");
  CHECK(ConfigError("{" + llama + R"(, "hidden_size": 64, "num_hidden_layers": 1e12})") ==
        "field 'num_hidden_layers' is implausibly large (1000000000000 > 16384)");
  const std::string v3 = R"("model_type": "deepseek_v3", "hidden_size": 64, "num_attention_heads": 2,
      "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100, "kv_lora_rank": 16, "v_head_dim": 8,
      "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 4)";
  CHECK(ConfigError("{" + v3 + R"(, "qk_nope_head_dim": 9223372036854775807, "qk_rope_head_dim": 8,
                          "n_shared_experts": 1})")
            .find("'qk_nope_head_dim' is implausibly large") != std::string::npos);
  CHECK(ConfigError("{" + v3 +
                    R"(, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "n_shared_experts": 4611686018427387904})")
            .find("'n_shared_experts' is implausibly large") != std::string::npos);
}

TEST_CASE("model: negative optional sizes are errors, not smaller or negative counts", "[accounting][model]") {
  // Each of these used to parse: n_positions -5 gave a negative embedding count, a negative n_shared_experts or
  // q_lora_rank silently removed parameters.
  CHECK(ConfigError(R"({"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100,
                "n_positions": -5})") == "field 'n_positions' must not be negative (got -5)");
  CHECK(ConfigError(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": -1})") ==
        "field 'max_position_embeddings' must not be negative (got -1)");
  const std::string v3 = R"("model_type": "deepseek_v3", "hidden_size": 64, "num_attention_heads": 2,
      "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100, "kv_lora_rank": 16, "v_head_dim": 8,
      "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "n_routed_experts": 4, "num_experts_per_tok": 2,
      "moe_intermediate_size": 4)";
  CHECK(ConfigError("{" + v3 + R"(, "n_shared_experts": -1})") ==
        "field 'n_shared_experts' must not be negative (got -1)");
  CHECK(ConfigError("{" + v3 + R"(, "q_lora_rank": -7})") == "field 'q_lora_rank' must not be negative (got -7)");
  Dimensions d;
  d.layers = 2;
  d.d_model = 64;
  d.heads = 4;
  d.vocab = 100;
  d.positions = -5;
  auto m = FromDimensions(d);
  REQUIRE(!m.ok());
  CHECK(m.status().message() == "field 'n_positions' must not be negative (got -5)");
}

TEST_CASE("model: a boolean or string field of the wrong type is an error, not the default", "[accounting][model]") {
  // "tie_word_embeddings": "true" used to fall back to false and count an untied head without a word.
  const std::string llama = R"("hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                               "intermediate_size": 128, "vocab_size": 100)";
  CHECK(ConfigError(R"({"model_type": "llama", "tie_word_embeddings": "true", )" + llama + "}") ==
        "field 'tie_word_embeddings' is not true or false");
  CHECK(ConfigError(R"({"model_type": "qwen2", "use_sliding_window": 1, )" + llama + "}") ==
        "field 'use_sliding_window' is not true or false");
  CHECK(ConfigError(R"({"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 100,
                        "bias": "no"})") == "field 'bias' is not true or false");
  CHECK(ConfigError(R"({"model_type": 5, )" + llama + "}") == "field 'model_type' is not a string");
  // null still means "absent" (HF writes it for unset optional fields).
  auto j = lmkit::ParseJson(R"({"model_type": "llama", "tie_word_embeddings": null, )" + llama + "}", "inline");
  REQUIRE(j.ok());
  auto m = ParseModelConfig(*j, "ok.json");
  REQUIRE(m.ok());
  CHECK_FALSE(m->tied);
}

TEST_CASE("model: an unsupported model_type points to explicit dimensions", "[accounting][model]") {
  auto j = lmkit::ParseJson(R"({"model_type": "rwkv", "hidden_size": 64})", "inline");
  REQUIRE(j.ok());
  auto m = ParseModelConfig(*j, "rwkv.json");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == lmkit::ErrorCode::kUnsupported);
  CHECK(m.status().ToString() ==
        "rwkv.json: model_type 'rwkv' is not supported (known: gpt2, gpt_neox, falcon, llama, mistral, mixtral, qwen2, "
        "qwen2_moe, qwen3, qwen3_moe, gemma2, gemma3, gemma3_text, phi3, olmo2, deepseek, deepseek_v2, deepseek_v3, "
        "llama4, llama4_text, gpt_oss); "
        "describe it by explicit dimensions instead (layers, d_model, heads, vocab ...)");
}

TEST_CASE("model: llama4 and gpt_oss fields that do not fit are one-line errors", "[accounting][model]") {
  auto j = lmkit::ParseJson(R"({"model_type": "llama4_text", "num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 128,
    "num_local_experts": 4, "num_experts_per_tok": 1, "moe_layers": [1, 5]})",
                            "inline");
  REQUIRE(j.ok());
  CHECK(ParseModelConfig(*j, "l4.json").status().ToString() ==
        "l4.json: field 'moe_layers' holds 5, outside the 2 layers");
  (*j)["moe_layers"] = lmkit::Json::array({1});
  auto m = ParseModelConfig(*j, "l4.json");
  REQUIRE(m.ok());
  CHECK(m->d_ff == 16384);  // intermediate_size_mlp's class default for the dense layer
  auto g = lmkit::ParseJson(R"({"model_type": "gpt_oss", "num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 128,
    "num_local_experts": 4, "num_experts_per_tok": 8})",
                            "inline");
  REQUIRE(g.ok());
  CHECK(ParseModelConfig(*g, "oss.json").status().ToString() ==
        "oss.json: field 'num_experts_per_tok' (8) exceeds the number of experts (4)");
}
