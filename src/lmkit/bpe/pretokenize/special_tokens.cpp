// See special_tokens.h.
#include "lmkit/bpe/pretokenize/special_tokens.h"

#include <algorithm>
#include <cstring>

namespace lmkit::bpe {

SpecialTokenSplitter::SpecialTokenSplitter(const std::vector<std::string>& specials) : specials_(specials) {
  by_first_.resize(256);
  for (size_t i = 0; i < specials_.size(); ++i) {
    const std::string& s = specials_[i];
    if (s.empty()) continue;
    bool dup = false;
    for (size_t j = 0; j < i; ++j) dup = dup || specials_[j] == s;
    if (dup) continue;
    const auto b = static_cast<unsigned char>(s[0]);
    by_first_[b].push_back(static_cast<int>(i));
    first_[b] = true;
    max_len_ = std::max(max_len_, s.size());
  }
  int distinct = 0;
  for (int b = 0; b < 256; ++b) {
    if (!first_[b]) continue;
    ++distinct;
    single_first_ = b;
    // Longest first; equal lengths cannot both match at one position unless equal, which was collapsed.
    std::stable_sort(by_first_[b].begin(), by_first_[b].end(),
                     [&](int x, int y) { return specials_[x].size() > specials_[y].size(); });
  }
  if (distinct != 1) single_first_ = -1;
  if (distinct == 0) specials_.clear();
}

bool SpecialTokenSplitter::FindNext(std::string_view text, size_t pos, Match* match) const {
  if (max_len_ == 0) return false;
  const char* base = text.data();
  const size_t n = text.size();
  while (pos < n) {
    size_t cand;
    if (single_first_ >= 0) {
      const void* p = std::memchr(base + pos, single_first_, n - pos);
      if (p == nullptr) return false;
      cand = static_cast<size_t>(static_cast<const char*>(p) - base);
    } else {
      cand = pos;
      while (cand < n && !first_[static_cast<unsigned char>(base[cand])]) ++cand;
      if (cand == n) return false;
    }
    for (int idx : by_first_[static_cast<unsigned char>(base[cand])]) {
      const std::string& s = specials_[idx];
      if (s.size() <= n - cand && std::memcmp(base + cand, s.data(), s.size()) == 0) {
        *match = Match{cand, s.size(), idx};
        return true;
      }
    }
    pos = cand + 1;
  }
  return false;
}

std::vector<SpecialTokenSplitter::Piece> SpecialTokenSplitter::Split(std::string_view text) const {
  std::vector<Piece> out;
  Split(text, [&](const Piece& p) { out.push_back(p); });
  return out;
}

}  // namespace lmkit::bpe
