// See safe_cut.h; the proof that the rules are safe for the three patterns is in docs/bpe-encoding.md.
#include "lmkit/bpe/encode/safe_cut.h"

#include <algorithm>
#include <cstring>

namespace lmkit::bpe {

namespace {

inline bool AsciiLetter(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
inline bool AsciiAlnum(unsigned char c) { return AsciiLetter(c) || (c >= '0' && c <= '9'); }
inline bool AsciiGraph(unsigned char c) { return c >= 0x21 && c <= 0x7E; }

}  // namespace

bool IsPatternSafeCut(std::string_view text, size_t c) {
  if (c < 2 || c + 1 >= text.size()) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char a = p[c - 1], b = p[c];
  return (a == '\n' && AsciiGraph(p[c - 2]) && AsciiAlnum(b)) || (b == ' ' && AsciiLetter(a) && AsciiLetter(p[c + 1]));
}

bool IsSafeCut(std::string_view text, size_t c, const std::vector<SpecialToken>& specials) {
  const bool ok = IsPatternSafeCut(text, c);
  if (!ok) return false;
  for (const auto& s : specials) {
    const size_t len = s.text.size();
    if (len < 2) continue;
    for (size_t start = c >= len - 1 ? c - (len - 1) : 0; start < c; ++start) {
      if (start + len > text.size()) return false;  // cannot tell yet: not safe
      if (std::memcmp(text.data() + start, s.text.data(), len) == 0) return false;
    }
  }
  return true;
}

size_t LastSafeCut(std::string_view text, size_t from, const std::vector<SpecialToken>& specials) {
  if (text.size() < 3) return 0;
  from = std::max<size_t>(from, 2);
  for (size_t c = text.size() - 2; c >= from; --c) {
    if (IsSafeCut(text, c, specials)) return c;
    if (c == from) break;
  }
  return 0;
}

}  // namespace lmkit::bpe
