#include "lmkit/accounting/model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

#include "lmkit/common/data_dir.h"
#include "lmkit/common/file_reader.h"
#include "lmkit/common/mapped_file.h"
#include "lmkit/common/nearest_name.h"

namespace lmkit::accounting {
namespace {

constexpr EnumName<FfnKind> kFfnNames[] = {{FfnKind::kSwiGlu, "swiglu"}, {FfnKind::kGelu, "gelu"}};
constexpr EnumName<NormKind> kNormNames[] = {{NormKind::kRmsNorm, "rmsnorm"}, {NormKind::kLayerNorm, "layernorm"}};

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

bool FileExists(const std::string& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
}

}  // namespace

int64_t ModelSpec::q_dim() const { return heads * head_dim; }
int64_t ModelSpec::kv_dim() const { return kv_heads * head_dim; }

std::span<const EnumName<FfnKind>> FfnNames() { return kFfnNames; }
std::span<const EnumName<NormKind>> NormNames() { return kNormNames; }

Result<ModelSpec> FromHfConfig(const io::HfConfig& c) {
  ModelSpec m;
  m.family = c.model_type;
  m.source = c.subject;
  m.name = std::filesystem::path(c.subject).stem().string();
  if (m.name == "config") m.name = std::filesystem::path(c.subject).parent_path().filename().string();
  m.layers = c.layers;
  m.d_model = c.hidden;
  m.heads = c.heads;
  m.kv_heads = c.kv_heads;
  m.head_dim = c.head_dim;
  m.d_ff = c.intermediate;
  m.vocab = c.vocab;
  m.learned_positions = c.learned_positions;
  m.max_seq_len = c.max_positions;
  m.ffn = c.gated_mlp ? FfnKind::kSwiGlu : FfnKind::kGelu;
  m.activation = c.hidden_act;
  m.norm = c.layer_norm ? NormKind::kLayerNorm : NormKind::kRmsNorm;
  m.norm_bias = c.norm_bias;
  m.norms_per_layer = c.norms_per_layer;
  m.qkv_bias = c.qkv_bias;
  m.out_bias = c.out_bias;
  m.mlp_bias = c.mlp_bias;
  m.qk_norm = c.qk_norm;
  m.attn_sinks = c.attn_sinks;
  m.vision_params = c.vision_params;
  m.tied = c.tie_word_embeddings;
  m.parallel_block = c.parallel_block;
  m.attn_softcap = c.attn_logit_softcap;
  m.final_softcap = c.final_logit_softcap;
  m.mla = c.mla;
  m.mla_spec = c.mla_spec;
  m.moe = c.moe_spec;
  m.kinds = GroupLayers(c.moe, c.window);
  m.notes = c.notes;
  LMKIT_RETURN_IF_ERROR(ValidateModel(m, c.subject));
  return m;
}

Result<ModelSpec> ParseModelConfig(const Json& config, const std::string& subject) {
  auto c = io::ParseHfConfig(config, subject);
  if (!c.ok() && c.status().code() == ErrorCode::kUnsupported)
    return Status::Unsupported(subject, c.status().message() + "; describe it by explicit dimensions instead (" +
                                            Field("layers") + ", " + Field("d_model") + ", " + Field("heads") + ", " +
                                            Field("vocab") + " ...)");
  if (!c.ok()) return c.status();
  return FromHfConfig(*c);
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
  // be accepted silently (kv_heads -4 planned plain MHA).
  const std::pair<const char*, int64_t> optional_fields[] = {{"kv_heads", d.kv_heads}, {"head_dim", d.head_dim},
                                                             {"d_ff", d.d_ff},         {"experts", d.experts},
                                                             {"top_k", d.top_k},       {"expert_d_ff", d.expert_d_ff}};
  for (const auto& [field, v] : optional_fields)
    if (v < 0) return Status::InvalidInput(Field(field), "must not be negative (got " + std::to_string(v) + ")");
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
      return Status::InvalidInput(Field("heads"), "heads (" + std::to_string(d.heads) + ") do not divide d_model (" +
                                                      std::to_string(d.d_model) + ") and there is no " +
                                                      Field("head_dim"));
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
  LMKIT_RETURN_IF_ERROR(at_least(m.vision_params, 0, "vision tower parameters"));
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
  // A gated MLP with a GELU activation is GeGLU (gemma); hidden_act is empty for explicit dimensions.
  const bool gelu_gate = m.ffn == FfnKind::kSwiGlu && m.activation.rfind("gelu", 0) == 0;
  s += m.ffn == FfnKind::kSwiGlu ? (gelu_gate ? ", GeGLU" : ", SwiGLU") : ", GELU MLP";
  s += m.norm == NormKind::kRmsNorm ? ", RMSNorm" : ", LayerNorm";
  if (m.tied) s += ", tied head";
  if (m.parallel_block) s += ", parallel attention/MLP";
  for (const auto& k : m.kinds)
    if (k.window > 0) s += ", window " + std::to_string(k.window) + " on " + std::to_string(k.count) + " layers";
  return s;
}

}  // namespace lmkit::accounting
