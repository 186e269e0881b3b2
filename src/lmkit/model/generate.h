// `lmkit generate`: continue a prompt of token ids with a model, greedily or by temperature sampling.
//
// Contract: each of `samples` sequences starts from `prompt` (ids < vocab_size, non-empty) and gets `max_tokens` new
// ids (generation does not stop at EOS: the golden check and the accuracy script need fixed-length sequences).
// Greedy (temperature 0) takes the arg-max (lowest index on ties). Sampling draws from softmax(logits / temperature)
// with one std::mt19937_64 seeded with `seed`, consumed in sample order (uniform = top 53 bits / 2^53, inverse CDF in
// double), so the ids are the same for any thread count. `final_logits` are the logits after the whole first sequence
// (prompt + generated ids) has been fed, i.e. the prediction for the next position. Errors: kInvalidArgument for an
// empty prompt, max_tokens 0, negative temperature, or a length beyond max_position_embeddings; kInvalidInput for an id
// >= vocab_size; load errors as LlamaModel::Load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"

namespace lmkit::model {

struct GenerateRequest {
  std::string model;
  std::vector<uint32_t> prompt;
  uint32_t max_tokens = 0;
  uint32_t samples = 1;
  double temperature = 0;
  uint64_t seed = 0;
  unsigned threads = 1;
};

struct GenerateResult {
  std::vector<std::vector<uint32_t>> sequences;  // prompt + generated ids
  std::vector<float> final_logits;               // [vocab], for sequences[0]
  uint32_t vocab = 0;
  double seconds = 0;
};

Result<GenerateResult> Generate(const GenerateRequest& options, ProgressSink* progress);

}  // namespace lmkit::model
