#include "lmkit/io/hf_config.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <set>
#include <utility>

namespace lmkit::io {
namespace {

// Bounds that keep every later int64/uint64 product exact; consumers may bound more tightly.
constexpr int64_t kMaxWidth = int64_t{1} << 22, kMaxCount = int64_t{1} << 14, kMaxVocab = int64_t{1} << 26,
                  kMaxPositions = int64_t{1} << 31;

// Typed reads of one config object. Keys may have aliases (gpt2's "n_layer" is "num_hidden_layers"); errors name the
// first alias. `nested` is a sub-config that save_pretrained wrote as a diff against its class: every key defaults.
class Reader {
 public:
  Reader(const Json& j, std::string subject, bool nested) : j_(j), subject_(std::move(subject)), nested_(nested) {}

  const std::string& subject() const { return subject_; }
  bool Has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  bool IsNull(const char* key) const { return j_.contains(key) && j_[key].is_null(); }
  Status Err(const std::string& msg) const { return Status::InvalidInput(subject_, msg); }

  // A size that must be positive: required at the top level, `class_default` inside a nested config.
  Result<int64_t> Dim(std::initializer_list<const char*> keys, int64_t class_default, int64_t cap) const {
    const char* key = Pick(keys);
    if (key == nullptr) {
      if (nested_) return class_default;
      return Err("missing field '" + std::string(*keys.begin()) + "'");
    }
    LMKIT_ASSIGN_OR_RETURN(int64_t v, IntValue(key));
    if (v <= 0) return Err("field '" + std::string(key) + "' must be positive (got " + std::to_string(v) + ")");
    LMKIT_RETURN_IF_ERROR(AtMost(key, v, cap));
    return v;
  }
  // A size where 0 means "none"; absent (or null) gives `fallback`.
  Result<int64_t> Opt(std::initializer_list<const char*> keys, int64_t fallback, int64_t cap) const {
    const char* key = Pick(keys);
    if (key == nullptr) return fallback;
    LMKIT_ASSIGN_OR_RETURN(int64_t v, IntValue(key));
    if (v < 0) return Err("field '" + std::string(key) + "' must not be negative (got " + std::to_string(v) + ")");
    LMKIT_RETURN_IF_ERROR(AtMost(key, v, cap));
    return v;
  }
  // As Opt, but an explicit null is Python's None (0 = off) rather than the class default: "sliding_window": null.
  Result<int64_t> OptNone(const char* key, int64_t class_default, int64_t cap) const {
    if (IsNull(key)) return 0;
    return Opt({key}, class_default, cap);
  }
  // A present field of the wrong type is an error, not the default: "tie_word_embeddings": "true" used to count an
  // untied head silently.
  Result<bool> Flag(const char* key, bool fallback) const {
    if (!Has(key)) return fallback;
    if (!j_[key].is_boolean()) return Err("field '" + std::string(key) + "' is not true or false");
    return j_[key].get<bool>();
  }
  Result<std::string> Str(std::initializer_list<const char*> keys, const std::string& fallback) const {
    const char* key = Pick(keys);
    if (key == nullptr) return fallback;
    if (!j_[key].is_string()) return Err("field '" + std::string(key) + "' is not a string");
    return j_[key].get<std::string>();
  }
  // A positive finite number (epsilons, rope bases); absent gives `fallback`.
  Result<double> Real(const char* key, double fallback) const {
    if (!Has(key)) return fallback;
    const Json& v = j_[key];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      return Err("field '" + std::string(key) + "' must be a positive number");
    return v.get<double>();
  }
  // As Real, where null is None (0 = off): the soft-capping values.
  Result<double> RealNone(const char* key, double class_default) const {
    if (IsNull(key)) return 0.0;
    return Real(key, class_default);
  }
  Result<std::vector<int64_t>> IntList(const char* key) const {
    std::vector<int64_t> out;
    if (!Has(key)) return out;
    if (!j_[key].is_array()) return Err("field '" + std::string(key) + "' is not a list");
    for (const auto& v : j_[key]) {
      if (!v.is_number_integer()) return Err("field '" + std::string(key) + "' holds a non-integer");
      out.push_back(v.get<int64_t>());
    }
    return out;
  }
  Result<std::vector<std::string>> StrList(const char* key) const {
    std::vector<std::string> out;
    if (!Has(key)) return out;
    if (!j_[key].is_array()) return Err("field '" + std::string(key) + "' is not a list");
    for (const auto& v : j_[key]) {
      if (!v.is_string()) return Err("field '" + std::string(key) + "' holds a non-string");
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  const Json& At(const char* key) const { return j_[key]; }

 private:
  const char* Pick(std::initializer_list<const char*> keys) const {
    for (const char* k : keys)
      if (Has(k)) return k;
    return nullptr;
  }
  Result<int64_t> IntValue(const char* key) const {
    const Json& v = j_[key];
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return Err("field '" + std::string(key) + "' is implausibly large (" + std::to_string(v.get<uint64_t>()) + ")");
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
      // 4096.0 is an integer; 1e300 is not one lmkit can hold (and casting it would be undefined).
      const double d = v.get<double>();
      if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == std::trunc(d))
        return static_cast<int64_t>(d);
    }
    return Err("field '" + std::string(key) + "' is not an integer");
  }
  Status AtMost(const char* key, int64_t v, int64_t cap) const {
    if (v <= cap) return Status::Ok();
    return Err("field '" + std::string(key) + "' is implausibly large (" + std::to_string(v) + " > " +
               std::to_string(cap) + ")");
  }

  const Json& j_;
  std::string subject_;
  bool nested_;
};

#define LMKIT_READ(var, expr) LMKIT_ASSIGN_OR_RETURN(var, expr)

// transformers' class defaults of the Llama-like families (configuration_<type>.py).
struct Defaults {
  int64_t layers, hidden, heads, kv_heads /* 0 = heads */, head_dim /* 0 = hidden / heads */, intermediate, vocab,
      max_positions;
  const char* act;
  double eps, theta;
  bool tie;
};

Defaults DefaultsOf(const std::string& t) {
  if (t == "mistral") return {32, 4096, 32, 8, 0, 14336, 32000, 4096 * 32, "silu", 1e-6, 10000.0, false};
  if (t == "mixtral") return {32, 4096, 32, 8, 0, 14336, 32000, 4096 * 32, "silu", 1e-5, 1e6, false};
  if (t == "qwen2") return {32, 4096, 32, 32, 0, 22016, 151936, 32768, "silu", 1e-6, 10000.0, false};
  if (t == "qwen2_moe") return {24, 2048, 16, 16, 0, 5632, 151936, 32768, "silu", 1e-6, 10000.0, false};
  if (t == "qwen3") return {36, 4096, 32, 8, 128, 22016, 151936, 32768, "silu", 1e-6, 10000.0, false};
  if (t == "qwen3_moe") return {24, 2048, 32, 4, 0, 6144, 151936, 32768, "silu", 1e-6, 10000.0, false};
  if (t == "gemma2") return {26, 2304, 8, 4, 256, 9216, 256000, 8192, "gelu_pytorch_tanh", 1e-6, 10000.0, true};
  if (t == "gemma3_text") return {26, 2304, 8, 4, 256, 9216, 262208, 131072, "gelu_pytorch_tanh", 1e-6, 1e6, true};
  if (t == "phi3") return {32, 3072, 32, 0, 0, 8192, 32064, 4096, "silu", 1e-5, 10000.0, false};
  if (t == "olmo2") return {32, 4096, 32, 0, 0, 11008, 50304, 2048, "silu", 1e-5, 10000.0, false};
  if (t == "deepseek_v3") return {61, 7168, 128, 128, 0, 18432, 129280, 4096, "silu", 1e-6, 10000.0, false};
  if (t == "deepseek_v2") return {30, 5120, 128, 128, 0, 12288, 102400, 2048, "silu", 1e-6, 10000.0, false};
  if (t == "llama4_text") return {48, 5120, 40, 8, 128, 8192, 202048, 131072, "silu", 1e-5, 500000.0, false};
  if (t == "gpt_oss") return {36, 2880, 64, 8, 64, 2880, 201088, 131072, "silu", 1e-5, 150000.0, false};
  // llama, deepseek (DeepSeek-MoE).
  return {32, 4096, 32, 0, 0, 11008, 32000, 2048, "silu", 1e-6, 10000.0, false};
}

// Every layer's attention span from `layer_types` ("sliding_attention" / "full_attention"), when the config has it.
Status ApplyLayerTypes(const Reader& r, int64_t window, HfConfig& c) {
  LMKIT_READ(auto types, r.StrList("layer_types"));
  if (types.empty()) return Status::Ok();
  if (static_cast<int64_t>(types.size()) != c.layers)
    return r.Err("field 'layer_types' has " + std::to_string(types.size()) + " entries for " +
                 std::to_string(c.layers) + " layers");
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] != "sliding_attention" && types[i] != "full_attention")
      return r.Err("field 'layer_types' holds '" + types[i] + "' (known: sliding_attention, full_attention)");
    c.window[i] = types[i] == "sliding_attention" ? window : 0;
  }
  return Status::Ok();
}

// One RoPE dict (or none) completed as transformers' standardize_rope_params does: rope_type (else "type", else
// "default"), rope_theta and partial_rotary_factor (else the top-level values), original_max_position_embeddings.
Result<RopeSpec> RopeFrom(const Reader& r, const Json* dict, const std::string& name, double theta, double partial,
                          int64_t top_original, int64_t max_positions) {
  RopeSpec s;
  s.theta = theta;
  s.partial = partial;
  if (dict != nullptr) {
    if (!dict->is_object()) return r.Err("field '" + name + "' is not an object");
    s.params = *dict;
  }
  const Json& p = s.params;
  for (const char* k : {"type", "rope_type"}) {
    if (!p.contains(k) || p[k].is_null()) continue;
    if (!p[k].is_string()) return r.Err("field '" + name + "." + k + "' is not a string");
    s.type = p[k].get<std::string>();
  }
  auto real = [&](const char* k, double* out) -> Status {
    if (!p.contains(k) || p[k].is_null()) return Status::Ok();
    if (!p[k].is_number() || !(p[k].get<double>() > 0) || !std::isfinite(p[k].get<double>()))
      return r.Err("field '" + name + "." + k + "' must be a positive number");
    *out = p[k].get<double>();
    return Status::Ok();
  };
  LMKIT_RETURN_IF_ERROR(real("rope_theta", &s.theta));
  LMKIT_RETURN_IF_ERROR(real("partial_rotary_factor", &s.partial));
  double original = 0;
  LMKIT_RETURN_IF_ERROR(real("original_max_position_embeddings", &original));
  s.original_max = top_original > 0 ? top_original : original > 0 ? static_cast<int64_t>(original) : max_positions;
  return s;
}

// `rope_parameters` / `rope_scaling`, flat or (gemma3) nested by layer type: full_attention for global layers,
// sliding_attention for local ones (the older gemma3 configs: rope_scaling for global, rope_local_base_freq local).
Status ParseRope(const Reader& r, const std::string& t, HfConfig& c) {
  LMKIT_READ(double partial, r.Real("partial_rotary_factor", 1.0));
  // Phi3Config always has the attribute (4096); elsewhere only a config.json that writes it.
  LMKIT_READ(int64_t top_original, r.Opt({"original_max_position_embeddings"}, t == "phi3" ? 4096 : 0, kMaxPositions));
  const char* key = r.Has("rope_scaling") ? "rope_scaling" : r.Has("rope_parameters") ? "rope_parameters" : nullptr;
  const Json* dict = key ? &r.At(key) : nullptr;
  const bool nested =
      dict && dict->is_object() && (dict->contains("full_attention") || dict->contains("sliding_attention"));
  if (!nested) {
    LMKIT_READ(c.rope,
               RopeFrom(r, dict, key ? key : "rope_parameters", c.rope_theta, partial, top_original, c.max_positions));
    c.rope_local = c.rope;
  } else {
    auto sub = [&](const char* k) -> const Json* {
      return dict->contains(k) && !(*dict)[k].is_null() ? &(*dict)[k] : nullptr;
    };
    LMKIT_READ(c.rope, RopeFrom(r, sub("full_attention"), std::string(key) + ".full_attention", c.rope_theta, partial,
                                top_original, c.max_positions));
    LMKIT_READ(c.rope_local, RopeFrom(r, sub("sliding_attention"), std::string(key) + ".sliding_attention",
                                      c.rope_theta, partial, top_original, c.max_positions));
  }
  if (t == "gemma3_text") {
    // Gemma3TextConfig: the local layers' base is rope_local_base_freq (10000) unless their dict gives one, and they
    // never take the global rope_scaling.
    LMKIT_READ(double local, r.Real("rope_local_base_freq", 10000.0));
    if (!nested) c.rope_local = RopeSpec{};
    if (!c.rope_local.params.contains("rope_theta")) c.rope_local.theta = local;
  }
  c.rope_theta = c.rope.theta;
  c.rope_scaling = c.rope.type == "default" ? "" : c.rope.type;
  return Status::Ok();
}

int64_t TokenId(const Json& j, const char* key) {
  if (!j.contains(key)) return -1;
  const Json& v = j[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_array() && !v.empty() && v[0].is_number_integer()) return v[0].get<int64_t>();  // Llama 3 lists several
  return -1;
}

// head_dim: the config's, else the class default (gemma: 256, qwen3: 128), else hidden / heads, which must divide.
Status HeadDim(const Reader& r, int64_t class_default, const char* heads_key, const char* hidden_key, HfConfig& c) {
  if (r.Has("head_dim")) {
    LMKIT_READ(c.head_dim, r.Dim({"head_dim"}, class_default, kMaxWidth));
    return Status::Ok();
  }
  if (class_default > 0) {
    c.head_dim = class_default;
    return Status::Ok();
  }
  if (c.hidden % c.heads != 0)
    return r.Err("field '" + std::string(heads_key) + "' (" + std::to_string(c.heads) + ") does not divide '" +
                 hidden_key + "' (" + std::to_string(c.hidden) + ") and there is no 'head_dim'");
  c.head_dim = c.hidden / c.heads;
  return Status::Ok();
}

Status ParseGpt2(const Reader& r, HfConfig& c) {
  LMKIT_READ(c.layers, r.Dim({"n_layer", "num_hidden_layers"}, 12, kMaxCount));
  LMKIT_READ(c.hidden, r.Dim({"n_embd", "hidden_size"}, 768, kMaxWidth));
  LMKIT_READ(c.heads, r.Dim({"n_head", "num_attention_heads"}, 12, kMaxCount));
  LMKIT_READ(c.vocab, r.Dim({"vocab_size"}, 50257, kMaxVocab));
  // nanoGPT's GPTConfig calls the position table block_size.
  LMKIT_READ(c.learned_positions, r.Opt({"block_size", "n_positions"}, 1024, kMaxVocab));
  c.max_positions = c.learned_positions;
  LMKIT_READ(c.intermediate, r.Opt({"n_inner"}, 4 * c.hidden, kMaxWidth));
  c.kv_heads = c.heads;
  LMKIT_RETURN_IF_ERROR(HeadDim(r, 0, "n_head", "n_embd", c));
  c.gated_mlp = false;
  c.layer_norm = true;
  LMKIT_READ(c.hidden_act, r.Str({"activation_function"}, "gelu_new"));
  LMKIT_READ(c.norm_eps, r.Real("layer_norm_epsilon", 1e-5));
  // nanoGPT's `bias` flag (False = no biases in linears or LayerNorms); HF GPT-2 always has them.
  LMKIT_READ(bool bias, r.Flag("bias", true));
  c.norm_bias = c.qkv_bias = c.out_bias = c.mlp_bias = bias;
  LMKIT_READ(c.tie_word_embeddings, r.Flag("tie_word_embeddings", true));
  if (!bias) c.notes.push_back("no biases (nanoGPT bias=False)");
  return Status::Ok();
}

Status ParseGptNeox(const Reader& r, HfConfig& c) {
  LMKIT_READ(c.layers, r.Dim({"num_hidden_layers"}, 44, kMaxCount));
  LMKIT_READ(c.hidden, r.Dim({"hidden_size"}, 6144, kMaxWidth));
  LMKIT_READ(c.heads, r.Dim({"num_attention_heads"}, 64, kMaxCount));
  LMKIT_READ(c.intermediate, r.Dim({"intermediate_size"}, 24576, kMaxWidth));
  LMKIT_READ(c.vocab, r.Dim({"vocab_size"}, 50432, kMaxVocab));
  LMKIT_READ(c.max_positions, r.Opt({"max_position_embeddings"}, 2048, kMaxPositions));
  c.kv_heads = c.heads;
  LMKIT_RETURN_IF_ERROR(HeadDim(r, 0, "num_attention_heads", "hidden_size", c));
  c.gated_mlp = false;
  c.layer_norm = c.norm_bias = true;
  LMKIT_READ(c.hidden_act, r.Str({"hidden_act"}, "gelu"));
  LMKIT_READ(c.norm_eps, r.Real("layer_norm_eps", 1e-5));
  LMKIT_READ(c.rope_theta, r.Real("rotary_emb_base", 10000.0));
  LMKIT_READ(c.qkv_bias, r.Flag("attention_bias", true));
  c.out_bias = c.qkv_bias;
  c.mlp_bias = true;  // dense_h_to_4h / dense_4h_to_h always carry biases
  LMKIT_READ(c.tie_word_embeddings, r.Flag("tie_word_embeddings", false));
  LMKIT_READ(c.parallel_block, r.Flag("use_parallel_residual", true));
  return Status::Ok();
}

Status ParseFalcon(const Reader& r, HfConfig& c) {
  LMKIT_READ(c.layers, r.Dim({"num_hidden_layers", "n_layer"}, 32, kMaxCount));
  LMKIT_READ(c.hidden, r.Dim({"hidden_size", "n_embed"}, 4544, kMaxWidth));
  LMKIT_READ(c.heads, r.Dim({"num_attention_heads", "n_head"}, 71, kMaxCount));
  LMKIT_READ(c.vocab, r.Dim({"vocab_size"}, 65024, kMaxVocab));
  LMKIT_READ(c.max_positions, r.Opt({"max_position_embeddings"}, 2048, kMaxPositions));
  LMKIT_READ(bool new_arch, r.Flag("new_decoder_architecture", false));
  LMKIT_READ(bool multi_query, r.Flag("multi_query", true));
  LMKIT_READ(c.parallel_block, r.Flag("parallel_attn", true));
  LMKIT_READ(bool bias, r.Flag("bias", false));
  LMKIT_READ(bool alibi, r.Flag("alibi", false));
  // FalconAttention: the new decoder architecture has num_kv_heads, else multi-query (one) or multi-head.
  if (new_arch) {
    LMKIT_READ(c.kv_heads, r.Opt({"num_kv_heads", "n_head_kv"}, c.heads, kMaxCount));
  } else {
    c.kv_heads = multi_query ? 1 : c.heads;
  }
  LMKIT_RETURN_IF_ERROR(HeadDim(r, 0, "num_attention_heads", "hidden_size", c));
  LMKIT_READ(c.intermediate, r.Opt({"ffn_hidden_size"}, 4 * c.hidden, kMaxWidth));
  // FalconDecoderLayer: ln_attn + ln_mlp (new architecture with num_ln_in_parallel_attn 2, its default there), one
  // input_layernorm shared by a parallel block, or input + post-attention norms.
  if (new_arch) {
    LMKIT_READ(int64_t lns, r.Opt({"num_ln_in_parallel_attn"}, 2, 2));
    c.norms_per_layer = lns == 2 ? 2 : 1;
  } else {
    c.norms_per_layer = c.parallel_block ? 1 : 2;
  }
  c.gated_mlp = false;
  c.layer_norm = c.norm_bias = true;
  c.qkv_bias = c.out_bias = c.mlp_bias = bias;
  LMKIT_READ(c.hidden_act, r.Str({"activation"}, "gelu"));
  LMKIT_READ(c.norm_eps, r.Real("layer_norm_epsilon", 1e-5));
  LMKIT_READ(c.rope_theta, r.Real("rope_theta", 10000.0));
  LMKIT_READ(c.tie_word_embeddings, r.Flag("tie_word_embeddings", true));
  if (alibi) c.notes.push_back("ALiBi position biases (no rotary embedding)");
  return Status::Ok();
}

// The fields every Llama-like family shares, with `t`'s class defaults.
Status ParseLlamaLike(const Reader& r, const std::string& t, HfConfig& c) {
  const Defaults d = DefaultsOf(t);
  LMKIT_READ(c.layers, r.Dim({"num_hidden_layers"}, d.layers, kMaxCount));
  LMKIT_READ(c.hidden, r.Dim({"hidden_size"}, d.hidden, kMaxWidth));
  LMKIT_READ(c.heads, r.Dim({"num_attention_heads"}, d.heads, kMaxCount));
  if (r.Has("num_key_value_heads")) {
    LMKIT_READ(c.kv_heads, r.Dim({"num_key_value_heads"}, d.kv_heads, kMaxCount));
  } else {
    c.kv_heads = d.kv_heads > 0 ? d.kv_heads : c.heads;
    c.kv_heads_default = true;
  }
  LMKIT_READ(c.vocab, r.Dim({"vocab_size"}, d.vocab, kMaxVocab));
  LMKIT_READ(c.max_positions, r.Opt({"max_position_embeddings"}, d.max_positions, kMaxPositions));
  LMKIT_RETURN_IF_ERROR(HeadDim(r, d.head_dim, "num_attention_heads", "hidden_size", c));
  LMKIT_READ(c.intermediate, r.Dim({"intermediate_size"}, d.intermediate, kMaxWidth));
  LMKIT_READ(c.hidden_act, r.Str({"hidden_act", "hidden_activation"}, d.act));
  LMKIT_READ(c.norm_eps, r.Real("rms_norm_eps", d.eps));
  LMKIT_READ(c.rope_theta, r.Real("rope_theta", d.theta));
  LMKIT_READ(c.tie_word_embeddings, r.Flag("tie_word_embeddings", d.tie));
  LMKIT_READ(c.qkv_bias, r.Flag("attention_bias", false));
  c.out_bias = c.qkv_bias;
  LMKIT_READ(c.mlp_bias, r.Flag("mlp_bias", false));
  c.gated_mlp = true;
  return Status::Ok();
}

Status ParseQwen(const Reader& r, const std::string& t, HfConfig& c) {
  // Qwen2's q/k/v projections always carry biases (in code, not in config); o_proj does not. Qwen3 has none but
  // normalises q and k per head.
  if (t == "qwen2" || t == "qwen2_moe") {
    c.qkv_bias = true;
    c.out_bias = false;
  } else {
    c.qk_norm = QkNorm::kPerHead;
  }
  LMKIT_READ(bool use_window, r.Flag("use_sliding_window", false));
  if (use_window) {
    // transformers: layers from max_window_layers on use the window.
    LMKIT_READ(int64_t w, r.OptNone("sliding_window", 4096, kMaxPositions));
    LMKIT_READ(int64_t from, r.Opt({"max_window_layers"}, 28, kMaxCount));
    for (int64_t i = from; i < c.layers; ++i) c.window[static_cast<size_t>(i)] = w;
    LMKIT_RETURN_IF_ERROR(ApplyLayerTypes(r, w, c));
  }
  if (t == "qwen2_moe" || t == "qwen3_moe") {
    const bool q2 = t == "qwen2_moe";
    // transformers 5 writes Qwen3-MoE's expert count as num_local_experts; earlier versions as num_experts.
    LMKIT_READ(c.moe_spec.routed_experts, r.Dim({"num_experts", "num_local_experts"}, q2 ? 60 : 128, kMaxCount));
    LMKIT_READ(c.moe_spec.top_k, r.Dim({"num_experts_per_tok"}, q2 ? 4 : 8, kMaxCount));
    LMKIT_READ(c.moe_spec.expert_d_ff, r.Dim({"moe_intermediate_size"}, q2 ? 1408 : 768, kMaxWidth));
    if (q2) {
      LMKIT_READ(c.moe_spec.shared_d_ff, r.Opt({"shared_expert_intermediate_size"}, 5632, kMaxWidth));
      c.moe_spec.shared_gate = c.moe_spec.shared_d_ff > 0;
    }
    LMKIT_READ(int64_t step, r.Opt({"decoder_sparse_step"}, 1, kMaxCount));
    if (step <= 0) return r.Err("field 'decoder_sparse_step' must be positive");
    LMKIT_READ(auto only_mlp, r.IntList("mlp_only_layers"));
    std::set<int64_t> dense(only_mlp.begin(), only_mlp.end());
    for (int64_t i = 0; i < c.layers; ++i) c.moe[static_cast<size_t>(i)] = !dense.count(i) && (i + 1) % step == 0;
  }
  return Status::Ok();
}

Status ParseDeepSeek(const Reader& r, const std::string& t, HfConfig& c) {
  LMKIT_READ(c.moe_spec.routed_experts, r.Opt({"n_routed_experts"}, 0, kMaxCount));
  if (c.moe_spec.routed_experts > 0) {
    LMKIT_READ(c.moe_spec.top_k, r.Dim({"num_experts_per_tok"}, 8, kMaxCount));
    LMKIT_READ(c.moe_spec.expert_d_ff, r.Dim({"moe_intermediate_size"}, 2048, kMaxWidth));
    LMKIT_READ(int64_t shared, r.Opt({"n_shared_experts"}, 0, kMaxCount));
    c.moe_spec.shared_d_ff = shared * c.moe_spec.expert_d_ff;
    LMKIT_READ(int64_t first_dense, r.Opt({"first_k_dense_replace"}, 0, kMaxCount));
    LMKIT_READ(int64_t freq, r.Opt({"moe_layer_freq"}, 1, kMaxCount));
    if (freq <= 0) return r.Err("field 'moe_layer_freq' must be positive");
    for (int64_t i = 0; i < c.layers; ++i) c.moe[static_cast<size_t>(i)] = i >= first_dense && i % freq == 0;
    LMKIT_READ(std::string topk_method, r.Str({"topk_method"}, ""));
    // DeepseekV3's router always holds e_score_correction_bias (transformers 5 no longer writes topk_method).
    c.moe_spec.router_bias = t == "deepseek_v3" || topk_method == "noaux_tc";
  }
  if (t == "deepseek") return Status::Ok();
  c.mla = true;
  MlaSpec& a = c.mla_spec;
  LMKIT_READ(a.q_lora_rank, r.Opt({"q_lora_rank"}, 0, kMaxWidth));
  LMKIT_READ(a.kv_lora_rank, r.Dim({"kv_lora_rank"}, 512, kMaxWidth));
  LMKIT_READ(a.qk_nope_head_dim, r.Dim({"qk_nope_head_dim"}, 128, kMaxWidth));
  LMKIT_READ(a.qk_rope_head_dim, r.Dim({"qk_rope_head_dim"}, 64, kMaxWidth));
  LMKIT_READ(a.v_head_dim, r.Dim({"v_head_dim"}, 128, kMaxWidth));
  c.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  LMKIT_READ(int64_t mtp, r.Opt({"num_nextn_predict_layers"}, 0, kMaxCount));
  if (mtp > 0) c.notes.push_back("multi-token-prediction layer(s) not counted (" + std::to_string(mtp) + ")");
  if (c.qkv_bias) c.notes.push_back("attention_bias ignored for MLA");
  c.qkv_bias = c.out_bias = false;
  return Status::Ok();
}

// Llama4TextConfig: the layers in moe_layers (else every interleave_moe_layer_step-th, the first at step − 1) route
// each token to num_experts_per_tok of num_local_experts experts of width intermediate_size, beside one always-on
// shared expert of that width; the other layers are dense MLPs of width intermediate_size_mlp. Its q/k norm is an L2
// norm without weights, and chunked attention and NoPE layers hold no parameters either.
Status ParseLlama4(const Reader& r, HfConfig& c) {
  LMKIT_READ(c.moe_spec.routed_experts, r.Dim({"num_local_experts"}, 16, kMaxCount));
  LMKIT_READ(c.moe_spec.top_k, r.Dim({"num_experts_per_tok"}, 1, kMaxCount));
  c.moe_spec.expert_d_ff = c.intermediate;
  c.moe_spec.shared_d_ff = c.intermediate;
  LMKIT_READ(c.intermediate, r.Opt({"intermediate_size_mlp"}, 16384, kMaxWidth));
  if (r.Has("moe_layers")) {
    LMKIT_READ(auto listed, r.IntList("moe_layers"));
    for (int64_t i : listed) {
      if (i < 0 || i >= c.layers)
        return r.Err("field 'moe_layers' holds " + std::to_string(i) + ", outside the " + std::to_string(c.layers) +
                     " layers");
      c.moe[static_cast<size_t>(i)] = true;
    }
  } else {
    LMKIT_READ(int64_t step, r.Opt({"interleave_moe_layer_step"}, 1, kMaxCount));
    if (step <= 0) return r.Err("field 'interleave_moe_layer_step' must be positive");
    for (int64_t i = step - 1; i < c.layers; i += step) c.moe[static_cast<size_t>(i)] = true;
  }
  LMKIT_READ(int64_t chunk, r.OptNone("attention_chunk_size", 8192, kMaxPositions));
  LMKIT_READ(auto rope_layers, r.IntList("no_rope_layers"));
  LMKIT_READ(int64_t interval, r.Opt({"no_rope_layer_interval"}, 4, kMaxCount));
  int64_t chunked = 0;
  for (int64_t i = 0; i < c.layers; ++i) {
    const bool rope = rope_layers.empty()
                          ? interval <= 0 || (i + 1) % interval != 0
                          : i < static_cast<int64_t>(rope_layers.size()) && rope_layers[static_cast<size_t>(i)] != 0;
    chunked += rope ? 1 : 0;
  }
  if (chunk > 0 && chunked > 0)
    c.notes.push_back("chunked attention (" + std::to_string(chunk) + "-token chunks) on " + std::to_string(chunked) +
                      " of " + std::to_string(c.layers) + " layers counted as full attention (FLOPs, KV cache)");
  return Status::Ok();
}

// GptOssConfig: every layer is MoE (num_local_experts experts of width intermediate_size, top num_experts_per_tok),
// with biases on the router, on the experts' fused gate_up and down projections and (attention_bias, default true) on
// q/k/v/o; one learned sink logit per head; sliding_window on the layers layer_types names (by default the even ones).
Status ParseGptOss(const Reader& r, HfConfig& c) {
  LMKIT_READ(c.moe_spec.routed_experts, r.Dim({"num_local_experts"}, 128, kMaxCount));
  LMKIT_READ(c.moe_spec.top_k, r.Dim({"num_experts_per_tok", "experts_per_token"}, 4, kMaxCount));
  c.moe_spec.expert_d_ff = c.intermediate;
  c.moe_spec.router_bias = true;
  std::fill(c.moe.begin(), c.moe.end(), true);
  LMKIT_READ(c.qkv_bias, r.Flag("attention_bias", true));
  c.out_bias = c.qkv_bias;
  c.mlp_bias = true;
  c.attn_sinks = true;
  LMKIT_READ(int64_t w, r.OptNone("sliding_window", 128, kMaxPositions));
  for (int64_t i = 0; i < c.layers; i += 2) c.window[static_cast<size_t>(i)] = w;
  LMKIT_RETURN_IF_ERROR(ApplyLayerTypes(r, w, c));
  c.notes.push_back("clamped SwiGLU and attention sinks: elementwise, not counted in FLOPs");
  return Status::Ok();
}

Status ParseGemma(const Reader& r, const std::string& t, HfConfig& c) {
  c.norms_per_layer = 4;  // input, post-attention, pre-feedforward, post-feedforward
  LMKIT_READ(c.query_pre_attn_scalar, r.Real("query_pre_attn_scalar", 256.0));
  LMKIT_READ(int64_t w, r.OptNone("sliding_window", 4096, kMaxPositions));
  if (t == "gemma2") {
    LMKIT_READ(c.attn_logit_softcap, r.RealNone("attn_logit_softcapping", 50.0));
    LMKIT_READ(c.final_logit_softcap, r.RealNone("final_logit_softcapping", 30.0));
    for (int64_t i = 0; i < c.layers; i += 2) c.window[static_cast<size_t>(i)] = w;  // even layers are local
  } else {
    c.qk_norm = QkNorm::kPerHead;
    LMKIT_READ(c.attn_logit_softcap, r.RealNone("attn_logit_softcapping", 0.0));
    LMKIT_READ(c.final_logit_softcap, r.RealNone("final_logit_softcapping", 0.0));
    LMKIT_READ(int64_t pattern, r.Opt({"sliding_window_pattern"}, 6, kMaxCount));
    for (int64_t i = 0; i < c.layers; ++i)
      c.window[static_cast<size_t>(i)] = pattern > 0 && (i + 1) % pattern == 0 ? 0 : w;
  }
  LMKIT_RETURN_IF_ERROR(ApplyLayerTypes(r, w, c));
  if (c.attn_logit_softcap > 0)
    c.notes.push_back("attention logits soft-capped (tanh, cap " + std::to_string(std::lround(c.attn_logit_softcap)) +
                      "): elementwise, not counted in FLOPs");
  if (c.final_logit_softcap > 0)
    c.notes.push_back("final logits soft-capped (tanh, cap " + std::to_string(std::lround(c.final_logit_softcap)) +
                      "): elementwise, not counted in FLOPs");
  return Status::Ok();
}

Status ParseFamily(const Reader& r, const std::string& t, HfConfig& c) {
  if (t == "gpt2") {
    LMKIT_RETURN_IF_ERROR(ParseGpt2(r, c));
  } else if (t == "gpt_neox") {
    LMKIT_RETURN_IF_ERROR(ParseGptNeox(r, c));
  } else if (t == "falcon") {
    LMKIT_RETURN_IF_ERROR(ParseFalcon(r, c));
  } else {
    LMKIT_RETURN_IF_ERROR(ParseLlamaLike(r, t, c));
  }
  // Per-layer tables are sized by the (bounded) layer count read above.
  c.window.assign(static_cast<size_t>(c.layers), 0);
  c.moe.assign(static_cast<size_t>(c.layers), false);

  if (t == "mistral" || t == "mixtral" || t == "phi3") {
    LMKIT_READ(int64_t w, r.OptNone("sliding_window", t == "mistral" ? 4096 : 0, kMaxPositions));
    std::fill(c.window.begin(), c.window.end(), w);
  }
  if (t == "mixtral") {
    LMKIT_READ(c.moe_spec.routed_experts, r.Dim({"num_local_experts"}, 8, kMaxCount));
    LMKIT_READ(c.moe_spec.top_k, r.Dim({"num_experts_per_tok"}, 2, kMaxCount));
    c.moe_spec.expert_d_ff = c.intermediate;
    std::fill(c.moe.begin(), c.moe.end(), true);
  }
  if (t == "qwen2" || t == "qwen3" || t == "qwen2_moe" || t == "qwen3_moe") LMKIT_RETURN_IF_ERROR(ParseQwen(r, t, c));
  if (t == "deepseek" || t == "deepseek_v2" || t == "deepseek_v3") LMKIT_RETURN_IF_ERROR(ParseDeepSeek(r, t, c));
  if (t == "gemma2" || t == "gemma3_text") LMKIT_RETURN_IF_ERROR(ParseGemma(r, t, c));
  if (t == "llama4_text") LMKIT_RETURN_IF_ERROR(ParseLlama4(r, c));
  if (t == "gpt_oss") LMKIT_RETURN_IF_ERROR(ParseGptOss(r, c));
  if (t == "olmo2") c.qk_norm = QkNorm::kFullWidth;  // post-norm layers: post-attention and post-feedforward norms
  LMKIT_RETURN_IF_ERROR(ParseRope(r, t, c));

  // Checked once every key is read, so that a missing key is named first. A class default that does not fit these
  // heads (MistralConfig's 8 KV heads under 4 heads) is the config's omission, which the message says rather than
  // blaming a key the file does not have.
  if (c.heads % c.kv_heads != 0 && c.kv_heads_default)
    return r.Err("the config has no 'num_key_value_heads' and " + t + "'s default (" + std::to_string(c.kv_heads) +
                 ") does not divide the attention heads (" + std::to_string(c.heads) + ")");
  if (c.heads % c.kv_heads != 0)
    return r.Err("field 'num_key_value_heads' (" + std::to_string(c.kv_heads) +
                 ") does not divide the attention heads (" + std::to_string(c.heads) + ")");
  if (c.moe_spec.routed_experts > 0 && c.moe_spec.top_k > c.moe_spec.routed_experts)
    return r.Err("field 'num_experts_per_tok' (" + std::to_string(c.moe_spec.top_k) +
                 ") exceeds the number of experts (" + std::to_string(c.moe_spec.routed_experts) + ")");
  return Status::Ok();
}

// The vision tower and projector of a multimodal config, from its vision_config (a diff against the vision class's
// defaults). gemma3: SiglipVisionModel (conv patch embedding with bias, a position table, LayerNorm encoder layers
// with biased attention and GELU MLP, a post LayerNorm, the attention-pooling head when vision_use_head) and
// Gemma3MultiModalProjector (a vision x text-hidden matrix and an RMSNorm). llama4: Llama4VisionModel (an unbiased
// patch Linear, a class embedding, a position table over the patches plus one, pre/post LayerNorms, the same encoder
// layers, a two-matrix pixel-shuffle adapter) and Llama4MultiModalProjector (vision_output_dim x text hidden).
Result<int64_t> VisionParams(const Json& config, const std::string& subject, bool llama4, int64_t text_hidden) {
  const Json empty = Json::object();
  const Json& v =
      config.contains("vision_config") && config["vision_config"].is_object() ? config["vision_config"] : empty;
  Reader r(v, subject, true);
  // Bounds that keep channels·patch²·hidden and patches·hidden exact.
  constexpr int64_t kMaxImage = int64_t{1} << 16;
  LMKIT_READ(int64_t h, r.Dim({"hidden_size"}, 768, kMaxWidth));
  LMKIT_READ(int64_t f, r.Dim({"intermediate_size"}, llama4 ? 5632 : 3072, kMaxWidth));
  LMKIT_READ(int64_t layers, r.Dim({"num_hidden_layers"}, llama4 ? 34 : 12, kMaxCount));
  LMKIT_READ(int64_t channels, r.Dim({"num_channels"}, 3, 64));
  LMKIT_READ(int64_t image, r.Dim({"image_size"}, llama4 ? 448 : 224, kMaxImage));
  LMKIT_READ(int64_t patch, r.Dim({"patch_size"}, llama4 ? 14 : 16, int64_t{1} << 12));
  const int64_t patches = (image / patch) * (image / patch);
  const int64_t per_layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h;
  int64_t p = layers * per_layer;
  if (llama4) {
    LMKIT_READ(int64_t proj_in, r.Dim({"projector_input_dim"}, 4096, kMaxWidth));
    LMKIT_READ(int64_t proj_out, r.Dim({"projector_output_dim"}, 4096, kMaxWidth));
    LMKIT_READ(int64_t out_dim, r.Dim({"vision_output_dim"}, 7680, kMaxWidth));
    p += channels * patch * patch * h + h /* class embedding */ + (patches + 1) * h + 2 * 2 * h;
    p += f * proj_in + proj_out * proj_out;  // pixel-shuffle adapter fc1, fc2
    p += out_dim * text_hidden;              // multi_modal_projector
  } else {
    LMKIT_READ(bool head, r.Flag("vision_use_head", true));
    p += channels * patch * patch * h + h + patches * h + 2 * h;
    if (head) p += h /* probe */ + 3 * h * h + 3 * h + h * h + h /* attention */ + 2 * h + (h * f + f) + (f * h + h);
    p += h * text_hidden + h;  // mm_input_projection_weight, mm_soft_emb_norm
  }
  return p;
}

}  // namespace

const std::vector<std::string>& HfModelTypes() {
  static const std::vector<std::string> k = {
      "gpt2",      "gpt_neox", "falcon",      "llama",       "mistral", "mixtral",     "qwen2",
      "qwen2_moe", "qwen3",    "qwen3_moe",   "gemma2",      "gemma3",  "gemma3_text", "phi3",
      "olmo2",     "deepseek", "deepseek_v2", "deepseek_v3", "llama4",  "llama4_text", "gpt_oss"};
  return k;
}

Result<HfConfig> ParseHfConfig(const Json& config, const std::string& subject) {
  if (!config.is_object()) return Status::InvalidInput(subject, "config is not a JSON object");
  Reader top(config, subject, false);
  LMKIT_READ(std::string type, top.Str({"model_type"}, ""));
  if (type.empty()) return top.Err("missing field 'model_type'");
  const auto& known = HfModelTypes();
  if (std::find(known.begin(), known.end(), type) == known.end()) {
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    return Status::Unsupported(subject, "model_type '" + type + "' is not supported (known: " + list + ")");
  }
  HfConfig c;
  c.subject = subject;
  c.model_type = type;
  c.bos_token = TokenId(config, "bos_token_id");
  c.eos_token = TokenId(config, "eos_token_id");
  if (type == "gemma3" || type == "llama4") {
    // Gemma3ForConditionalGeneration / Llama4ForConditionalGeneration: the language model is text_config (a diff
    // against the text class's defaults); the vision tower and the projector are counted apart (vision_params).
    const Json empty = Json::object();
    const Json& text =
        config.contains("text_config") && config["text_config"].is_object() ? config["text_config"] : empty;
    Reader r(text, subject, true);
    const bool llama4 = type == "llama4";
    LMKIT_RETURN_IF_ERROR(ParseFamily(r, llama4 ? "llama4_text" : "gemma3_text", c));
    if (llama4) {
      // Llama4Config keeps tie_word_embeddings at the top level.
      LMKIT_READ(c.tie_word_embeddings, top.Flag("tie_word_embeddings", c.tie_word_embeddings));
    }
    LMKIT_READ(c.vision_params, VisionParams(config, subject, llama4, c.hidden));
    c.notes.push_back("vision tower and multimodal projector not counted (language model only)");
  } else {
    LMKIT_RETURN_IF_ERROR(ParseFamily(top, type, c));
  }
  return c;
}

Result<HfConfig> ParseHfConfigText(std::string_view text, const std::string& subject) {
  LMKIT_ASSIGN_OR_RETURN(Json j, ParseJson(text, subject));
  return ParseHfConfig(j, subject);
}

}  // namespace lmkit::io
