// Unicode character classes for pre-tokenization, and the UTF-8 decoding rule every lmkit pre-tokenizer uses.
//
// Contract: CharClassOf(cp) gives the class of a code point (cp < 0x110000; larger values are kOther) as the
// pre-tokenizer regexes see it: the general categories Lu Ll Lt Lm Lo, marks (M = Mn|Mc|Me), numbers (N = Nd|Nl|No),
// whitespace (Unicode White_Space: \t..\r, U+0085 and the Z categories, which is what tiktoken's Rust regex means by
// \s) and everything else. The table (unicode_classes_table.cpp) is GENERATED from PCRE2's Unicode database by
// GenerateCharClassTable() (unicode_classes_gen.h); the unit test `[unicode_classes]` regenerates it and fails if the
// committed table differs. To regenerate after a PCRE2 upgrade: `./build/lmkit_tests "[.regen_unicode]"` rewrites
// src/lmkit/bpe/unicode_classes_table.cpp.
//
// DecodeUtf8At(text, pos): the code point starting at text[pos] and its length in bytes. Well-formed UTF-8 only
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). An ill-formed or truncated sequence yields
// ONE byte as a pseudo code point kInvalidCodePoint whose class is kOther: invalid bytes therefore behave like
// punctuation and are never dropped, merged across, or read past the end. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lmkit::bpe {

enum CharClass : uint8_t {
  kClassOther = 0,
  kClassLu = 1,
  kClassLl = 2,
  kClassLt = 3,
  kClassLm = 4,
  kClassLo = 5,
  kClassMark = 6,
  kClassNumber = 7,
  kClassSpace = 8,
  kNumCharClasses = 9,
};

inline constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFFu;

namespace unicode_detail {
// Two-stage table: kStage1[cp >> 8] is a block number, kStage2[block * 256 + (cp & 255)] the class.
extern const uint16_t kStage1[0x1100];
extern const uint8_t kStage2[];
extern const size_t kStage2Size;
}  // namespace unicode_detail

inline CharClass CharClassOf(uint32_t cp) {
  if (cp >= 0x110000) return kClassOther;
  return static_cast<CharClass>(unicode_detail::kStage2[unicode_detail::kStage1[cp >> 8] * 256u + (cp & 255u)]);
}

inline bool IsLetterClass(CharClass c) { return c >= kClassLu && c <= kClassLo; }

struct DecodedChar {
  uint32_t cp;   // kInvalidCodePoint for an ill-formed byte
  uint32_t len;  // 1..4, never 0
};

inline DecodedChar DecodeUtf8At(std::string_view text, size_t pos) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  const unsigned c0 = s[pos];
  if (c0 < 0x80) return {c0, 1};
  auto cont = [&](size_t i) { return i < n && (s[i] & 0xC0) == 0x80; };
  if (c0 >= 0xC2 && c0 <= 0xDF) {
    if (cont(pos + 1)) return {((c0 & 0x1Fu) << 6) | (s[pos + 1] & 0x3Fu), 2};
  } else if (c0 >= 0xE0 && c0 <= 0xEF) {
    if (cont(pos + 1) && cont(pos + 2)) {
      const uint32_t cp = ((c0 & 0x0Fu) << 12) | ((s[pos + 1] & 0x3Fu) << 6) | (s[pos + 2] & 0x3Fu);
      if (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) return {cp, 3};
    }
  } else if (c0 >= 0xF0 && c0 <= 0xF4) {
    if (cont(pos + 1) && cont(pos + 2) && cont(pos + 3)) {
      const uint32_t cp =
          ((c0 & 0x07u) << 18) | ((s[pos + 1] & 0x3Fu) << 12) | ((s[pos + 2] & 0x3Fu) << 6) | (s[pos + 3] & 0x3Fu);
      if (cp >= 0x10000 && cp <= 0x10FFFF) return {cp, 4};
    }
  }
  return {kInvalidCodePoint, 1};
}

// Appends the UTF-8 form of a valid code point to `out` (cp must be < 0x110000 and not a surrogate).
template <typename String>
inline void AppendUtf8(String& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace lmkit::bpe
