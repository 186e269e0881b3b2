// The architecture of a Hugging Face decoder-only checkpoint as the forward pass runs it: the runtime's view of the
// one config.json parser (io/hf_config.h). One struct covers every supported family (docs/model.md has the table):
// llama, mistral, qwen2, qwen3, gemma2, gemma3 / gemma3_text, phi3, olmo2, mixtral, qwen2_moe, qwen3_moe, deepseek_v2,
// deepseek_v3.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/json.h"
#include "lmkit/common/status.h"
#include "lmkit/io/hf_config.h"

namespace lmkit::model {

enum class Activation : uint8_t { kSilu, kGeluTanh, kGelu };

// How a MoE router scores experts: softmax over the router logits, or (deepseek_v3) each logit's sigmoid.
enum class RouterScoring : uint8_t { kSoftmax, kSigmoid };
// Group-limited routing (DeepSeek): experts split into n_group equal groups, a group scored by its best expert (V2's
// group_limited_greedy) or the sum of its best two (V3), and only the topk_group best groups' experts may be chosen.
enum class GroupLimit : uint8_t { kNone, kMax, kTop2Sum };

// Where the RMSNorms of a layer sit: before each block (Llama), before and after each block (Gemma 2/3: input,
// post_attention, pre_feedforward, post_feedforward), or only after each block's output (OLMo 2).
enum class NormPlacement : uint8_t { kPre, kSandwich, kPost };

struct LlamaConfig {
  std::string model_type;  // one of the families above
  uint32_t hidden = 0;
  uint32_t intermediate = 0;
  uint32_t layers = 0;
  uint32_t heads = 0;
  uint32_t kv_heads = 0;
  uint32_t head_dim = 0;    // of queries and keys (MLA: qk_nope_head_dim + qk_rope_head_dim)
  uint32_t v_head_dim = 0;  // of values (= head_dim except MLA)
  uint32_t vocab = 0;
  uint32_t max_positions = 0;
  double rms_eps = 1e-6;
  double rope_theta = 10000.0;  // rope.theta
  bool tie_embeddings = false;
  int64_t bos_token = -1;  // -1 when config.json has none
  int64_t eos_token = -1;

  Activation act = Activation::kSilu;  // of the gated MLP: act(gate) * up
  NormPlacement norms = NormPlacement::kPre;
  bool unit_offset_norms = false;  // gemma: RMSNorm weights are stored as w - 1, applied as (1 + w)
  bool scale_embeddings = false;   // gemma: embeddings times sqrt(hidden), rounded to the checkpoint's dtype
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  io::QkNorm qk_norm = io::QkNorm::kNone;
  bool fused_qkv = false, fused_gate_up = false;  // phi3: qkv_proj, gate_up_proj
  double attn_scale = 0;                          // score multiplier: head_dim^-1/2, or query_pre_attn_scalar^-1/2
  double attn_softcap = 0, final_softcap = 0;     // gemma2: cap * tanh(x / cap); 0 = none
  std::vector<uint32_t> window;                   // per layer: sliding window in tokens (0 = full attention)
  std::vector<bool> local_rope;                   // per layer: uses rope_local (gemma3 sliding layers)
  io::RopeSpec rope, rope_local;

  // Multi-head latent attention (deepseek_v2/v3; mla false elsewhere). q = q_proj(x), or q_b_proj(RMSNorm(q_a_proj(x)))
  // when q_lora_rank > 0; kv_a_proj_with_mqa(x) gives a kv_lora_rank latent and one qk_rope-wide rotary key shared by
  // every head; kv_b_proj(RMSNorm(latent)) gives each head's qk_nope key part and its value. kv_heads == heads.
  bool mla = false;
  uint32_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope = 0, qk_rope = 0;
  bool mla_bias = false;         // attention_bias: q_a_proj, kv_a_proj_with_mqa and o_proj carry biases
  bool rope_interleave = false;  // rotate pairs (2i, 2i + 1) rather than Hugging Face's (i, i + d/2)
  uint32_t mtp_layers = 0;       // deepseek_v3 num_nextn_predict_layers: stored after the decoder, not run

  // Mixture of experts (mixtral, qwen2_moe, qwen3_moe, deepseek_v2/v3): experts == 0 means dense.
  uint32_t experts = 0, top_k = 0, expert_intermediate = 0, shared_intermediate = 0;
  bool norm_topk_prob = false;  // renormalise the top-k weights to sum to 1
  bool shared_gate = false;     // qwen2_moe: sigmoid(shared_expert_gate(x)) scales the shared expert
  RouterScoring scoring = RouterScoring::kSoftmax;
  bool router_bias = false;  // deepseek_v3: e_score_correction_bias is added to the scores to choose, not to weigh
  GroupLimit group_limit = GroupLimit::kNone;
  uint32_t n_group = 0, topk_group = 0;
  double routed_scale = 1.0;  // routed_scaling_factor: the chosen experts' weights are multiplied by it
  std::vector<bool> moe;      // per layer

  // The dimensions RoPE rotates part of: the whole head, or MLA's qk_rope part.
  uint32_t rope_head_dim() const { return mla ? qk_rope : head_dim; }
};

// The forward pass's view of `c`: kUnsupported naming the field for what it does not implement (another model_type,
// hidden_act, rope_type or rope parameter, MLA, ...), kInvalidInput naming c.subject for an odd head_dim, no positions
// or a malformed rope dict. Pure.
Result<LlamaConfig> LlamaConfigFrom(const io::HfConfig& c);
// ParseHfConfig (transformers' defaults: e.g. max_position_embeddings 2048 for llama, 131072 for mistral), then
// LlamaConfigFrom, then the config.json keys that change the maths and that neither reads: each one present (with a
// value other than its no-op) is kUnsupported naming it. Errors name `subject` and the key, in one line.
Result<LlamaConfig> ParseLlamaConfig(const Json& config, const std::string& subject);

}  // namespace lmkit::model
