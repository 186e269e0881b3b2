#include "lmkit/accounting/params.h"

#include <algorithm>
#include <utility>

namespace lmkit::accounting {
namespace {

int64_t Linear(int64_t in, int64_t out, bool bias) { return in * out + (bias ? out : 0); }

int64_t Norm(const ModelSpec& m, int64_t width) {
  return m.norm == NormKind::kLayerNorm && m.norm_bias ? 2 * width : width;
}

int64_t Mlp(const ModelSpec& m, int64_t d_ff) {
  int64_t d = m.d_model;
  if (m.ffn == FfnKind::kSwiGlu) return 2 * Linear(d, d_ff, m.mlp_bias) + Linear(d_ff, d, m.mlp_bias);
  return Linear(d, d_ff, m.mlp_bias) + Linear(d_ff, d, m.mlp_bias);
}

int64_t AttentionParams(const ModelSpec& m) {
  int64_t d = m.d_model;
  if (m.mla) {
    const MlaSpec& a = m.mla_spec;
    int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    int64_t p = 0;
    if (a.q_lora_rank > 0) {
      p += d * a.q_lora_rank + a.q_lora_rank /* q_a_layernorm */ + a.q_lora_rank * m.heads * qk;
    } else {
      p += d * m.heads * qk;
    }
    p += d * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank /* kv_a_layernorm */;
    p += a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim);
    p += m.heads * a.v_head_dim * d;
    return p;
  }
  int64_t p =
      Linear(d, m.q_dim(), m.qkv_bias) + 2 * Linear(d, m.kv_dim(), m.qkv_bias) + Linear(m.q_dim(), d, m.out_bias);
  if (m.qk_norm == QkNorm::kPerHead) p += 2 * m.head_dim;
  if (m.qk_norm == QkNorm::kFullWidth) p += m.q_dim() + m.kv_dim();
  if (m.attn_sinks) p += m.heads;
  return p;
}

// Matrix elements and output channels of one layer's attention Linear layers (no biases, no norms).
std::pair<int64_t, int64_t> AttentionLinear(const ModelSpec& m) {
  const int64_t d = m.d_model;
  if (!m.mla) return {2 * d * m.q_dim() + 2 * d * m.kv_dim(), m.q_dim() + 2 * m.kv_dim() + d};
  const MlaSpec& a = m.mla_spec;
  const int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim, h = m.heads;
  int64_t p = 0, ch = 0;
  if (a.q_lora_rank > 0) {
    p += d * a.q_lora_rank + a.q_lora_rank * h * qk;
    ch += a.q_lora_rank + h * qk;
  } else {
    p += d * h * qk;
    ch += h * qk;
  }
  p += d * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank * h * (a.qk_nope_head_dim + a.v_head_dim) +
       h * a.v_head_dim * d;
  ch += a.kv_lora_rank + a.qk_rope_head_dim + h * (a.qk_nope_head_dim + a.v_head_dim) + d;
  return {p, ch};
}

// The same for an MLP of width `f`.
std::pair<int64_t, int64_t> MlpLinear(const ModelSpec& m, int64_t f) {
  const int64_t mats = m.ffn == FfnKind::kSwiGlu ? 3 : 2, outs = m.ffn == FfnKind::kSwiGlu ? 2 : 1;
  return {mats * m.d_model * f, outs * f + m.d_model};
}

}  // namespace

ParameterCounts CountParameters(const ModelSpec& m) {
  ParameterCounts c;
  int64_t d = m.d_model;
  c.embedding = m.vocab * d + m.learned_positions * d;
  c.lm_head = m.tied ? 0 : m.vocab * d + (m.lm_head_bias ? m.vocab : 0);
  int64_t attn = AttentionParams(m);
  int64_t norms = m.norms_per_layer * Norm(m, d);
  int64_t total = c.embedding + c.lm_head + Norm(m, d) /* final norm */;
  int64_t active = total;
  c.norms = Norm(m, d);
  for (const auto& k : m.kinds) {
    int64_t ffn = 0, ffn_active = 0, router = 0;
    if (k.moe) {
      int64_t expert = Mlp(m, m.moe.expert_d_ff);
      int64_t shared = m.moe.shared_d_ff > 0 ? Mlp(m, m.moe.shared_d_ff) + (m.moe.shared_gate ? d : 0) : 0;
      ffn = m.moe.routed_experts * expert + shared;
      ffn_active = m.moe.top_k * expert + shared;
      router = m.moe.routed_experts * d + (m.moe.router_bias ? m.moe.routed_experts : 0);
    } else {
      ffn = ffn_active = Mlp(m, m.d_ff);
    }
    auto [attn_lin, attn_ch] = AttentionLinear(m);
    int64_t lin = attn_lin, ch = attn_ch;
    if (k.moe) {
      auto [e_lin, e_ch] = MlpLinear(m, m.moe.expert_d_ff);
      lin += m.moe.routed_experts * e_lin;
      ch += m.moe.routed_experts * e_ch;
      if (m.moe.shared_d_ff > 0) {
        auto [s_lin, s_ch] = MlpLinear(m, m.moe.shared_d_ff);
        lin += s_lin;
        ch += s_ch;
      }
    } else {
      auto [f_lin, f_ch] = MlpLinear(m, m.d_ff);
      lin += f_lin;
      ch += f_ch;
    }
    c.linear += k.count * lin;
    c.linear_out_channels += k.count * ch;
    int64_t layer = attn + norms + ffn + router;
    c.per_layer_max = std::max(c.per_layer_max, layer);
    total += k.count * layer;
    active += k.count * (attn + norms + ffn_active + router);
    c.attention += k.count * attn;
    c.ffn += k.count * ffn;
    c.router += k.count * router;
    c.norms += k.count * norms;
  }
  c.total = total;
  c.active = active;
  c.non_embedding = total - c.embedding - c.lm_head;
  c.vision = m.vision_params;
  return c;
}

}  // namespace lmkit::accounting
