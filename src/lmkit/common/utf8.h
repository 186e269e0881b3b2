// UTF-8, decoded and encoded one way for all of lmkit (the pre-tokenizers, the byte-level alphabet, the SVG text
// measure and escape).
//
// Contract: DecodeUtf8At(text, pos) (pos < text.size()) gives the code point starting at text[pos] and its length in
// bytes. Well-formed UTF-8 only (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). An ill-formed
// or truncated sequence yields ONE byte as the pseudo code point kInvalidCodePoint, so a caller never drops, merges
// across or reads past an invalid byte (the pre-tokenizers class it as punctuation, the charts print U+FFFD).
// AppendUtf8 writes a valid code point (< 0x110000, not a surrogate). Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lmkit {

inline constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFFu;

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

}  // namespace lmkit
