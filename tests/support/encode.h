// The ids of `text` under `tokenizer`, encoded whole by one Encoder: what the tokenizer tests compare.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "lmkit/bpe/encode/encoder.h"

namespace lmkit::test {

inline std::vector<uint32_t> Enc(const bpe::Tokenizer& tokenizer, std::string_view text) {
  bpe::Encoder e(tokenizer);
  std::vector<uint32_t> ids;
  e.Encode(text, &ids);
  return ids;
}

}  // namespace lmkit::test
