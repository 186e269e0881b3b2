// The runtime's view of a Llama-family config.json: defaults per model_type, GQA checks, what it does not implement.
#include "lmkit/model/config.h"

#include <catch2/catch.hpp>

#include "lmkit/common/json.h"

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
  j["rope_scaling"] = {{"rope_type", "llama3"}};
  CHECK(ParseLlamaConfig(j, "c.json").status().code() == ErrorCode::kUnsupported);
  j["rope_scaling"] = nullptr;
  j["model_type"] = "gpt2";
  CHECK(ParseLlamaConfig(j, "c.json").status().code() == ErrorCode::kUnsupported);
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
