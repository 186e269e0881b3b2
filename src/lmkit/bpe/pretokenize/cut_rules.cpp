// See cut_rules.h; why the word-start rules are safe for the three patterns is in docs/bpe-encoding.md.
#include "lmkit/bpe/pretokenize/cut_rules.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "lmkit/bpe/pretokenize/ascii_runs.h"

namespace lmkit::bpe {

namespace {

inline bool AsciiAlnum(unsigned char c) { return ascii::IsLetter(c) || (c >= '0' && c <= '9'); }
inline bool AsciiGraph(unsigned char c) { return c >= 0x21 && c <= 0x7E; }

// Whether an occurrence of a special starts in (c - len, c) and ends after c, within `text`.
bool Straddled(std::string_view text, size_t c, const std::vector<std::string>& specials) {
  for (const auto& s : specials) {
    const size_t len = s.size();
    if (len < 2) continue;
    for (size_t start = c >= len - 1 ? c - (len - 1) : 0; start < c; ++start)
      if (start + len <= text.size() && std::memcmp(text.data() + start, s.data(), len) == 0) return true;
  }
  return false;
}

}  // namespace

bool IsLetterSpaceCut(std::string_view text, size_t c) {
  return c > 0 && c < text.size() && ascii::IsLetter(static_cast<unsigned char>(text[c - 1])) &&
         (text[c] == ' ' || text[c] == '\n');
}

size_t LastLetterSpaceCut(std::string_view text, size_t lo, size_t hi) {
  hi = std::min(hi, text.size() == 0 ? 0 : text.size() - 1);
  for (size_t c = hi; c > lo; --c)
    if (IsLetterSpaceCut(text, c)) return c;
  return 0;
}

bool IsWordStartCut(std::string_view text, size_t c) {
  if (c < 2 || c + 1 >= text.size()) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char a = p[c - 1], b = p[c];
  return (a == '\n' && AsciiGraph(p[c - 2]) && AsciiAlnum(b)) ||
         (b == ' ' && ascii::IsLetter(a) && ascii::IsLetter(p[c + 1]));
}

bool IsWordStartCutOutsideSpecials(std::string_view text, size_t c, const std::vector<SpecialToken>& specials) {
  if (!IsWordStartCut(text, c)) return false;
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

size_t LastWordStartCutOutsideSpecials(std::string_view text, size_t from, const std::vector<SpecialToken>& specials) {
  if (text.size() < 3) return 0;
  from = std::max<size_t>(from, 2);
  for (size_t c = text.size() - 2; c >= from; --c) {
    if (IsWordStartCutOutsideSpecials(text, c, specials)) return c;
    if (c == from) break;
  }
  return 0;
}

bool IsNewlineLetterCut(std::string_view text, size_t c) {
  if (c < 2 || c >= text.size()) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  return p[c - 1] == '\n' && AsciiGraph(p[c - 2]) && ascii::IsLetter(p[c]);
}

bool IsNewlineLetterCutOutsideSpecials(std::string_view text, size_t c, const std::vector<SpecialToken>& specials) {
  if (!IsNewlineLetterCut(text, c)) return false;
  for (const auto& s : specials) {
    const size_t len = s.text.size();
    if (len == 0) continue;
    for (size_t start = c >= len ? c - len : 0; start <= c; ++start) {
      if (start + len > text.size()) return false;  // cannot tell yet: not safe
      if (std::memcmp(text.data() + start, s.text.data(), len) == 0) return false;
    }
  }
  return true;
}

namespace {

// Whether an occurrence of a special starts in (c - len, c) and ends after c; nullopt when the text ends too soon to
// tell.
std::optional<bool> StraddledKnown(std::string_view text, size_t c, const std::vector<SpecialToken>& specials) {
  for (const auto& s : specials) {
    const size_t len = s.text.size();
    if (len < 2) continue;
    for (size_t start = c >= len - 1 ? c - (len - 1) : 0; start < c; ++start) {
      if (start + len > text.size()) return std::nullopt;
      if (std::memcmp(text.data() + start, s.text.data(), len) == 0) return true;
    }
  }
  return false;
}

}  // namespace

bool IsSpecialEndCut(std::string_view text, size_t c, const std::vector<SpecialToken>& enders,
                     const std::vector<SpecialToken>& specials) {
  if (c == 0 || c >= text.size()) return false;
  for (const auto& e : enders) {
    const size_t len = e.text.size();
    if (len == 0 || len > c || std::memcmp(text.data() + c - len, e.text.data(), len) != 0) continue;
    const auto at_end = StraddledKnown(text, c, specials);
    const auto at_start = StraddledKnown(text, c - len, specials);
    return at_end.has_value() && at_start.has_value() && !*at_end && !*at_start;
  }
  return false;
}

bool IsWordStartOrSpecialEndCut(std::string_view text, size_t c, const std::vector<std::string>& specials) {
  if (c == 0 || c >= text.size()) return false;
  if (Straddled(text, c, specials)) return false;
  if (IsWordStartCut(text, c)) return true;
  for (const auto& s : specials) {
    const size_t len = s.size();
    if (len == 0 || len > c) continue;
    if (std::memcmp(text.data() + c - len, s.data(), len) == 0 && !Straddled(text, c - len, specials)) return true;
  }
  return false;
}

}  // namespace lmkit::bpe
