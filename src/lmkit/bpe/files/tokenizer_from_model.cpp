#include "lmkit/bpe/files/tokenizer_from_model.h"

#include <algorithm>

namespace lmkit::bpe {
namespace {

// A token's bytes for a message: printable ASCII as is, anything else as \xNN.
std::string Shown(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> TokenizerFromModel(const TokenizerModel& model) {
  auto tok = std::make_unique<Tokenizer>();
  tok->ReserveTokens(model.vocab.size());
  uint32_t next_id = 0;
  for (const auto& [id, bytes] : model.vocab) {
    if (id > kMaxTokenId) return Status::InvalidInput("vocab", "token id " + std::to_string(id) + " is too large");
    LMKIT_RETURN_IF_ERROR(tok->AddToken(bytes, id).WithSubject("vocab"));
    next_id = std::max(next_id, id + 1);
  }
  uint32_t rank = 0;
  for (const auto& [a, b] : model.merges) {
    const std::string where = "merges[" + std::to_string(rank) + "]";
    const std::string ab = a + b;
    const uint32_t left = tok->TokenId(a), right = tok->TokenId(b), result = tok->TokenId(ab);
    for (const auto& [part, id] : {std::pair<std::string_view, uint32_t>{a, left}, {b, right}, {ab, result}})
      if (id == kNoId) return Status::InvalidInput(where, "token b'" + Shown(part) + "' is not in the vocabulary");
    LMKIT_RETURN_IF_ERROR(tok->AddMerge(left, right, rank++, result).WithSubject(where));
  }
  for (const auto& s : model.special_tokens) {
    if (s.empty()) continue;
    if (tok->TokenId(s) != kNoId) {
      LMKIT_RETURN_IF_ERROR(tok->EnableSpecial(s));
    } else {
      bool known = false;
      for (const auto& k : tok->known_specials()) known = known || k.text == s;
      if (known) continue;
      LMKIT_RETURN_IF_ERROR(tok->AddSpecial(s, next_id++, true).WithSubject("special_tokens"));
    }
  }
  tok->set_pattern(model.pattern);
  tok->set_description("in-memory vocabulary and merges");
  LMKIT_RETURN_IF_ERROR(tok->Finish().WithSubject("vocab"));
  return tok;
}

}  // namespace lmkit::bpe
