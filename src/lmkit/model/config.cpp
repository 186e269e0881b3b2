#include "lmkit/model/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "lmkit/model/rope.h"

namespace lmkit::model {
namespace {

const std::set<std::string> kFamilies = {"llama",     "mistral",     "qwen2",       "qwen3",      "gemma2",
                                         "gemma3",    "gemma3_text", "phi3",        "olmo2",      "mixtral",
                                         "qwen2_moe", "qwen3_moe",   "deepseek_v2", "deepseek_v3"};

bool IsGemma(const std::string& t) { return t == "gemma2" || t == "gemma3" || t == "gemma3_text"; }

// The keys of a DeepSeek V2/V3 config.json that only the forward pass reads (io::ParseHfConfig has the sizes), with
// the class defaults of transformers 5.24's DeepseekV2Config / DeepseekV3Config. Keys the transformers classes do not
// read but the original checkpoints' code did (moe_layer_freq, scoring_func, topk_method of V3) are accepted only at
// the value that code and transformers agree on.
Status ReadDeepSeek(const Json& j, const std::string& subject, LlamaConfig& c) {
  const bool v3 = c.model_type == "deepseek_v3";
  auto has = [&](const char* k) { return j.contains(k) && !j[k].is_null(); };
  auto bad = [&](const char* k, const std::string& what) {
    return Status::InvalidInput(subject, std::string("field '") + k + "' " + what);
  };
  auto flag = [&](const char* k, bool fallback) -> Result<bool> {
    if (!has(k)) return fallback;
    if (!j[k].is_boolean()) return bad(k, "is not true or false");
    return j[k].get<bool>();
  };
  auto count = [&](const char* k, int64_t fallback) -> Result<int64_t> {
    if (!has(k)) return fallback;
    if (!j[k].is_number_integer() || j[k].get<int64_t>() < 0 || j[k].get<int64_t>() > (int64_t{1} << 14))
      return bad(k, "is not a count");
    return j[k].get<int64_t>();
  };
  auto str = [&](const char* k, const std::string& fallback) -> Result<std::string> {
    if (!has(k)) return fallback;
    if (!j[k].is_string()) return bad(k, "is not a string");
    return j[k].get<std::string>();
  };
  auto refuse = [&](const char* k, const std::string& why) {
    return Status::Unsupported(subject, std::string("field '") + k + "' (" + DumpJson(j[k], -1) + ") " + why);
  };
  LMKIT_ASSIGN_OR_RETURN(c.mla_bias, flag("attention_bias", false));
  if (v3) {
    LMKIT_ASSIGN_OR_RETURN(c.rope_interleave, flag("rope_interleave", true));
    c.mlp_bias = false;  // DeepseekV3MLP has no biases whatever mlp_bias says
    LMKIT_ASSIGN_OR_RETURN(int64_t mtp,
                           count(has("num_mtp_layers") ? "num_mtp_layers" : "num_nextn_predict_layers", 1));
    c.mtp_layers = static_cast<uint32_t>(mtp);
  } else {
    c.rope_interleave = true;  // DeepseekV2 rotates (2i, 2i + 1) pairs as complex numbers, always
  }
  LMKIT_ASSIGN_OR_RETURN(int64_t freq, count("moe_layer_freq", 1));
  if (freq != 1)
    return refuse("moe_layer_freq",
                  "is not implemented: transformers' DeepSeek classes make every layer from "
                  "first_k_dense_replace on a MoE layer");
  if (c.experts == 0) return Status::Ok();
  c.scoring = v3 ? RouterScoring::kSigmoid : RouterScoring::kSoftmax;
  c.router_bias = v3;
  LMKIT_ASSIGN_OR_RETURN(std::string scoring, str("scoring_func", v3 ? "sigmoid" : "softmax"));
  if (scoring != (v3 ? "sigmoid" : "softmax"))
    return refuse("scoring_func", std::string("is not implemented for ") + c.model_type + " (" +
                                      (v3 ? "sigmoid" : "softmax") + " only)");
  if (has("routed_scaling_factor")) {
    const auto& scale = j.at("routed_scaling_factor");
    if (!scale.is_number() || !(scale.get<double>() > 0) || !std::isfinite(scale.get<double>()))
      return bad("routed_scaling_factor", "must be a positive number");
    c.routed_scale = scale.get<double>();
  } else {
    c.routed_scale = v3 ? 2.5 : 1.0;
  }
  LMKIT_ASSIGN_OR_RETURN(c.norm_topk_prob, flag("norm_topk_prob", v3));
  // transformers' DeepseekV2 never renormalises (the original code did when norm_topk_prob was set): refused rather
  // than guessed.
  if (!v3 && c.norm_topk_prob)
    return refuse("norm_topk_prob", "is not implemented for deepseek_v2 (transformers' router never renormalises)");
  if (v3) {
    LMKIT_ASSIGN_OR_RETURN(std::string method, str("topk_method", "noaux_tc"));
    if (method != "noaux_tc") return refuse("topk_method", "is not implemented for deepseek_v3 (noaux_tc only)");
    c.group_limit = GroupLimit::kTop2Sum;
  } else {
    LMKIT_ASSIGN_OR_RETURN(std::string method, str("topk_method", "greedy"));
    if (method == "group_limited_greedy") {
      c.group_limit = GroupLimit::kMax;
    } else if (method != "greedy") {
      return refuse("topk_method", "is not implemented for deepseek_v2 (greedy, group_limited_greedy)");
    }
  }
  if (c.group_limit == GroupLimit::kNone) return Status::Ok();
  for (const char* k : {"n_group", "topk_group"})
    if (!has(k) && !v3) return bad(k, "is needed by group-limited routing");
  LMKIT_ASSIGN_OR_RETURN(int64_t groups, count("n_group", 8));
  LMKIT_ASSIGN_OR_RETURN(int64_t keep, count("topk_group", 4));
  if (groups < 1 || c.experts % groups != 0)
    return bad("n_group", fmt::format("({}) must divide the {} routed experts", groups, c.experts));
  if (keep < 1 || keep > groups) return bad("topk_group", fmt::format("({}) must be in [1, n_group {}]", keep, groups));
  const int64_t size = c.experts / groups;
  if (v3 && size < 2) return bad("n_group", fmt::format("({}) leaves fewer than 2 experts per group", groups));
  if (c.top_k > keep * size)
    return bad("num_experts_per_tok",
               fmt::format("({}) exceeds the {} experts of topk_group {} groups", c.top_k, keep * size, keep));
  c.n_group = static_cast<uint32_t>(groups);
  c.topk_group = static_cast<uint32_t>(keep);
  return Status::Ok();
}

}  // namespace

Result<LlamaConfig> LlamaConfigFrom(const io::HfConfig& h) {
  const std::string& subject = h.subject;
  const std::string& t = h.model_type;
  if (!kFamilies.count(t))
    return Status::Unsupported(subject, "model_type '" + t +
                                            "' has no forward pass (llama, mistral, qwen2, qwen3, gemma2, gemma3, "
                                            "phi3, olmo2, mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3)");
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
  if (!h.mla && h.head_dim % 2 != 0)
    return Status::InvalidInput(subject, fmt::format("head_dim {} is odd (RoPE needs pairs)", h.head_dim));
  if (h.mla && h.kv_heads != h.heads)
    return Status::Unsupported(subject, fmt::format("field 'num_key_value_heads' ({}) differs from "
                                                    "'num_attention_heads' ({}): multi-head latent attention expands "
                                                    "one key and value per head",
                                                    h.kv_heads, h.heads));
  // ParseHfConfig bounds every size (widths by 2^22, counts by 2^14, positions by 2^31): each fits uint32.
  c.model_type = t;
  c.hidden = static_cast<uint32_t>(h.hidden);
  c.intermediate = static_cast<uint32_t>(h.intermediate);
  c.layers = static_cast<uint32_t>(h.layers);
  c.heads = static_cast<uint32_t>(h.heads);
  c.kv_heads = static_cast<uint32_t>(h.kv_heads);
  c.head_dim = static_cast<uint32_t>(h.head_dim);
  c.v_head_dim = c.head_dim;
  if (h.mla) {
    c.mla = true;
    c.q_lora_rank = static_cast<uint32_t>(h.mla_spec.q_lora_rank);
    c.kv_lora_rank = static_cast<uint32_t>(h.mla_spec.kv_lora_rank);
    c.qk_nope = static_cast<uint32_t>(h.mla_spec.qk_nope_head_dim);
    c.qk_rope = static_cast<uint32_t>(h.mla_spec.qk_rope_head_dim);
    c.v_head_dim = static_cast<uint32_t>(h.mla_spec.v_head_dim);
  }
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
  const bool deepseek = t == "deepseek_v2" || t == "deepseek_v3";
  if (t == "mixtral" || t == "qwen2_moe" || t == "qwen3_moe" || deepseek) {
    if (!deepseek) c.mlp_bias = false;
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
  LMKIT_RETURN_IF_ERROR(RopeSchedule::Make(c.rope, c.rope_head_dim(), c.max_positions, subject).status());
  LMKIT_RETURN_IF_ERROR(RopeSchedule::Make(c.rope_local, c.rope_head_dim(), c.max_positions, subject).status());
  if (c.mla && c.rope.type != "default") {
    // DeepSeek's softmax scale: (qk_nope + qk_rope)^-1/2 times mscale(factor, mscale_all_dim)^2 when the rope dict has
    // a non-zero mscale_all_dim (transformers' yarn_apply_mscale).
    const Json& p = c.rope.params;
    const double all =
        p.contains("mscale_all_dim") && p["mscale_all_dim"].is_number() ? p["mscale_all_dim"].get<double>() : 0.0;
    if (all != 0) {
      if (!p.contains("factor") || !p["factor"].is_number())
        return Status::InvalidInput(subject, "field 'rope_parameters.factor' is needed with mscale_all_dim");
      const double factor = p["factor"].get<double>();
      const double m = factor <= 1 ? 1.0 : 0.1 * all * std::log(factor) + 1.0;
      c.attn_scale *= m * m;
    }
  }
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
  if (c.mla) LMKIT_RETURN_IF_ERROR(ReadDeepSeek(j, subject, c));

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
    if (c.mla && std::string(k.name) == "rope_interleave") continue;  // read above (deepseek_v3; V2 ignores it)
    if (!j.contains(k.name) || j[k.name].is_null() || j[k.name] == k.noop) continue;
    return Status::Unsupported(subject, "field '" + std::string(k.name) + "' (" + DumpJson(j[k.name], -1) +
                                            ") is not implemented by the forward pass");
  }
  return c;
}

}  // namespace lmkit::model
