// The architecture of a Hugging Face Llama-family checkpoint (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM),
// read from its config.json.
//
// Contract: ParseLlamaConfig reads the keys the forward pass needs and applies the defaults of transformers'
// LlamaConfig where a key is absent (num_key_value_heads = num_attention_heads, rms_norm_eps = 1e-6, rope_theta =
// 10000, tie_word_embeddings = false, head_dim = hidden_size / num_attention_heads). Errors are kInvalidInput naming
// `subject` with one line naming the key (missing/non-positive dimensions, heads not divisible by kv heads, odd
// head_dim), or kUnsupported for what this forward pass does not implement (another model_type or hidden_act, a
// rope_scaling other than "default"). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "lmkit/common/json.h"
#include "lmkit/common/status.h"

namespace lmkit::model {

struct LlamaConfig {
  std::string model_type;  // llama | mistral | qwen2
  uint32_t hidden = 0;
  uint32_t intermediate = 0;
  uint32_t layers = 0;
  uint32_t heads = 0;
  uint32_t kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t vocab = 0;
  uint32_t max_positions = 0;
  double rms_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_embeddings = false;
  int64_t bos_token = -1;  // -1 when config.json has none
  int64_t eos_token = -1;
};

Result<LlamaConfig> ParseLlamaConfig(const Json& config, const std::string& subject);

}  // namespace lmkit::model
