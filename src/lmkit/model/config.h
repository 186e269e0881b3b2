// The architecture of a Hugging Face Llama-family checkpoint (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM):
// the runtime's view of the one config.json parser (io/hf_config.h).
#pragma once

#include <cstdint>
#include <string>

#include "lmkit/common/json.h"
#include "lmkit/common/status.h"
#include "lmkit/io/hf_config.h"

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

// The forward pass's view of `c`: kUnsupported for what it does not implement (another model_type or hidden_act, a
// rope_scaling other than "default"), kInvalidInput naming c.subject for an odd head_dim or no positions. Pure.
Result<LlamaConfig> LlamaConfigFrom(const io::HfConfig& c);
// ParseHfConfig (transformers' defaults: e.g. max_position_embeddings 2048 for llama, 131072 for mistral), then
// LlamaConfigFrom. Errors name `subject` and the key, in one line.
Result<LlamaConfig> ParseLlamaConfig(const Json& config, const std::string& subject);

}  // namespace lmkit::model
