// Parameter counts of a ModelSpec, exactly as the Hugging Face modules hold them.
//
// Contract: CountParameters is exact integer arithmetic over the module shapes (weights, biases, norm weights, router,
// DeepSeek-V3's e_score_correction_bias); it matches the HF parameter counts of the shipped configs (tests/unit/
// accounting/params_test.cpp). DeepSeek-V3's multi-token-prediction layer is not counted (it is not part of inference).
// Conventions: `embedding` = input token table + learned position table; `lm_head` = the untied output matrix (0 when
// tied); `non_embedding` = total − embedding − lm_head (Kaplan et al. 2020's N, which excludes vocabulary and position
// embeddings). `active` = parameters used per token: MoE layers count top_k routed experts plus shared experts and the
// router; embeddings and LM head are included (the convention of Mixtral's and Qwen's "active" figures).
// Thread-safe.
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
};

ParameterCounts CountParameters(const ModelSpec& m);

}  // namespace lmkit::accounting
