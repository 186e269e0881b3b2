// A tokenizer built from an in-memory vocabulary and merge list (the shapes CS336's adapters and `train_bpe` use).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lmkit/bpe/pretokenize/pretokenizer.h"
#include "lmkit/bpe/tokenizer.h"
#include "lmkit/common/status.h"

namespace lmkit::bpe {

struct TokenizerModel {
  std::vector<std::pair<uint32_t, std::string>> vocab;      // id → token bytes (any order; bytes unique)
  std::vector<std::pair<std::string, std::string>> merges;  // (left bytes, right bytes) in rank order
  std::vector<std::string> special_tokens;                  // matched in text, longest first
  PretokPattern pattern = PretokPattern::kGpt2;
};

// Every merge's parts and its concatenation must be vocabulary tokens; a special token takes its vocabulary id when
// its bytes are there, else the next id past the largest. Encoding follows the merge list alone (no whole-piece
// shortcut), as the CS336 reference does. Errors: kInvalidInput naming the token or merge at fault.
Result<std::unique_ptr<Tokenizer>> TokenizerFromModel(const TokenizerModel& model);

}  // namespace lmkit::bpe
