// Rotary position embeddings of every rope_type transformers 5 implements for the supported families (its
// modeling_rope_utils.py, the reference for each formula): default, linear, dynamic (NTK), llama3, yarn, longrope, each
// with partial_rotary_factor. Frequencies are computed in double; they are applied in Hugging Face's rotate-half order
// (or DeepSeek's interleaved pairs) to the first rot_dim dimensions of each head, the rest passing through.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/io/hf_config.h"

namespace lmkit::model {

// The frequencies one forward pass uses.
struct RopeFreqs {
  uint32_t rot_dim = 0;           // rotated dimensions of a head (even, <= head_dim)
  std::vector<double> inv_freq;   // [rot_dim / 2]
  double attention_factor = 1.0;  // yarn / longrope: cos and sin are multiplied by it
};

class RopeSchedule {
 public:
  // Validates `spec` for a head of `head_dim` in a model of `max_positions` (max_position_embeddings). Errors name
  // `subject` and the field: kUnsupported for a rope_type or a parameter this code does not implement (never silently
  // dropped), kInvalidInput for a missing or malformed parameter (e.g. a llama3 dict without low_freq_factor).
  static Result<RopeSchedule> Make(const io::RopeSpec& spec, uint32_t head_dim, uint32_t max_positions,
                                   const std::string& subject);
  // The frequencies for a pass whose last position is seq_len - 1: only dynamic and longrope depend on seq_len, as
  // transformers' dynamic_rope_update recomputes them (dynamic: beyond max_position_embeddings; longrope: long_factor
  // beyond original_max_position_embeddings).
  RopeFreqs At(uint64_t seq_len) const;
  const std::string& type() const { return type_; }

 private:
  std::string type_;
  uint32_t dim_ = 0, max_positions_ = 0, original_max_ = 0;
  double theta_ = 10000.0, factor_ = 1.0;
  RopeFreqs fixed_;                                 // every type but dynamic / longrope-long
  std::vector<double> long_factor_, short_factor_;  // longrope
};

// Rotates one head vector v[0, head_dim) at a position with precomputed cos/sin of [rot_dim / 2] angles.
void ApplyRope(float* v, uint32_t rot_dim, const float* cos, const float* sin);
// The same rotation over DeepSeek's interleaved layout: pair i is (v[2i], v[2i + 1]) (transformers' DeepseekV2
// complex rotation and DeepseekV3's rope_interleave, whose de-interleaved output differs only by a permutation that
// queries and keys share).
void ApplyRopeInterleaved(float* v, uint32_t rot_dim, const float* cos, const float* sin);

}  // namespace lmkit::model
