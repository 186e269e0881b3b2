#include "lmkit/model/config.h"

#include <fmt/format.h>

namespace lmkit::model {

Result<LlamaConfig> LlamaConfigFrom(const io::HfConfig& h) {
  const std::string& subject = h.subject;
  if (h.model_type != "llama" && h.model_type != "mistral" && h.model_type != "qwen2")
    return Status::Unsupported(subject,
                               "model_type '" + h.model_type + "' is not a Llama-family model (llama, mistral, qwen2)");
  if (h.hidden_act != "silu") return Status::Unsupported(subject, "hidden_act must be \"silu\" (SwiGLU)");
  if (!h.rope_scaling.empty() && h.rope_scaling != "default")
    return Status::Unsupported(subject, "rope_scaling '" + h.rope_scaling + "' is not implemented");
  if (h.max_positions <= 0)
    return Status::InvalidInput(subject, "field 'max_position_embeddings' must be positive (got 0)");
  if (h.head_dim % 2 != 0)
    return Status::InvalidInput(subject, fmt::format("head_dim {} is odd (RoPE needs pairs)", h.head_dim));
  // ParseHfConfig bounds every size (widths by 2^22, counts by 2^14, positions by 2^31): each fits uint32.
  LlamaConfig c;
  c.model_type = h.model_type;
  c.hidden = static_cast<uint32_t>(h.hidden);
  c.intermediate = static_cast<uint32_t>(h.intermediate);
  c.layers = static_cast<uint32_t>(h.layers);
  c.heads = static_cast<uint32_t>(h.heads);
  c.kv_heads = static_cast<uint32_t>(h.kv_heads);
  c.head_dim = static_cast<uint32_t>(h.head_dim);
  c.vocab = static_cast<uint32_t>(h.vocab);
  c.max_positions = static_cast<uint32_t>(h.max_positions);
  c.rms_eps = h.norm_eps;
  c.rope_theta = h.rope_theta;
  c.tie_embeddings = h.tie_word_embeddings;
  c.bos_token = h.bos_token;
  c.eos_token = h.eos_token;
  return c;
}

Result<LlamaConfig> ParseLlamaConfig(const Json& config, const std::string& subject) {
  LMKIT_ASSIGN_OR_RETURN(io::HfConfig h, io::ParseHfConfig(config, subject));
  return LlamaConfigFrom(h);
}

}  // namespace lmkit::model
