// A transformer described by its shapes: what FLOP, parameter and memory accounting needs, and nothing else.
//
// Contract: a ModelSpec is built from a Hugging Face config.json (LoadModelConfig / ParseModelConfig), a preset name
// from data/models/ (LoadPreset), either of those through ResolveModel(arg), or explicit dimensions (FromDimensions).
// Every builder validates the result (ValidateModel): zero or negative sizes, heads not dividing d_model when there is
// no head_dim, kv heads not dividing heads, top-k above the expert count are kInvalidInput errors whose subject is the
// file (or "--<flag>" for explicit dimensions) and whose message names the offending field. An unknown model_type is
// kUnsupported naming the type and the families lmkit knows. Pure functions; thread-safe.
//
// Families (model_type): gpt2; llama, mistral, qwen2, qwen3 (dense, RMSNorm + SwiGLU + RoPE); mixtral; qwen2_moe,
// qwen3_moe; deepseek (DeepSeekMoE), deepseek_v2, deepseek_v3 (MLA + routed/shared experts + first dense layers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/json.h"
#include "lmkit/common/status.h"

namespace lmkit::accounting {

enum class FfnKind { kGelu, kSwiGlu };  // 2 matrices (up, down) or 3 (gate, up, down)
enum class NormKind { kLayerNorm, kRmsNorm };

// Multi-head latent attention (DeepSeek-V2/V3). q_lora_rank 0 = a plain q_proj (DeepSeek-V2-Lite).
struct MlaSpec {
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

struct MoeSpec {
  int64_t routed_experts = 0;  // 0 = no MoE layers
  int64_t top_k = 0;
  int64_t expert_d_ff = 0;   // width of one routed expert
  int64_t shared_d_ff = 0;   // total width of the always-on shared expert MLP (0 = none)
  bool shared_gate = false;  // qwen2_moe: a sigmoid gate Linear(d, 1) on the shared expert
  bool router_bias = false;  // deepseek_v3 noaux_tc: e_score_correction_bias, one value per routed expert
};

// One kind of decoder layer; a model is a list of kinds with their multiplicity (e.g. DeepSeek-V3: 3 dense + 58 MoE).
struct LayerKind {
  std::string name;  // "dense", "moe", "dense/window" ...
  int64_t count = 0;
  bool moe = false;
  int64_t window = 0;  // sliding-window span in tokens; 0 = full attention
};

struct ModelSpec {
  std::string name;    // preset name or file stem
  std::string source;  // the file it came from, or "explicit dimensions"
  std::string family;  // model_type

  int64_t layers = 0;
  int64_t d_model = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;  // config head_dim, else d_model / heads
  int64_t d_ff = 0;      // dense FFN width
  int64_t vocab = 0;
  int64_t learned_positions = 0;  // rows of a learned position table (gpt2 n_positions); 0 = RoPE / none
  int64_t max_seq_len = 0;        // config max_position_embeddings / n_positions (informational)

  FfnKind ffn = FfnKind::kSwiGlu;
  NormKind norm = NormKind::kRmsNorm;
  bool norm_bias = false;  // LayerNorm with bias
  bool qkv_bias = false;
  bool out_bias = false;
  bool mlp_bias = false;
  bool lm_head_bias = false;
  bool qk_norm = false;  // qwen3: RMSNorm over head_dim on q and k
  bool tied = false;     // LM head shares the input embedding
  bool mla = false;
  MlaSpec mla_spec;
  MoeSpec moe;
  std::vector<LayerKind> kinds;  // sums to `layers`

  std::vector<std::string> notes;  // what was assumed or left out (e.g. "MTP layer excluded")

  int64_t q_dim() const;   // width of the concatenated query heads
  int64_t kv_dim() const;  // width of the concatenated key (or value) heads
  bool is_moe() const { return moe.routed_experts > 0; }
};

// Parses a config.json document; `subject` names the file in errors.
Result<ModelSpec> ParseModelConfig(const Json& config, const std::string& subject);
// Reads `path` (a config.json or a directory holding one).
Result<ModelSpec> LoadModelConfig(const std::string& path);
// A preset from <data dir>/models/<name>.json.
Result<ModelSpec> LoadPreset(const std::string& name);
// Names of the shipped presets, sorted.
std::vector<std::string> PresetNames();
// `arg` is a path to a config.json or directory when one exists there, else a preset name (when neither: kNotFound
// with the nearest preset name, if one is close (NearestName), and the list of presets).
Result<ModelSpec> ResolveModel(const std::string& arg);

// Explicit dimensions (the CLI's --layers --d-model ... flags). Zero kv_heads = heads, zero head_dim = d/heads,
// zero d_ff = 4·d (gelu) or 8d/3 rounded up to a multiple of 256 (swiglu, the Llama rule).
struct Dimensions {
  int64_t layers = 0, d_model = 0, heads = 0, kv_heads = 0, head_dim = 0, d_ff = 0, vocab = 0, positions = 0;
  FfnKind ffn = FfnKind::kSwiGlu;
  NormKind norm = NormKind::kRmsNorm;
  bool tied = false;
  bool bias = false;  // biases on every linear layer and norm
  int64_t experts = 0, top_k = 0, expert_d_ff = 0;
  int64_t window = 0;
};
Result<ModelSpec> FromDimensions(const Dimensions& dims);

// Checks the invariants listed above; `subject` names the source in errors.
Status ValidateModel(const ModelSpec& m, const std::string& subject);

// A one-line description ("llama: 32 layers, d 4096, 32 heads (8 kv) x 128, d_ff 14336, vocab 128256, SwiGLU").
std::string DescribeModel(const ModelSpec& m);

}  // namespace lmkit::accounting
