// The hand-written pre-tokenizer: each OpenAI pattern compiled by hand into a scanner over the Unicode class table.
// pretokenizer_regex.cpp holds the PCRE2-JIT implementation of the same patterns, which is the oracle the unit and
// property tests hold this scanner to (tests/unit/bpe/pretokenize/pretokenizer_test.cpp).
//
// How each alternative of the patterns becomes code (leftmost-first: the first alternative that can match at `pos`
// wins, and inside it the regex engine's greedy/backtracking order decides the length):
//  - `\s+(?!\S)|\s+`: take the maximal whitespace run; if the text ends there take it all, else give back its last
//    character when the run has two or more (that character then prefixes the next word), else take the one character.
//  - `\s*[\r\n]+` (cl100k, o200k): greedy \s* backtracks to the LAST \r or \n of the whitespace run; the match ends
//    just after it.
//  - o200k `P?U*W+C?` (U = [Lu Lt Lm Lo M], W = [Ll Lm Lo M]): U* takes the maximal U run, then backs off to the last
//    position where W can start: the character after the run when it is W (then W+ runs greedily on), else the last
//    W character inside the run (the match ends after it). The optional prefix P is tried taken, then not taken.
//
// Performance notes (measured on this shared 2-core machine, first 32 MiB of debmix.txt, one thread, process CPU time;
// see docs/bpe.md):
//  - PCRE2 10.42 with JIT, one anchored match per pre-token: gpt2 28.7 MB/s, cl100k 38.1, o200k 35.8.
//    This scanner: gpt2 200 MB/s, cl100k 248, o200k 194 (5-7x). Both produce the same 8,490,884 gpt2 pre-tokens there.
//    The scanner wins because a pre-token costs a few table look-ups instead of a JIT call and its bookkeeping.
//  - ASCII bytes skip the UTF-8 decoder and the two-stage table through a 128-entry class table.
//  - gpt2 has a fast path for ASCII "word"/" word" (no decoding, no class look-ups): 200 -> 243 MB/s on the same text.
//    It grew into pretokenizer_ascii.h (all three patterns; words, digits, symbols, whitespace; letters eight bytes at
//    a time), which NextPretokenEnd tries first.
#include "lmkit/bpe/pretokenize/pretokenizer.h"

#include <array>

#include "lmkit/bpe/pretokenize/pretokenizer_ascii.h"
#include "lmkit/bpe/pretokenize/unicode_classes.h"
#include "lmkit/common/name_table.h"

namespace lmkit::bpe {

namespace {

const std::array<CharClass, 128> kAsciiClass = [] {
  std::array<CharClass, 128> t{};
  for (uint32_t c = 0; c < 128; ++c) t[c] = CharClassOf(c);
  return t;
}();

struct Ch {
  uint32_t cp;
  uint32_t len;
  CharClass cls;
};

inline Ch At(std::string_view t, size_t pos) {
  const unsigned char b = static_cast<unsigned char>(t[pos]);
  if (b < 0x80) return {b, 1, kAsciiClass[b]};
  const DecodedChar d = DecodeUtf8At(t, pos);
  return {d.cp, d.len, d.cp == kInvalidCodePoint ? kClassOther : CharClassOf(d.cp)};
}

inline bool IsL(CharClass c) { return c >= kClassLu && c <= kClassLo; }
inline bool IsN(CharClass c) { return c == kClassNumber; }
inline bool IsS(CharClass c) { return c == kClassSpace; }
// [^\s\p{L}\p{N}]
inline bool IsPunct(CharClass c) { return c == kClassOther || c == kClassMark; }
// [^\r\n\p{L}\p{N}]
inline bool IsPrefix(const Ch& c) { return !IsL(c.cls) && !IsN(c.cls) && c.cp != '\r' && c.cp != '\n'; }
// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
inline bool IsUpperish(CharClass c) {
  return c == kClassLu || c == kClassLt || c == kClassLm || c == kClassLo || c == kClassMark;
}
// [\p{Ll}\p{Lm}\p{Lo}\p{M}]
inline bool IsLowerish(CharClass c) { return c == kClassLl || c == kClassLm || c == kClassLo || c == kClassMark; }

template <typename Pred>
inline size_t RunOf(std::string_view t, size_t pos, Pred pred) {
  const size_t n = t.size();
  while (pos < n) {
    const unsigned char b = static_cast<unsigned char>(t[pos]);
    if (b < 0x80) {
      if (!pred(kAsciiClass[b])) break;
      ++pos;
      continue;
    }
    const Ch c = At(t, pos);
    if (!pred(c.cls)) break;
    pos += c.len;
  }
  return pos;
}

// Case-folding equivalents (Unicode simple case folding, as PCRE2 and Rust's regex apply under (?i)) of the ASCII
// letters used by the contractions: only 's' has a non-ASCII one, U+017F LATIN SMALL LETTER LONG S.
inline size_t LetterAt(std::string_view t, size_t pos, char lower, bool ci) {
  if (pos >= t.size()) return 0;
  const char b = t[pos];
  if (b == lower) return 1;
  if (!ci) return 0;
  if (b == lower - 32) return 1;
  if (lower == 's' && pos + 1 < t.size() && static_cast<unsigned char>(b) == 0xC5 &&
      static_cast<unsigned char>(t[pos + 1]) == 0xBF)
    return 2;
  return 0;
}

// 's|'t|'re|'ve|'m|'ll|'d (case-insensitive when ci), at t[pos]; returns the length or 0.
inline size_t ContractionLen(std::string_view t, size_t pos, bool ci) {
  if (pos >= t.size() || t[pos] != '\'') return 0;
  const size_t p = pos + 1;
  size_t k;
  if ((k = LetterAt(t, p, 's', ci))) return 1 + k;
  if ((k = LetterAt(t, p, 't', ci))) return 1 + k;
  if (size_t k1 = LetterAt(t, p, 'r', ci)) {
    if (size_t k2 = LetterAt(t, p + k1, 'e', ci)) return 1 + k1 + k2;
  }
  if (size_t k1 = LetterAt(t, p, 'v', ci)) {
    if (size_t k2 = LetterAt(t, p + k1, 'e', ci)) return 1 + k1 + k2;
  }
  if ((k = LetterAt(t, p, 'm', ci))) return 1 + k;
  if (size_t k1 = LetterAt(t, p, 'l', ci)) {
    if (size_t k2 = LetterAt(t, p + k1, 'l', ci)) return 1 + k1 + k2;
  }
  if ((k = LetterAt(t, p, 'd', ci))) return 1 + k;
  return 0;
}

// The whitespace alternatives at a whitespace character: [\s*[\r\n]+ |] \s+(?!\S) | \s+.
inline size_t WhitespaceEnd(std::string_view t, size_t pos, bool newline_rule) {
  const size_t n = t.size();
  size_t e = pos;
  size_t last_start = pos;
  size_t after_newline = 0;  // end of the last \r or \n in the run; 0 = none
  size_t chars = 0;
  while (e < n) {
    const Ch c = At(t, e);
    if (!IsS(c.cls)) break;
    last_start = e;
    e += c.len;
    ++chars;
    if (c.cp == '\r' || c.cp == '\n') after_newline = e;
  }
  if (newline_rule && after_newline != 0) return after_newline;
  if (e == n) return e;
  return chars >= 2 ? last_start : e;
}

size_t Gpt2End(std::string_view t, size_t pos) {
  const Ch c = At(t, pos);
  if (c.cp == '\'') {
    if (size_t k = ContractionLen(t, pos, false)) return pos + k;
  }
  size_t q = pos;
  CharClass d = c.cls;
  if (c.cp == ' ' && pos + 1 < t.size()) {
    const Ch nx = At(t, pos + 1);
    if (!IsS(nx.cls)) {
      q = pos + 1;
      d = nx.cls;
    }
  }
  if (IsL(d)) return RunOf(t, q, IsL);
  if (IsN(d)) return RunOf(t, q, IsN);
  if (IsPunct(d)) return RunOf(t, q, IsPunct);
  return WhitespaceEnd(t, pos, false);
}

inline size_t NewlinesAfter(std::string_view t, size_t e, bool slash) {
  while (e < t.size() && (t[e] == '\r' || t[e] == '\n' || (slash && t[e] == '/'))) ++e;
  return e;
}

size_t DigitsEnd(std::string_view t, size_t pos) {
  size_t e = pos;
  for (int i = 0; i < 3 && e < t.size(); ++i) {
    const Ch c = At(t, e);
    if (!IsN(c.cls)) break;
    e += c.len;
  }
  return e;
}

size_t Cl100kEnd(std::string_view t, size_t pos) {
  const size_t n = t.size();
  const Ch c = At(t, pos);
  if (c.cp == '\'') {
    if (size_t k = ContractionLen(t, pos, true)) return pos + k;
  }
  if (IsL(c.cls)) return RunOf(t, pos, IsL);
  if (IsPrefix(c) && pos + c.len < n) {
    if (IsL(At(t, pos + c.len).cls)) return RunOf(t, pos + c.len, IsL);
  }
  if (IsN(c.cls)) return DigitsEnd(t, pos);
  size_t q = pos;
  CharClass d = c.cls;
  if (c.cp == ' ' && pos + 1 < n) {
    const Ch nx = At(t, pos + 1);
    if (IsPunct(nx.cls)) {
      q = pos + 1;
      d = nx.cls;
    }
  }
  if (IsPunct(d)) return NewlinesAfter(t, RunOf(t, q, IsPunct), false);
  return WhitespaceEnd(t, pos, true);
}

// o200k: U* W+ C? at q (the first alternative without its prefix). Returns the end or 0 when it cannot match.
size_t O200kAlt1(std::string_view t, size_t q) {
  const size_t n = t.size();
  size_t e = q;
  size_t last_w_end = 0;
  while (e < n) {
    const Ch c = At(t, e);
    if (!IsUpperish(c.cls)) break;
    e += c.len;
    if (IsLowerish(c.cls)) last_w_end = e;
  }
  size_t end;
  if (e < n && IsLowerish(At(t, e).cls)) {
    end = RunOf(t, e, IsLowerish);
  } else if (last_w_end != 0) {
    end = last_w_end;
  } else {
    return 0;
  }
  return end + ContractionLen(t, end, true);
}

// o200k: U+ W* C? at q.
size_t O200kAlt2(std::string_view t, size_t q) {
  if (q >= t.size() || !IsUpperish(At(t, q).cls)) return 0;
  size_t end = RunOf(t, RunOf(t, q, IsUpperish), IsLowerish);
  return end + ContractionLen(t, end, true);
}

size_t O200kEnd(std::string_view t, size_t pos) {
  const size_t n = t.size();
  const Ch c = At(t, pos);
  const bool prefix = IsPrefix(c) && pos + c.len < n;
  size_t e;
  if (prefix && (e = O200kAlt1(t, pos + c.len))) return e;
  if ((e = O200kAlt1(t, pos))) return e;
  if (prefix && (e = O200kAlt2(t, pos + c.len))) return e;
  if ((e = O200kAlt2(t, pos))) return e;
  if (IsN(c.cls)) return DigitsEnd(t, pos);
  size_t q = pos;
  CharClass d = c.cls;
  if (c.cp == ' ' && pos + 1 < n) {
    const Ch nx = At(t, pos + 1);
    if (IsPunct(nx.cls)) {
      q = pos + 1;
      d = nx.cls;
    }
  }
  if (IsPunct(d)) return NewlinesAfter(t, RunOf(t, q, IsPunct), true);
  return WhitespaceEnd(t, pos, true);
}

}  // namespace

Result<PretokPattern> PatternFromName(std::string_view name) {
  if (const auto* e = FindByName(kPatternNames, name)) return e->pattern;
  return Status::InvalidArgument("unknown pre-tokenizer pattern '" + std::string(name) +
                                 "' (expected gpt2, cl100k or o200k)");
}

std::string_view PatternName(PretokPattern p) { return NameOf(kPatternNames, &PatternEntry::pattern, p, "gpt2"); }

std::string_view PatternRegex(PretokPattern p) {
  switch (p) {
    case PretokPattern::kGpt2:
      return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
    case PretokPattern::kCl100k:
      return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    case PretokPattern::kO200k:
      return R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  }
  return {};
}

size_t NextPretokenEnd(PretokPattern pattern, std::string_view text, size_t pos) {
  const char* s = text.data();
  const size_t n = text.size();
  size_t e = 0;
  switch (pattern) {
    case PretokPattern::kGpt2:
      e = ascii::AsciiPretokenEnd<PretokPattern::kGpt2>(s, pos, n);
      break;
    case PretokPattern::kCl100k:
      e = ascii::AsciiPretokenEnd<PretokPattern::kCl100k>(s, pos, n);
      break;
    case PretokPattern::kO200k:
      e = ascii::AsciiPretokenEnd<PretokPattern::kO200k>(s, pos, n);
      break;
  }
  return e != 0 ? e : NextPretokenEndGeneral(pattern, text, pos);
}

size_t NextPretokenEndGeneral(PretokPattern pattern, std::string_view text, size_t pos) {
  switch (pattern) {
    case PretokPattern::kGpt2:
      return Gpt2End(text, pos);
    case PretokPattern::kCl100k:
      return Cl100kEnd(text, pos);
    case PretokPattern::kO200k:
      return O200kEnd(text, pos);
  }
  return text.size();
}

}  // namespace lmkit::bpe
