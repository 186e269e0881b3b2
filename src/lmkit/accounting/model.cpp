#include "lmkit/accounting/model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

#include "lmkit/common/data_dir.h"
#include "lmkit/common/file_reader.h"
#include "lmkit/common/mapped_file.h"
#include "lmkit/common/nearest_name.h"

namespace lmkit::accounting {
namespace {

// Reads optional / required integer fields, with errors naming the field and the file.
class Fields {
 public:
  Fields(const Json& j, std::string subject) : j_(j), subject_(std::move(subject)) {}

  bool Has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }

  Result<int64_t> Int(const char* key) const {
    if (!Has(key)) return Status::InvalidInput(subject_, "missing field '" + std::string(key) + "'");
    return IntValue(key);
  }
  Result<int64_t> IntOr(const char* key, int64_t fallback) const {
    if (!Has(key)) return fallback;
    return IntValue(key);
  }
  // A present field of the wrong type is an error, not the fallback: "tie_word_embeddings": "true" used to count an
  // untied head silently (a different parameter total).
  Result<bool> BoolOr(const char* key, bool fallback) const {
    if (!Has(key)) return fallback;
    if (!j_[key].is_boolean())
      return Status::InvalidInput(subject_, "field '" + std::string(key) + "' is not true or false");
    return j_[key].get<bool>();
  }
  Result<std::string> StrOr(const char* key, const std::string& fallback) const {
    if (!Has(key)) return fallback;
    if (!j_[key].is_string()) return Status::InvalidInput(subject_, "field '" + std::string(key) + "' is not a string");
    return j_[key].get<std::string>();
  }
  Result<std::vector<int64_t>> IntList(const char* key) const {
    std::vector<int64_t> out;
    if (!Has(key)) return out;
    if (!j_[key].is_array()) return Status::InvalidInput(subject_, "field '" + std::string(key) + "' is not a list");
    for (const auto& v : j_[key]) {
      if (!v.is_number_integer())
        return Status::InvalidInput(subject_, "field '" + std::string(key) + "' holds a non-integer");
      out.push_back(v.get<int64_t>());
    }
    return out;
  }
  const std::string& subject() const { return subject_; }

 private:
  Result<int64_t> IntValue(const char* key) const {
    const Json& v = j_[key];
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
      // 4096.0 is an integer; 1e300 is not one lmkit can hold (and casting it would be undefined).
      const double d = v.get<double>();
      if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == std::trunc(d))
        return static_cast<int64_t>(d);
    }
    return Status::InvalidInput(subject_, "field '" + std::string(key) + "' is not an integer");
  }
  const Json& j_;
  std::string subject_;
};

#define LMKIT_FIELD(var, expr) LMKIT_ASSIGN_OR_RETURN(var, expr)

// Bounds that keep every later int64/uint64 product exact (counts are checked again where they can still grow).
constexpr int64_t kMaxWidth = int64_t{1} << 22, kMaxCount = int64_t{1} << 14;

Status AtMost(int64_t v, int64_t cap, const char* field, const std::string& subject) {
  if (v > cap)
    return Status::InvalidInput(subject, std::string("field '") + field + "' is implausibly large (" +
                                             std::to_string(v) + " > " + std::to_string(cap) + ")");
  return Status::Ok();
}

// Saturating arithmetic for sizes read from files and flags: an overflow gives INT64_MAX, which ValidateModel rejects
// as implausibly large (signed overflow itself would be undefined behaviour).
int64_t SatMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

const std::vector<std::string>& KnownFamilies() {
  static const std::vector<std::string> k = {"gpt2",     "llama",       "mistral",    "qwen2",
                                             "qwen3",    "mixtral",     "qwen2_moe",  "qwen3_moe",
                                             "deepseek", "deepseek_v2", "deepseek_v3"};
  return k;
}

// Groups per-layer (moe, window) flags into LayerKinds, in first-seen order.
std::vector<LayerKind> GroupLayers(const std::vector<bool>& moe, const std::vector<int64_t>& window) {
  std::vector<LayerKind> kinds;
  for (size_t i = 0; i < moe.size(); ++i) {
    auto it = std::find_if(kinds.begin(), kinds.end(),
                           [&](const LayerKind& k) { return k.moe == moe[i] && k.window == window[i]; });
    if (it == kinds.end()) {
      LayerKind k;
      k.moe = moe[i];
      k.window = window[i];
      k.name = moe[i] ? "moe" : "dense";
      if (window[i] > 0) k.name += "/window";
      kinds.push_back(k);
      it = kinds.end() - 1;
    }
    ++it->count;
  }
  return kinds;
}

Status ParseGpt2(const Fields& f, ModelSpec& m) {
  LMKIT_FIELD(m.layers, f.Int("n_layer"));
  LMKIT_FIELD(m.d_model, f.Int("n_embd"));
  LMKIT_FIELD(m.heads, f.Int("n_head"));
  LMKIT_FIELD(m.vocab, f.Int("vocab_size"));
  LMKIT_FIELD(m.learned_positions, f.IntOr("n_positions", 1024));
  // nanoGPT's GPTConfig calls it block_size.
  if (f.Has("block_size")) {
    LMKIT_FIELD(m.learned_positions, f.Int("block_size"));
  }
  m.max_seq_len = m.learned_positions;
  LMKIT_FIELD(m.d_ff, f.IntOr("n_inner", 4 * m.d_model));
  m.kv_heads = m.heads;
  m.head_dim = m.heads > 0 ? m.d_model / m.heads : 0;
  m.ffn = FfnKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  // nanoGPT's `bias` flag (False = no biases in linears or LayerNorms); HF GPT-2 always has them.
  LMKIT_FIELD(bool bias, f.BoolOr("bias", true));
  m.norm_bias = m.qkv_bias = m.out_bias = m.mlp_bias = bias;
  LMKIT_FIELD(m.tied, f.BoolOr("tie_word_embeddings", true));
  if (!bias) m.notes.push_back("no biases (nanoGPT bias=False)");
  return Status::Ok();
}

// The fields every Llama-like family shares.
Status ParseLlamaLike(const Fields& f, ModelSpec& m) {
  LMKIT_FIELD(m.layers, f.Int("num_hidden_layers"));
  LMKIT_FIELD(m.d_model, f.Int("hidden_size"));
  LMKIT_FIELD(m.heads, f.Int("num_attention_heads"));
  LMKIT_FIELD(m.kv_heads, f.IntOr("num_key_value_heads", m.heads));
  LMKIT_FIELD(m.vocab, f.Int("vocab_size"));
  LMKIT_FIELD(m.max_seq_len, f.IntOr("max_position_embeddings", 0));
  if (f.Has("head_dim")) {
    LMKIT_FIELD(m.head_dim, f.Int("head_dim"));
  } else {
    if (m.heads > 0 && m.d_model % m.heads != 0)
      return Status::InvalidInput(f.subject(), "field 'num_attention_heads' (" + std::to_string(m.heads) +
                                                   ") does not divide 'hidden_size' (" + std::to_string(m.d_model) +
                                                   ") and there is no 'head_dim'");
    m.head_dim = m.heads > 0 ? m.d_model / m.heads : 0;
  }
  m.ffn = FfnKind::kSwiGlu;
  m.norm = NormKind::kRmsNorm;
  LMKIT_FIELD(m.tied, f.BoolOr("tie_word_embeddings", false));
  LMKIT_FIELD(m.qkv_bias, f.BoolOr("attention_bias", false));
  m.out_bias = m.qkv_bias;
  LMKIT_FIELD(m.mlp_bias, f.BoolOr("mlp_bias", false));
  return Status::Ok();
}

Status ParseFamily(const Fields& f, const std::string& family, ModelSpec& m) {
  std::vector<int64_t> window;
  std::vector<bool> moe;
  if (family == "gpt2") {
    LMKIT_RETURN_IF_ERROR(ParseGpt2(f, m));
  } else {
    LMKIT_RETURN_IF_ERROR(ParseLlamaLike(f, m));
    LMKIT_FIELD(m.d_ff, f.Int("intermediate_size"));
  }
  if (m.layers <= 0) return Status::InvalidInput(f.subject(), "field for the layer count must be positive");
  // ValidateModel checks it again; here it must hold before the per-layer tables below are sized by it.
  LMKIT_RETURN_IF_ERROR(AtMost(m.layers, kMaxCount, "layers", f.subject()));
  moe.assign(static_cast<size_t>(m.layers), false);
  window.assign(static_cast<size_t>(m.layers), 0);

  if (family == "mistral" || family == "mixtral") {
    LMKIT_FIELD(int64_t w, f.IntOr("sliding_window", 0));
    std::fill(window.begin(), window.end(), w);
  }
  if (family == "qwen2" || family == "qwen3" || family == "qwen2_moe" || family == "qwen3_moe") {
    // Qwen2's q/k/v projections always carry biases (in code, not in config); o_proj does not. Qwen3 has none.
    if (family == "qwen2" || family == "qwen2_moe") {
      m.qkv_bias = true;
      m.out_bias = false;
    }
    if (family == "qwen3" || family == "qwen3_moe") m.qk_norm = true;
    LMKIT_FIELD(bool use_window, f.BoolOr("use_sliding_window", false));
    if (use_window) {
      // transformers' Qwen2: layers from max_window_layers on use the window.
      LMKIT_FIELD(int64_t w, f.IntOr("sliding_window", 0));
      LMKIT_FIELD(int64_t from, f.IntOr("max_window_layers", 0));
      for (int64_t i = std::max<int64_t>(from, 0); i < m.layers; ++i) window[static_cast<size_t>(i)] = w;
    }
  }
  if (family == "mixtral") {
    LMKIT_FIELD(m.moe.routed_experts, f.Int("num_local_experts"));
    LMKIT_FIELD(m.moe.top_k, f.Int("num_experts_per_tok"));
    m.moe.expert_d_ff = m.d_ff;
    std::fill(moe.begin(), moe.end(), true);
  }
  if (family == "qwen2_moe" || family == "qwen3_moe") {
    LMKIT_FIELD(m.moe.routed_experts, f.Int("num_experts"));
    LMKIT_FIELD(m.moe.top_k, f.Int("num_experts_per_tok"));
    LMKIT_FIELD(m.moe.expert_d_ff, f.Int("moe_intermediate_size"));
    if (family == "qwen2_moe") {
      LMKIT_FIELD(m.moe.shared_d_ff, f.IntOr("shared_expert_intermediate_size", 0));
      m.moe.shared_gate = m.moe.shared_d_ff > 0;
    }
    LMKIT_FIELD(int64_t step, f.IntOr("decoder_sparse_step", 1));
    LMKIT_FIELD(auto only_mlp, f.IntList("mlp_only_layers"));
    if (step <= 0) return Status::InvalidInput(f.subject(), "field 'decoder_sparse_step' must be positive");
    std::set<int64_t> dense_set(only_mlp.begin(), only_mlp.end());
    for (int64_t i = 0; i < m.layers; ++i)
      moe[static_cast<size_t>(i)] = !dense_set.count(i) && m.moe.routed_experts > 0 && (i + 1) % step == 0;
  }
  if (family == "deepseek" || family == "deepseek_v2" || family == "deepseek_v3") {
    LMKIT_FIELD(m.moe.routed_experts, f.IntOr("n_routed_experts", 0));
    if (m.moe.routed_experts > 0) {
      LMKIT_FIELD(m.moe.top_k, f.Int("num_experts_per_tok"));
      LMKIT_FIELD(m.moe.expert_d_ff, f.Int("moe_intermediate_size"));
      LMKIT_FIELD(int64_t shared, f.IntOr("n_shared_experts", 0));
      // Checked here, by its own name: ValidateModel only sees the product shared x moe_intermediate_size.
      if (shared < 0) return Status::InvalidInput(f.subject(), "field 'n_shared_experts' must not be negative");
      m.moe.shared_d_ff = SatMul(shared, m.moe.expert_d_ff);
      LMKIT_FIELD(int64_t first_dense, f.IntOr("first_k_dense_replace", 0));
      LMKIT_FIELD(int64_t freq, f.IntOr("moe_layer_freq", 1));
      if (freq <= 0) return Status::InvalidInput(f.subject(), "field 'moe_layer_freq' must be positive");
      for (int64_t i = 0; i < m.layers; ++i) moe[static_cast<size_t>(i)] = i >= first_dense && i % freq == 0;
      LMKIT_FIELD(std::string topk_method, f.StrOr("topk_method", ""));
      m.moe.router_bias = topk_method == "noaux_tc";
    }
    if (family != "deepseek") {
      m.mla = true;
      LMKIT_FIELD(m.mla_spec.q_lora_rank, f.IntOr("q_lora_rank", 0));
      LMKIT_FIELD(m.mla_spec.kv_lora_rank, f.Int("kv_lora_rank"));
      LMKIT_FIELD(m.mla_spec.qk_nope_head_dim, f.Int("qk_nope_head_dim"));
      LMKIT_FIELD(m.mla_spec.qk_rope_head_dim, f.Int("qk_rope_head_dim"));
      LMKIT_FIELD(m.mla_spec.v_head_dim, f.Int("v_head_dim"));
      m.head_dim = SatAdd(m.mla_spec.qk_nope_head_dim, m.mla_spec.qk_rope_head_dim);
      LMKIT_FIELD(int64_t mtp, f.IntOr("num_nextn_predict_layers", 0));
      if (mtp > 0) m.notes.push_back("multi-token-prediction layer(s) not counted (" + std::to_string(mtp) + ")");
      if (m.qkv_bias) m.notes.push_back("attention_bias ignored for MLA");
      m.qkv_bias = m.out_bias = false;
    }
  }
  m.kinds = GroupLayers(moe, window);
  return Status::Ok();
}

bool FileExists(const std::string& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
}

}  // namespace

int64_t ModelSpec::q_dim() const { return heads * head_dim; }
int64_t ModelSpec::kv_dim() const { return kv_heads * head_dim; }

Result<ModelSpec> ParseModelConfig(const Json& config, const std::string& subject) {
  if (!config.is_object()) return Status::InvalidInput(subject, "config is not a JSON object");
  Fields f(config, subject);
  LMKIT_FIELD(std::string family, f.StrOr("model_type", ""));
  if (family.empty()) return Status::InvalidInput(subject, "missing field 'model_type'");
  const auto& known = KnownFamilies();
  if (std::find(known.begin(), known.end(), family) == known.end()) {
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    return Status::Unsupported(subject, "model_type '" + family + "' is not supported (known: " + list + ")");
  }
  ModelSpec m;
  m.family = family;
  m.source = subject;
  m.name = std::filesystem::path(subject).stem().string();
  if (m.name == "config") m.name = std::filesystem::path(subject).parent_path().filename().string();
  LMKIT_RETURN_IF_ERROR(ParseFamily(f, family, m));
  LMKIT_RETURN_IF_ERROR(ValidateModel(m, subject));
  return m;
}

Result<ModelSpec> LoadModelConfig(const std::string& path) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) file = (std::filesystem::path(path) / "config.json").string();
  LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(file));
  LMKIT_ASSIGN_OR_RETURN(Json j, ParseJson(text, file));
  return ParseModelConfig(j, file);
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  auto dir = FindDataFile("models");
  if (!dir.ok()) return names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(*dir, ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<ModelSpec> LoadPreset(const std::string& name) {
  auto path = FindDataFile("models/" + name + ".json");
  if (!path.ok()) {
    auto names = PresetNames();
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    const std::string near = NearestName(name, names);
    const std::string hint = near.empty() ? "" : "; did you mean '" + near + "'?";
    return Status::NotFound(name, "no such model file or preset" + hint + " (presets: " + list + ")");
  }
  LMKIT_ASSIGN_OR_RETURN(ModelSpec m, LoadModelConfig(*path));
  m.name = name;
  return m;
}

Result<ModelSpec> ResolveModel(const std::string& arg) {
  if (FileExists(arg)) return LoadModelConfig(arg);
  if (arg.find('/') != std::string::npos || (arg.size() > 5 && arg.substr(arg.size() - 5) == ".json"))
    return Status::NotFound(arg, "no such file");
  return LoadPreset(arg);
}

Result<ModelSpec> FromDimensions(const Dimensions& d) {
  // 0 on these flags means "use the default"; a negative value would otherwise fall through to the default too and
  // be accepted silently (--kv-heads -4 planned plain MHA).
  const std::pair<const char*, int64_t> optional_flags[] = {
      {"--kv-heads", d.kv_heads}, {"--head-dim", d.head_dim}, {"--d-ff", d.d_ff},
      {"--experts", d.experts},   {"--top-k", d.top_k},       {"--expert-d-ff", d.expert_d_ff}};
  for (const auto& [flag, v] : optional_flags)
    if (v < 0) return Status::InvalidInput(flag, "must not be negative (got " + std::to_string(v) + ")");
  ModelSpec m;
  m.name = "custom";
  m.source = "explicit dimensions";
  m.family = d.ffn == FfnKind::kGelu ? "gpt2-like" : "llama-like";
  m.layers = d.layers;
  m.d_model = d.d_model;
  m.heads = d.heads;
  m.kv_heads = d.kv_heads > 0 ? d.kv_heads : d.heads;
  if (d.head_dim > 0) {
    m.head_dim = d.head_dim;
  } else {
    if (d.heads > 0 && d.d_model % d.heads != 0)
      return Status::InvalidInput("--heads", "heads (" + std::to_string(d.heads) + ") do not divide d_model (" +
                                                 std::to_string(d.d_model) + ") and there is no --head-dim");
    m.head_dim = d.heads > 0 ? d.d_model / d.heads : 0;
  }
  m.ffn = d.ffn;
  m.norm = d.norm;
  if (d.d_ff > 0) {
    m.d_ff = d.d_ff;
  } else if (d.ffn == FfnKind::kGelu) {
    m.d_ff = SatMul(4, d.d_model);
  } else {
    m.d_ff = (SatAdd(SatMul(8, d.d_model) / 3, 255) / 256) * 256;
  }
  m.vocab = d.vocab;
  m.learned_positions = d.positions;
  m.max_seq_len = d.positions;
  m.tied = d.tied;
  m.norm_bias = d.bias && d.norm == NormKind::kLayerNorm;
  m.qkv_bias = m.out_bias = m.mlp_bias = d.bias;
  if (d.experts > 0) {
    m.moe.routed_experts = d.experts;
    m.moe.top_k = d.top_k > 0 ? d.top_k : 2;
    m.moe.expert_d_ff = d.expert_d_ff > 0 ? d.expert_d_ff : m.d_ff;
  }
  LayerKind k;
  k.count = d.layers;
  k.moe = d.experts > 0;
  k.window = d.window;
  k.name = std::string(k.moe ? "moe" : "dense") + (d.window > 0 ? "/window" : "");
  m.kinds = {k};
  LMKIT_RETURN_IF_ERROR(ValidateModel(m, "explicit dimensions"));
  return m;
}

Status ValidateModel(const ModelSpec& m, const std::string& subject) {
  // at_least(v, 1, ...) for sizes that must exist; at_least(v, 0, ...) for sizes where 0 means "none" (no position
  // table, no shared expert, a plain q_proj ...): a negative one is never meaningful, and the sums in params.cpp would
  // turn it into a negative or silently smaller parameter count.
  auto at_least = [&](int64_t v, int64_t min, const char* field) -> Status {
    if (v >= min) return Status::Ok();
    return Status::InvalidInput(subject, std::string("field '") + field + "' must " +
                                             (min > 0 ? "be positive" : "not be negative") + " (got " +
                                             std::to_string(v) + ")");
  };
  LMKIT_RETURN_IF_ERROR(at_least(m.layers, 1, "layers"));
  LMKIT_RETURN_IF_ERROR(at_least(m.d_model, 1, "hidden size (d_model)"));
  LMKIT_RETURN_IF_ERROR(at_least(m.heads, 1, "attention heads"));
  LMKIT_RETURN_IF_ERROR(at_least(m.kv_heads, 1, "key/value heads"));
  LMKIT_RETURN_IF_ERROR(at_least(m.head_dim, 1, "head_dim"));
  LMKIT_RETURN_IF_ERROR(at_least(m.vocab, 1, "vocab_size"));
  LMKIT_RETURN_IF_ERROR(at_least(m.learned_positions, 0, "n_positions"));
  LMKIT_RETURN_IF_ERROR(at_least(m.max_seq_len, 0, "max_position_embeddings"));
  LMKIT_RETURN_IF_ERROR(at_least(m.d_ff, 0, "intermediate size (d_ff)"));
  LMKIT_RETURN_IF_ERROR(at_least(m.moe.shared_d_ff, 0, "shared expert intermediate size"));
  LMKIT_RETURN_IF_ERROR(at_least(m.mla_spec.q_lora_rank, 0, "q_lora_rank"));
  bool any_dense = false;
  for (const auto& k : m.kinds) any_dense = any_dense || !k.moe;
  if (any_dense) LMKIT_RETURN_IF_ERROR(at_least(m.d_ff, 1, "intermediate size (d_ff)"));
  if (m.heads % m.kv_heads != 0)
    return Status::InvalidInput(subject, "field 'num_key_value_heads' (" + std::to_string(m.kv_heads) +
                                             ") does not divide the attention heads (" + std::to_string(m.heads) + ")");
  if (m.is_moe()) {
    LMKIT_RETURN_IF_ERROR(at_least(m.moe.top_k, 1, "num_experts_per_tok"));
    LMKIT_RETURN_IF_ERROR(at_least(m.moe.expert_d_ff, 1, "expert intermediate size"));
    if (m.moe.top_k > m.moe.routed_experts)
      return Status::InvalidInput(subject, "field 'num_experts_per_tok' (" + std::to_string(m.moe.top_k) +
                                               ") exceeds the number of experts (" +
                                               std::to_string(m.moe.routed_experts) + ")");
  }
  if (m.mla) {
    LMKIT_RETURN_IF_ERROR(at_least(m.mla_spec.kv_lora_rank, 1, "kv_lora_rank"));
    LMKIT_RETURN_IF_ERROR(at_least(m.mla_spec.qk_nope_head_dim, 1, "qk_nope_head_dim"));
    LMKIT_RETURN_IF_ERROR(at_least(m.mla_spec.qk_rope_head_dim, 1, "qk_rope_head_dim"));
    LMKIT_RETURN_IF_ERROR(at_least(m.mla_spec.v_head_dim, 1, "v_head_dim"));
  }
  LMKIT_RETURN_IF_ERROR(AtMost(m.layers, kMaxCount, "layers", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.heads, kMaxCount, "attention heads", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.d_model, kMaxWidth, "hidden size (d_model)", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.head_dim, kMaxWidth, "head_dim", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.d_ff, kMaxWidth, "intermediate size (d_ff)", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.vocab, kMaxWidth * 16, "vocab_size", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.learned_positions, kMaxWidth * 16, "n_positions", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.moe.routed_experts, kMaxCount, "number of experts", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.moe.expert_d_ff, kMaxWidth, "expert intermediate size", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.moe.shared_d_ff, kMaxWidth * 16, "shared expert intermediate size", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.mla_spec.q_lora_rank, kMaxWidth, "q_lora_rank", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.mla_spec.kv_lora_rank, kMaxWidth, "kv_lora_rank", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.mla_spec.qk_nope_head_dim, kMaxWidth, "qk_nope_head_dim", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.mla_spec.qk_rope_head_dim, kMaxWidth, "qk_rope_head_dim", subject));
  LMKIT_RETURN_IF_ERROR(AtMost(m.mla_spec.v_head_dim, kMaxWidth, "v_head_dim", subject));
  // The parameter count itself must fit comfortably in int64 (estimated in double, generously).
  {
    auto D = [](int64_t v) { return static_cast<double>(v); };
    double w =
        std::max({D(m.d_model), D(m.q_dim()),
                  D(m.heads) * D(m.mla_spec.qk_nope_head_dim + m.mla_spec.v_head_dim + m.mla_spec.qk_rope_head_dim),
                  D(m.mla_spec.kv_lora_rank + m.mla_spec.qk_rope_head_dim), D(m.mla_spec.q_lora_rank)});
    double ffn = 3.0 * D(m.d_model) *
                 (D(m.d_ff) + D(m.moe.routed_experts + 1) * D(m.moe.expert_d_ff) + D(m.moe.shared_d_ff) + 1.0);
    double bound = D(m.layers) * (8.0 * w * w + ffn + D(m.moe.routed_experts) * D(m.d_model)) +
                   D(m.vocab + m.learned_positions) * D(m.d_model) * 2.0;
    if (bound > 1e18) return Status::InvalidInput(subject, "the model is implausibly large (over 1e18 parameters)");
  }
  int64_t sum = 0;
  for (const auto& k : m.kinds) {
    if (k.window < 0) return Status::InvalidInput(subject, "field 'sliding_window' must not be negative");
    sum += k.count;
  }
  if (sum != m.layers) return Status::Internal("layer kinds do not add up to the layer count");
  return Status::Ok();
}

std::string DescribeModel(const ModelSpec& m) {
  std::string s = m.family + ": " + std::to_string(m.layers) + " layers, d_model " + std::to_string(m.d_model) + ", " +
                  std::to_string(m.heads) + " heads";
  if (m.kv_heads != m.heads) s += " (" + std::to_string(m.kv_heads) + " kv)";
  s += " x " + std::to_string(m.head_dim);
  if (m.mla) s += " (MLA, kv_lora_rank " + std::to_string(m.mla_spec.kv_lora_rank) + ")";
  s += ", d_ff " + std::to_string(m.d_ff);
  if (m.is_moe())
    s += ", " + std::to_string(m.moe.routed_experts) + " experts top-" + std::to_string(m.moe.top_k) + " x " +
         std::to_string(m.moe.expert_d_ff) +
         (m.moe.shared_d_ff > 0 ? " + shared " + std::to_string(m.moe.shared_d_ff) : "");
  s += ", vocab " + std::to_string(m.vocab);
  s += m.ffn == FfnKind::kSwiGlu ? ", SwiGLU" : ", GELU MLP";
  s += m.norm == NormKind::kRmsNorm ? ", RMSNorm" : ", LayerNorm";
  if (m.tied) s += ", tied head";
  for (const auto& k : m.kinds)
    if (k.window > 0) s += ", window " + std::to_string(k.window) + " on " + std::to_string(k.count) + " layers";
  return s;
}

}  // namespace lmkit::accounting
