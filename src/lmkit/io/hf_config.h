// A Hugging Face config.json read once, with transformers' defaults: the architecture every consumer views (the
// accounting model description, the Llama runtime's LlamaConfig).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/json.h"
#include "lmkit/common/status.h"

namespace lmkit::io {

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
  bool router_bias = false;  // one value per routed expert: deepseek_v3 e_score_correction_bias, gpt_oss router bias
};

// Rotary embedding parameters as transformers 5 standardises them: the dict `rope_parameters` (or the older
// `rope_scaling`, which wins when both are present), with rope_theta and partial_rotary_factor taken from the dict,
// else the top level, else the class default. The type's own fields (factor, low_freq_factor, ...) stay in `params`.
struct RopeSpec {
  std::string type = "default";  // rope_type (or the older "type")
  double theta = 10000.0;
  double partial = 1.0;          // partial_rotary_factor
  int64_t original_max = 0;      // original_max_position_embeddings (top level, else the dict's, else max positions)
  Json params = Json::object();  // the whole dict ({} when the config has none)
};

// Where q/k RMSNorms apply: none, over each head (qwen3, gemma3: head_dim weights each), or over the whole q and k
// projections (olmo2: heads·head_dim and kv_heads·head_dim weights).
enum class QkNorm { kNone, kPerHead, kFullWidth };

struct HfConfig {
  std::string subject;     // the file it came from (errors name it)
  std::string model_type;  // as written at the top level ("gemma3" reads its text_config)

  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  bool kv_heads_default = false;  // num_key_value_heads absent: the class default (heads, or e.g. mistral's 8)
  int64_t head_dim = 0;           // config head_dim, else the family's default, else hidden / heads
  int64_t intermediate = 0;       // dense MLP width (0 when every layer is MoE and the family has none)
  int64_t vocab = 0;
  int64_t max_positions = 0;      // max_position_embeddings / n_positions (0 when the config has none)
  int64_t learned_positions = 0;  // rows of a learned position table (gpt2); 0 = rotary / ALiBi

  std::string hidden_act;   // hidden_act / hidden_activation / activation
  bool gated_mlp = true;    // gate, up, down (SwiGLU, GeGLU) or up, down
  bool layer_norm = false;  // LayerNorm (else RMSNorm)
  bool norm_bias = false;   // LayerNorm with bias
  int norms_per_layer = 2;  // gemma2/3: 4 (pre and post of both blocks); falcon-7b: 1 (shared by attention and MLP)
  bool qkv_bias = false, out_bias = false, mlp_bias = false;
  bool attn_sinks = false;  // gpt_oss: one learned sink logit per attention head and layer
  QkNorm qk_norm = QkNorm::kNone;
  bool tie_word_embeddings = false;
  bool parallel_block = false;  // attention and MLP read the same input (gpt_neox use_parallel_residual, falcon)
  double norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::string rope_scaling;                                // rope_scaling's rope_type/type; "" = none
  RopeSpec rope;                                           // full-attention layers (every layer but gemma3's local)
  RopeSpec rope_local;                                     // gemma3's sliding layers (rope_local_base_freq); = rope
  double query_pre_attn_scalar = 0;                        // gemma: scores scale by its -1/2 power; 0 = head_dim
  double attn_logit_softcap = 0, final_logit_softcap = 0;  // gemma2 tanh soft-capping; 0 = none

  std::vector<int64_t> window;  // per layer: sliding-window span in tokens, 0 = full attention
  std::vector<bool> moe;        // per layer: routed experts instead of the dense MLP
  MoeSpec moe_spec;
  bool mla = false;
  MlaSpec mla_spec;

  // Parameters of a multimodal config's vision tower and projector (gemma3's SigLIP, llama4's vision model), counted
  // from its vision_config; 0 for a text-only config. Not part of the language model above.
  int64_t vision_params = 0;

  int64_t bos_token = -1, eos_token = -1;  // -1 when absent (a list gives its first id)
  std::vector<std::string> notes;          // what was assumed or left out ("vision tower not counted", ...)
};

// Parses config.json (a document, or its text) as transformers' config class of its model_type does: keys of the
// top-level config that size the model are required (transformers' save_pretrained always writes them; a file that
// lacks one is not a real config), every other key — and every key of a nested text_config, which save_pretrained
// writes as a diff against the class defaults — takes the class's default. Errors: kInvalidInput naming `subject` and
// the key (missing, wrong type, negative, implausibly large, inconsistent heads); kUnsupported for a model_type
// outside HfModelTypes(). Pure; thread-safe.
Result<HfConfig> ParseHfConfig(const Json& config, const std::string& subject);
Result<HfConfig> ParseHfConfigText(std::string_view text, const std::string& subject);

// The model_types ParseHfConfig reads, in the order error messages list them.
const std::vector<std::string>& HfModelTypes();

}  // namespace lmkit::io
