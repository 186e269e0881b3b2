#include "lmkit/model/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "lmkit/model/rope.h"

namespace lmkit::model {
namespace {

const std::set<std::string> kFamilies = {"llama",       "mistral", "qwen2", "qwen3",   "gemma2",    "gemma3",
                                         "gemma3_text", "phi3",    "olmo2", "mixtral", "qwen2_moe", "qwen3_moe"};

bool IsGemma(const std::string& t) { return t == "gemma2" || t == "gemma3" || t == "gemma3_text"; }

}  // namespace

Result<LlamaConfig> LlamaConfigFrom(const io::HfConfig& h) {
  const std::string& subject = h.subject;
  const std::string& t = h.model_type;
  if (h.mla)
    return Status::Unsupported(subject,
                               "model_type '" + t + "': multi-head latent attention (kv_lora_rank) is not implemented");
  if (!kFamilies.count(t))
    return Status::Unsupported(subject, "model_type '" + t +
                                            "' has no forward pass (llama, mistral, qwen2, qwen3, gemma2, gemma3, "
                                            "phi3, olmo2, mixtral, qwen2_moe, qwen3_moe)");
  LlamaConfig c;
  if (h.hidden_act == "silu" || h.hidden_act == "swish") {
    c.act = Activation::kSilu;
  } else if (h.hidden_act == "gelu_pytorch_tanh" || h.hidden_act == "gelu_new" || h.hidden_act == "gelu_fast") {
    c.act = Activation::kGeluTanh;
  } else if (h.hidden_act == "gelu") {
    c.act = Activation::kGelu;
  } else {
    return Status::Unsupported(
        subject, "field 'hidden_act' \"" + h.hidden_act + "\" is not implemented (silu, gelu, gelu_pytorch_tanh)");
  }
  if (h.max_positions <= 0)
    return Status::InvalidInput(subject, "field 'max_position_embeddings' must be positive (got 0)");
  if (h.head_dim % 2 != 0)
    return Status::InvalidInput(subject, fmt::format("head_dim {} is odd (RoPE needs pairs)", h.head_dim));
  // ParseHfConfig bounds every size (widths by 2^22, counts by 2^14, positions by 2^31): each fits uint32.
  c.model_type = t;
  c.hidden = static_cast<uint32_t>(h.hidden);
  c.intermediate = static_cast<uint32_t>(h.intermediate);
  c.layers = static_cast<uint32_t>(h.layers);
  c.heads = static_cast<uint32_t>(h.heads);
  c.kv_heads = static_cast<uint32_t>(h.kv_heads);
  c.head_dim = static_cast<uint32_t>(h.head_dim);
  c.vocab = static_cast<uint32_t>(h.vocab);
  c.max_positions = static_cast<uint32_t>(h.max_positions);
  c.rms_eps = h.norm_eps;
  c.rope_theta = h.rope.theta;
  c.tie_embeddings = h.tie_word_embeddings;
  c.bos_token = h.bos_token;
  c.eos_token = h.eos_token;
  c.qkv_bias = h.qkv_bias;
  c.o_bias = h.out_bias;
  c.mlp_bias = h.mlp_bias;
  c.qk_norm = h.qk_norm;
  c.rope = h.rope;
  c.rope_local = h.rope_local;
  c.attn_softcap = h.attn_logit_softcap;
  c.final_softcap = h.final_logit_softcap;
  c.attn_scale =
      1.0 / std::sqrt(h.query_pre_attn_scalar > 0 ? h.query_pre_attn_scalar : static_cast<double>(h.head_dim));
  if (IsGemma(t)) {
    c.norms = NormPlacement::kSandwich;
    c.unit_offset_norms = c.scale_embeddings = true;
  } else if (t == "olmo2") {
    c.norms = NormPlacement::kPost;
  } else if (t == "phi3") {
    c.fused_qkv = c.fused_gate_up = true;
    c.qkv_bias = c.o_bias = c.mlp_bias = false;  // Phi3Attention / Phi3MLP: bias=False whatever the config says
  }
  if (t == "mixtral" || t == "qwen2_moe" || t == "qwen3_moe") {
    c.mlp_bias = false;
    c.experts = static_cast<uint32_t>(h.moe_spec.routed_experts);
    c.top_k = static_cast<uint32_t>(h.moe_spec.top_k);
    c.expert_intermediate = static_cast<uint32_t>(h.moe_spec.expert_d_ff);
    c.shared_intermediate = static_cast<uint32_t>(h.moe_spec.shared_d_ff);
    c.shared_gate = h.moe_spec.shared_gate;
    c.norm_topk_prob = t == "mixtral";
  }
  c.moe = h.moe;
  c.window.resize(c.layers);
  c.local_rope.resize(c.layers);
  for (uint32_t i = 0; i < c.layers; ++i) {
    c.window[i] = static_cast<uint32_t>(std::min<int64_t>(h.window[i], UINT32_MAX));
    c.local_rope[i] = t != "gemma2" && IsGemma(t) && h.window[i] > 0;
  }
  // Validated here so that a bad rope dict fails at load, naming its field.
  LMKIT_RETURN_IF_ERROR(RopeSchedule::Make(c.rope, c.head_dim, c.max_positions, subject).status());
  LMKIT_RETURN_IF_ERROR(RopeSchedule::Make(c.rope_local, c.head_dim, c.max_positions, subject).status());
  return c;
}

Result<LlamaConfig> ParseLlamaConfig(const Json& config_in, const std::string& subject) {
  // transformers 5 writes Qwen3-MoE's expert count as num_local_experts (Qwen3MoeConfig's attribute); older configs
  // and ParseHfConfig call it num_experts.
  Json patched;
  const bool rename = config_in.is_object() && config_in.value("model_type", Json()) == "qwen3_moe" &&
                      config_in.contains("num_local_experts") && !config_in.contains("num_experts");
  if (rename) {
    patched = config_in;
    patched["num_experts"] = patched["num_local_experts"];
  }
  const Json& config = rename ? patched : config_in;
  LMKIT_ASSIGN_OR_RETURN(io::HfConfig h, io::ParseHfConfig(config, subject));
  const std::string& t = h.model_type;
  const Json empty = Json::object();
  const Json& j =
      t == "gemma3"
          ? (config.contains("text_config") && config["text_config"].is_object() ? config["text_config"] : empty)
          : config;
  auto has = [&](const char* k) { return j.contains(k) && !j[k].is_null(); };
  auto flag = [&](const char* k, bool fallback) -> Result<bool> {
    if (!has(k)) return fallback;
    if (!j[k].is_boolean()) return Status::InvalidInput(subject, std::string("field '") + k + "' is not true or false");
    return j[k].get<bool>();
  };
  // qwen2_moe's q/k/v bias is a config field (Qwen2MoeConfig.qkv_bias), not ParseHfConfig's fixed qwen2 rule.
  if (t == "qwen2_moe") {
    LMKIT_ASSIGN_OR_RETURN(h.qkv_bias, flag("qkv_bias", true));
  }
  LMKIT_ASSIGN_OR_RETURN(LlamaConfig c, LlamaConfigFrom(h));
  if (t == "qwen2_moe" || t == "qwen3_moe") {
    LMKIT_ASSIGN_OR_RETURN(c.norm_topk_prob, flag("norm_topk_prob", false));
  }

  // Keys other transformers classes read that change the maths: present in a config of these families, they would
  // be silently ignored here, so they are refused (none of the supported classes reads them, except where noted).
  struct Key {
    const char* name;
    Json noop;  // the value that changes nothing
  };
  const Key kRefused[] = {
      {"use_qk_norm", false},        {"attention_chunk_size", nullptr},      {"no_rope_layers", nullptr},
      {"logits_scaling", 1.0},       {"embedding_multiplier", 1.0},          {"residual_multiplier", 1.0},
      {"attention_multiplier", 1.0}, {"use_bidirectional_attention", false}, {"rope_interleave", false}};
  for (const Key& k : kRefused) {
    if (!j.contains(k.name) || j[k.name].is_null() || j[k.name] == k.noop) continue;
    return Status::Unsupported(subject, "field '" + std::string(k.name) + "' (" + DumpJson(j[k.name], -1) +
                                            ") is not implemented by the forward pass");
  }
  return c;
}

}  // namespace lmkit::model
