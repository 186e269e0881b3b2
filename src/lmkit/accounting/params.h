// Parameter counts of a ModelSpec, exactly as the Hugging Face modules hold them (conventions: docs/accounting.md).
#pragma once

#include <cstdint>

#include "lmkit/accounting/model.h"

namespace lmkit::accounting {

struct ParameterCounts {
  int64_t total = 0;
  int64_t embedding = 0;      // token + position tables
  int64_t lm_head = 0;        // untied output projection (incl. its bias)
  int64_t non_embedding = 0;  // total - embedding - lm_head
  int64_t active = 0;         // per token (== total for dense models)
  // Components (whole model): attention (projections, q/k norms, MLA norms), ffn (dense MLPs, routed and shared
  // experts, shared gate), router (incl. correction bias), norms (layer norms and the final norm).
  int64_t attention = 0;
  int64_t ffn = 0;
  int64_t router = 0;
  int64_t norms = 0;
  int64_t per_layer_max = 0;  // largest single layer (used for ZeRO-3 gather buffers)
  // A multimodal checkpoint's vision tower and projector (ModelSpec::vision_params): not in `total`, which is the
  // language model's; total + vision is the checkpoint's count (Llama 4's and Gemma 3's published totals include it).
  int64_t vision = 0;
  // The weight matrices of the decoder's Linear layers (attention projections, MLPs, experts; not routers, gates,
  // biases, norms, embeddings or the LM head): what an fp8/int8 recipe quantizes, and their output channels (one scale
  // each).
  int64_t linear = 0;
  int64_t linear_out_channels = 0;
};

// Exact integer arithmetic over the module shapes (weights, biases, norm weights, router, DeepSeek-V3's
// e_score_correction_bias; not DeepSeek-V3's multi-token-prediction layer). `embedding` = token + learned position
// tables; `lm_head` = the untied output matrix; `non_embedding` = total − embedding − lm_head (Kaplan et al. 2020);
// `active` = per token: top_k routed + shared experts + router, embeddings and LM head included (Mixtral's and Qwen's
// convention). Pure.
ParameterCounts CountParameters(const ModelSpec& m);

}  // namespace lmkit::accounting
