// A transformer described by its shapes: what FLOP, parameter and memory accounting needs, and nothing else. Built
// from a Hugging Face config.json (a view of io::HfConfig), a preset from data/models/, or explicit dimensions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lmkit/common/json.h"
#include "lmkit/common/name_table.h"
#include "lmkit/common/status.h"
#include "lmkit/io/hf_config.h"

namespace lmkit::accounting {

enum class FfnKind { kSwiGlu, kGelu };  // 3 matrices (gate, up, down: SwiGLU, GeGLU) or 2 (up, down)
enum class NormKind { kRmsNorm, kLayerNorm };
std::span<const EnumName<FfnKind>> FfnNames();    // swiglu, gelu
std::span<const EnumName<NormKind>> NormNames();  // rmsnorm, layernorm

using MlaSpec = io::MlaSpec;
using MoeSpec = io::MoeSpec;
using QkNorm = io::QkNorm;

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
  std::string activation;  // hidden_act ("silu", "gelu_pytorch_tanh", ...); "" for explicit dimensions
  NormKind norm = NormKind::kRmsNorm;
  bool norm_bias = false;   // LayerNorm with bias
  int norms_per_layer = 2;  // gemma2/3: 4; falcon-7b: 1
  bool qkv_bias = false;
  bool out_bias = false;
  bool mlp_bias = false;
  bool lm_head_bias = false;
  bool attn_sinks = false;  // one learned sink logit per head and layer (gpt_oss); no matmul FLOPs
  QkNorm qk_norm = QkNorm::kNone;
  bool tied = false;            // LM head shares the input embedding
  bool parallel_block = false;  // attention and MLP in parallel on one input (one all-reduce per layer under TP)
  double attn_softcap = 0, final_softcap = 0;  // tanh soft-capping (gemma2); elementwise, no FLOPs counted
  bool mla = false;
  MlaSpec mla_spec;
  MoeSpec moe;
  std::vector<LayerKind> kinds;  // sums to `layers`
  int64_t vision_params = 0;     // a multimodal config's vision tower + projector; outside every count but `vision`

  std::vector<std::string> notes;  // what was assumed or left out (e.g. "MTP layer excluded")

  int64_t q_dim() const;   // width of the concatenated query heads
  int64_t kv_dim() const;  // width of the concatenated key (or value) heads
  bool is_moe() const { return moe.routed_experts > 0; }
};

// The accounting view of a parsed config (layer kinds grouped, features carried over); validated as ValidateModel.
Result<ModelSpec> FromHfConfig(const io::HfConfig& config);
// ParseHfConfig + FromHfConfig; `subject` names the file in errors. An unsupported model_type (kUnsupported) lists
// the known ones and points to explicit dimensions.
Result<ModelSpec> ParseModelConfig(const Json& config, const std::string& subject);
// Reads `path` (a config.json or a directory holding one).
Result<ModelSpec> LoadModelConfig(const std::string& path);
// A preset from <data dir>/models/<name>.json.
Result<ModelSpec> LoadPreset(const std::string& name);
// Names of the shipped presets, sorted.
std::vector<std::string> PresetNames();
// `arg` is a path to a config.json or directory when one exists there, else a preset name (when neither: kNotFound
// with the nearest preset name, if one is close, and the list of presets).
Result<ModelSpec> ResolveModel(const std::string& arg);

// Explicit dimensions (a request's layers, d_model, ... fields). Zero kv_heads = heads, zero head_dim = d/heads, zero
// d_ff = 4·d (gelu) or 8d/3 rounded up to a multiple of 256 (swiglu, the Llama rule).
struct Dimensions {
  int64_t layers = 0, d_model = 0, heads = 0, kv_heads = 0, head_dim = 0, d_ff = 0, vocab = 0, positions = 0;
  FfnKind ffn = FfnKind::kSwiGlu;
  NormKind norm = NormKind::kRmsNorm;
  bool tied = false;
  bool bias = false;  // biases on every linear layer and norm
  int64_t experts = 0, top_k = 0, expert_d_ff = 0;
  int64_t window = 0;
};
// Errors: a negative optional size is kInvalidInput whose subject is the field (Field("kv_heads")); heads that do not
// divide d_model without head_dim, and ValidateModel's findings ("explicit dimensions").
Result<ModelSpec> FromDimensions(const Dimensions& dims);

// Zero or negative sizes, kv heads not dividing heads, top-k above the expert count, sizes past the bounds that keep
// the arithmetic exact: kInvalidInput whose subject is `subject` and whose message names the field.
Status ValidateModel(const ModelSpec& m, const std::string& subject);

// A one-line description ("llama: 32 layers, d 4096, 32 heads (8 kv) x 128, d_ff 14336, vocab 128256, SwiGLU").
std::string DescribeModel(const ModelSpec& m);

}  // namespace lmkit::accounting
