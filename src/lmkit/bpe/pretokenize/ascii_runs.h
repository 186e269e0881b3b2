// Runs of ASCII letters, eight bytes at a time: the pre-tokenizers' fast path for the pieces most text is made of.
//
// Contract: each *RunEnd(s, pos, n) returns the first index e in [pos, n] such that s[e] is not in the class (or
// e == n), reading only s[pos, n). The classes are exactly the ASCII bytes: letters [A-Za-z], upper [A-Z], lower
// [a-z]; bytes >= 0x80 are never in a class (the caller decides what a non-ASCII byte after a run means). The SWAR
// versions work on any target (portable uint64 arithmetic, no intrinsics) and agree with the *Scalar references on
// every input (tests/unit/bpe/pretokenize/ascii_runs_test.cpp). Pure functions, thread-safe.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace lmkit::bpe::ascii {

constexpr bool IsLetter(unsigned char b) { return static_cast<unsigned char>((b | 0x20) - 'a') < 26; }
constexpr bool IsUpper(unsigned char b) { return static_cast<unsigned char>(b - 'A') < 26; }
constexpr bool IsLower(unsigned char b) { return static_cast<unsigned char>(b - 'a') < 26; }

// Eight bytes at p, byte i of the text in bits 8i..8i+7 on any endianness.
inline uint64_t Load8(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
  return w;
}

inline constexpr uint64_t kOnes = 0x0101010101010101ull;
inline constexpr uint64_t kHigh = 0x8080808080808080ull;

// Bit 7 of byte i set iff lo <= byte i <= hi (0 < lo <= hi < 0x80). On the low seven bits v of a byte, v + (0x80 - lo)
// reaches bit 7 iff v >= lo and cannot carry into the next byte; bytes with bit 7 set are cleared by `~w`.
inline uint64_t InRange(uint64_t w, unsigned lo, unsigned hi) {
  const uint64_t v = w & ~kHigh;
  return (v + kOnes * (0x80 - lo)) & ~(v + kOnes * (0x80 - hi - 1)) & ~w & kHigh;
}
inline uint64_t LetterMask(uint64_t w) { return InRange(w | (kOnes * 0x20), 'a', 'z'); }
inline uint64_t UpperMask(uint64_t w) { return InRange(w, 'A', 'Z'); }
inline uint64_t LowerMask(uint64_t w) { return InRange(w, 'a', 'z'); }

// How many of the eight bytes, from the first, have bit 7 set in `mask` (0..8).
inline size_t LeadingCount(uint64_t mask) { return static_cast<size_t>(std::countr_zero(~mask & kHigh)) >> 3; }

template <bool (*InClass)(unsigned char)>
inline size_t RunEndScalar(const char* s, size_t pos, size_t n) {
  while (pos < n && InClass(static_cast<unsigned char>(s[pos]))) ++pos;
  return pos;
}

template <uint64_t (*Mask)(uint64_t), bool (*InClass)(unsigned char)>
inline size_t RunEnd(const char* s, size_t pos, size_t n) {
  while (pos + 8 <= n) {
    const size_t k = LeadingCount(Mask(Load8(s + pos)));
    pos += k;
    if (k < 8) return pos;
  }
  return RunEndScalar<InClass>(s, pos, n);
}

inline size_t LetterRunEndScalar(const char* s, size_t pos, size_t n) { return RunEndScalar<IsLetter>(s, pos, n); }
inline size_t UpperRunEndScalar(const char* s, size_t pos, size_t n) { return RunEndScalar<IsUpper>(s, pos, n); }
inline size_t LowerRunEndScalar(const char* s, size_t pos, size_t n) { return RunEndScalar<IsLower>(s, pos, n); }
inline size_t LetterRunEnd(const char* s, size_t pos, size_t n) { return RunEnd<LetterMask, IsLetter>(s, pos, n); }
inline size_t UpperRunEnd(const char* s, size_t pos, size_t n) { return RunEnd<UpperMask, IsUpper>(s, pos, n); }
inline size_t LowerRunEnd(const char* s, size_t pos, size_t n) { return RunEnd<LowerMask, IsLower>(s, pos, n); }

}  // namespace lmkit::bpe::ascii
