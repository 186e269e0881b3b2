// SmoothQuant's mapping (smoothquant.h): which norm's output each Linear layer reads, per family. Folding scales into a
// norm changes everything that reads the norm's output, so a norm is smoothed only when its output goes to Linear
// layers alone, every one of them is in its group, and its form is known (plain `w`, or Gemma's `1 + w`):
// - input_layernorm -> q/k/v (Phi-3: qkv_proj; DeepSeek's MLA: q_proj or q_a_proj, and kv_a_proj_with_mqa);
// - the norm before the MLP (post_attention_layernorm; Gemma 2/3's pre_feedforward_layernorm) -> gate/up (Phi-3:
//   gate_up_proj), or a MoE block's router, every routed expert's gate/up, the shared expert's gate/up and its gate;
// - not smoothed: norms whose output feeds the residual stream (OLMo 2's post-norms, Gemma's post_attention /
//   post_feedforward norms), q_norm/k_norm (feed RoPE and attention), the final norm (lm_head stays 16-bit), and MLA's
//   q_a_layernorm / kv_a_layernorm (llm-compressor 0.14's DeepSeek mapping leaves them, and so does lmkit).
// llm-compressor 0.14 (modifiers/transform/smoothquant/utils.py) differs by design in two places: it smooths Gemma's
// gate/up against post_attention_layernorm, which Gemma applies to the attention output (a changed model), and it
// leaves MoE MLPs unsmoothed; docs/quant.md ("Families against llm-compressor") has the table. Pure.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "lmkit/model/config.h"

namespace lmkit::quant {

// One norm and every Linear module that reads its output.
struct SmoothGroup {
  std::string norm;                  // "model.layers.0.input_layernorm" (the tensor is norm + ".weight")
  bool unit_offset = false;          // Gemma: the norm multiplies by (1 + w)
  std::vector<std::string> linears;  // in the order of `linears` given to MapSmoothing
};

struct SmoothMapping {
  std::vector<SmoothGroup> groups;  // in forward order
  // What is left unsmoothed although a norm precedes Linears, one line each, layers written as '*' (deduplicated).
  std::vector<std::string> unsmoothed;
};

// The groups of the Linear modules `linears` (a model's LinearNames(): "…layers.N.self_attn.q_proj", …) of a model of
// config `c`. A Linear that reads no norm's output (o_proj, down_proj, MLA's q_b_proj / kv_b_proj) is in no group.
SmoothMapping MapSmoothing(const model::LlamaConfig& c, std::span<const std::string> linears);

}  // namespace lmkit::quant
