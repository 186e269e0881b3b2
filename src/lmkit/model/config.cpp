#include "lmkit/model/config.h"

#include <fmt/format.h>

namespace lmkit::model {
namespace {

// A positive integer key; `fallback` (0 = required) when absent or null.
Result<uint32_t> Dim(const Json& j, const char* key, uint32_t fallback, const std::string& subject) {
  if (!j.contains(key) || j[key].is_null()) {
    if (fallback) return fallback;
    return Status::InvalidInput(subject, fmt::format("config.json has no \"{}\"", key));
  }
  const Json& v = j[key];
  if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > (int64_t{1} << 30))
    return Status::InvalidInput(subject, fmt::format("\"{}\" must be a positive integer", key));
  return static_cast<uint32_t>(v.get<int64_t>());
}

Result<double> Real(const Json& j, const char* key, double fallback, const std::string& subject) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_number() || !(j[key].get<double>() > 0))
    return Status::InvalidInput(subject, fmt::format("\"{}\" must be a positive number", key));
  return j[key].get<double>();
}

int64_t TokenId(const Json& j, const char* key) {
  if (!j.contains(key)) return -1;
  const Json& v = j[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_array() && !v.empty() && v[0].is_number_integer()) return v[0].get<int64_t>();  // Llama 3 lists several
  return -1;
}

}  // namespace

Result<LlamaConfig> ParseLlamaConfig(const Json& j, const std::string& subject) {
  if (!j.is_object()) return Status::InvalidInput(subject, "config.json is not a JSON object");
  LlamaConfig c;
  c.model_type = j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  if (c.model_type != "llama" && c.model_type != "mistral" && c.model_type != "qwen2")
    return Status::Unsupported(subject,
                               "model_type '" + c.model_type + "' is not a Llama-family model (llama, mistral, qwen2)");
  if (j.contains("hidden_act") && j["hidden_act"] != "silu")
    return Status::Unsupported(subject, "hidden_act must be \"silu\" (SwiGLU)");
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    const Json& rs = j["rope_scaling"];
    std::string type =
        rs.is_object() && rs.contains("rope_type") && rs["rope_type"].is_string()
            ? rs["rope_type"].get<std::string>()
            : (rs.is_object() && rs.contains("type") && rs["type"].is_string() ? rs["type"].get<std::string>() : "");
    if (type != "default") return Status::Unsupported(subject, "rope_scaling '" + type + "' is not implemented");
  }
  LMKIT_ASSIGN_OR_RETURN(c.hidden, Dim(j, "hidden_size", 0, subject));
  LMKIT_ASSIGN_OR_RETURN(c.intermediate, Dim(j, "intermediate_size", 0, subject));
  LMKIT_ASSIGN_OR_RETURN(c.layers, Dim(j, "num_hidden_layers", 0, subject));
  LMKIT_ASSIGN_OR_RETURN(c.heads, Dim(j, "num_attention_heads", 0, subject));
  LMKIT_ASSIGN_OR_RETURN(c.kv_heads, Dim(j, "num_key_value_heads", c.heads, subject));
  LMKIT_ASSIGN_OR_RETURN(c.vocab, Dim(j, "vocab_size", 0, subject));
  LMKIT_ASSIGN_OR_RETURN(c.max_positions, Dim(j, "max_position_embeddings", 2048, subject));
  if (c.heads % c.kv_heads != 0)
    return Status::InvalidInput(
        subject,
        fmt::format("num_attention_heads {} is not a multiple of num_key_value_heads {}", c.heads, c.kv_heads));
  if (!j.contains("head_dim") && c.hidden % c.heads != 0)
    return Status::InvalidInput(
        subject, fmt::format("hidden_size {} is not a multiple of num_attention_heads {}", c.hidden, c.heads));
  LMKIT_ASSIGN_OR_RETURN(c.head_dim, Dim(j, "head_dim", c.hidden / c.heads, subject));
  if (c.head_dim % 2 != 0)
    return Status::InvalidInput(subject, fmt::format("head_dim {} is odd (RoPE needs pairs)", c.head_dim));
  LMKIT_ASSIGN_OR_RETURN(c.rms_eps, Real(j, "rms_norm_eps", 1e-6, subject));
  LMKIT_ASSIGN_OR_RETURN(c.rope_theta, Real(j, "rope_theta", 10000.0, subject));
  if (j.contains("tie_word_embeddings")) {
    if (!j["tie_word_embeddings"].is_boolean())
      return Status::InvalidInput(subject, "\"tie_word_embeddings\" must be true or false");
    c.tie_embeddings = j["tie_word_embeddings"].get<bool>();
  }
  c.bos_token = TokenId(j, "bos_token_id");
  c.eos_token = TokenId(j, "eos_token_id");
  return c;
}

}  // namespace lmkit::model
