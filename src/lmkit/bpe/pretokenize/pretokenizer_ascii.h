// The pre-tokenizers' fast path for ASCII text: most pre-tokens of English text, settled from the bytes alone.
//
// Contract: AsciiPretokenEnd<P>(s, pos, n) returns either 0 (the fast path does not apply: NextPretokenEnd decides)
// or exactly NextPretokenEnd(P, text, pos) for text = s[0, n), 0 <= pos < n. It answers only when every byte that
// decides the result is ASCII (a byte >= 0x80 next to a run could be a letter, digit or space that extends it) and
// leaves the contractions of gpt2 and cl100k to the general path. Inline so that the encoder's loop inlines it;
// NextPretokenEnd tries it first, so the property tests against PCRE2 (pretokenizer_test.cpp) hold it too.
// Pure functions, thread-safe.
//
// Each case is the pattern's own leftmost-first result for ASCII (pretokenizer.cpp explains the alternatives):
//  - gpt2 ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a run of one class.
//  - cl100k and o200k: a letter run may have any one non-letter, non-digit prefix except \r and \n (`(word`,
//    `\tword`); o200k splits letters as [A-Z]*[a-z]+ or [A-Z]+[a-z]*; digits come in groups of at most three; a run of
//    symbols takes the \r and \n (o200k also /) after it.
//  - whitespace: `\s*[\r\n]+` (cl100k, o200k) ends after the run's last \r or \n; else `\s+(?!\S)|\s+` takes the
//    run, less its last character when two or more are followed by a non-space.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "lmkit/bpe/pretokenize/ascii_runs.h"
#include "lmkit/bpe/pretokenize/pretokenizer.h"

namespace lmkit::bpe::ascii {

// The pre-tokenizers' classes of the 256 byte values, as unicode_classes.h classifies the ASCII code points
// (ascii_runs_test.cpp checks the two agree).
enum ByteClass : uint8_t { kSymbol, kLetter, kDigit, kSpace, kNewline, kNonAscii };
inline constexpr std::array<uint8_t, 256> kByteClass = [] {
  std::array<uint8_t, 256> t{};
  for (int b = 0; b < 256; ++b) {
    if (b >= 0x80)
      t[b] = kNonAscii;
    else if (IsLetter(static_cast<unsigned char>(b)))
      t[b] = kLetter;
    else if (b >= '0' && b <= '9')
      t[b] = kDigit;
    else if (b == '\r' || b == '\n')
      t[b] = kNewline;
    else if (b == ' ' || (b >= '\t' && b <= '\r'))
      t[b] = kSpace;
    else
      t[b] = kSymbol;
  }
  return t;
}();

inline unsigned ClassAt(const char* s, size_t i) { return kByteClass[static_cast<unsigned char>(s[i])]; }

// The end of the run of bytes whose class is in `mask` (bits 1 << class), from pos.
inline size_t ClassRunEnd(const char* s, size_t pos, size_t n, unsigned mask) {
  while (pos < n && ((mask >> ClassAt(s, pos)) & 1)) ++pos;
  return pos;
}

// True when a run that stopped at e is really over: the text ends there or the byte there is ASCII.
inline bool StopsInAscii(const char* s, size_t e, size_t n) {
  return e == n || static_cast<unsigned char>(s[e]) < 0x80;
}

// Whitespace starting at pos; 0 when a non-ASCII byte follows the run.
template <bool kNewlineRule>
inline size_t SpaceEnd(const char* s, size_t pos, size_t n) {
  size_t e = pos;
  size_t after_newline = 0;
  for (; e < n; ++e) {
    const unsigned c = ClassAt(s, e);
    if (c == kNewline)
      after_newline = e + 1;
    else if (c != kSpace)
      break;
  }
  if (!StopsInAscii(s, e, n)) return 0;
  if (kNewlineRule && after_newline != 0) return after_newline;
  if (e == n) return e;
  return e - pos >= 2 ? e - 1 : e;
}

// o200k's letters from q: [A-Z]*[a-z]* with at least one letter; 0 when not a word, or when a non-ASCII byte or an
// apostrophe (a contraction) follows.
inline size_t O200kLettersEnd(const char* s, size_t q, size_t n) {
  const size_t e = LowerRunEnd(s, UpperRunEnd(s, q, n), n);
  if (e == q || !StopsInAscii(s, e, n) || (e < n && s[e] == '\'')) return 0;
  return e;
}

template <PretokPattern P>
inline size_t AsciiPretokenEnd(const char* s, size_t pos, size_t n) {
  constexpr unsigned kSymbolBit = 1u << kSymbol;
  const unsigned c0 = ClassAt(s, pos);
  if constexpr (P == PretokPattern::kGpt2) {
    size_t q = pos;
    unsigned c = c0;
    if (s[pos] == ' ' && pos + 1 < n) {
      const unsigned c1 = ClassAt(s, pos + 1);
      if (c1 == kNonAscii) return 0;
      if (c1 <= kDigit) {  // kSymbol, kLetter, kDigit
        q = pos + 1;
        c = c1;
      }
    }
    size_t e;
    switch (c) {
      case kLetter:
        e = LetterRunEnd(s, q + 1, n);
        break;
      case kDigit:
        e = ClassRunEnd(s, q + 1, n, 1u << kDigit);
        break;
      case kSymbol:
        if (q == pos && s[pos] == '\'') return 0;  // a contraction, perhaps
        e = ClassRunEnd(s, q + 1, n, kSymbolBit);
        break;
      case kSpace:
      case kNewline:
        return SpaceEnd<false>(s, pos, n);
      default:
        return 0;
    }
    return StopsInAscii(s, e, n) ? e : 0;
  } else {
    constexpr bool kO200k = P == PretokPattern::kO200k;
    size_t e;
    switch (c0) {
      case kLetter:
        if constexpr (kO200k) return O200kLettersEnd(s, pos, n);
        e = LetterRunEnd(s, pos + 1, n);
        return StopsInAscii(s, e, n) ? e : 0;
      case kDigit:
        e = pos + 1;
        while (e < pos + 3 && e < n && ClassAt(s, e) == kDigit) ++e;
        return e == pos + 3 || StopsInAscii(s, e, n) ? e : 0;
      case kSymbol:
      case kSpace: {
        if (!kO200k && s[pos] == '\'') return 0;  // a contraction, perhaps
        if (pos + 1 == n) return n;
        const unsigned c1 = ClassAt(s, pos + 1);
        if (c1 == kNonAscii) return 0;
        if (c1 == kLetter) {  // a one-character prefix, then letters
          if constexpr (kO200k) return O200kLettersEnd(s, pos + 1, n);
          e = LetterRunEnd(s, pos + 2, n);
          return StopsInAscii(s, e, n) ? e : 0;
        }
        size_t q;
        if (c0 == kSymbol) {
          q = pos + 1;
        } else if (s[pos] == ' ' && c1 == kSymbol) {
          q = pos + 2;
        } else {
          return SpaceEnd<true>(s, pos, n);
        }
        e = ClassRunEnd(s, q, n, kSymbolBit);
        if (!StopsInAscii(s, e, n)) return 0;
        if constexpr (kO200k) {
          while (e < n && (s[e] == '\r' || s[e] == '\n' || s[e] == '/')) ++e;
        } else {
          e = ClassRunEnd(s, e, n, 1u << kNewline);
        }
        return e;
      }
      case kNewline:
        return SpaceEnd<true>(s, pos, n);
      default:
        return 0;
    }
  }
}

}  // namespace lmkit::bpe::ascii
