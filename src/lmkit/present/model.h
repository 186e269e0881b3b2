// `lmkit eval` and `lmkit generate` as text and JSON (the JSON generated from the field lists in model_json.cpp).
#pragma once

#include <string>

#include "lmkit/common/json.h"
#include "lmkit/model/eval.h"
#include "lmkit/model/generate.h"

namespace lmkit::present {

// model, mode, seq_len, sequences, tokens_scored, mean_nll, perplexity, compare {...} when compared, seconds.
Json EvalResultToJson(const model::EvalResult& r);
std::string EvalResultToText(const model::EvalResult& r);
// model, temperature, seed (from the options), sequences, final_logits when `with_logits`, seconds.
Json GenerateResultToJson(const model::GenerateRequest& options, const model::GenerateResult& r, bool with_logits);

}  // namespace lmkit::present
