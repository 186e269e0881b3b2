// compressed-tensors "pack-quantized" storage of 8-bit integer weights (the layout llm-compressor writes for int8
// weight-only schemes and vLLM's WNA16 path reads; docs/quant.md cites the source lines). A row of `cols` int8 codes
// becomes PackedWords(cols) little-endian int32 words: code i, offset by +128 to an unsigned byte, is byte i % 4 of
// word i / 4; the bytes past the last code are 0. The original shape goes alongside as `weight_shape`. Pure functions.
#pragma once

#include <cstdint>

namespace lmkit::formats {

// int32 words per packed row of `cols` 8-bit codes.
constexpr uint64_t PackedWords(uint64_t cols) { return (cols + 3) / 4; }

// Writes the PackedWords(cols) * 4 bytes of one packed row.
inline void PackRow8(const int8_t* codes, uint64_t cols, uint8_t* out) {
  uint64_t i = 0;
  for (; i < cols; ++i) out[i] = static_cast<uint8_t>(static_cast<uint8_t>(codes[i]) ^ 0x80u);  // code + 128
  for (; i < PackedWords(cols) * 4; ++i) out[i] = 0;
}

// 4-bit codes ([-8, 7], offset by +8 to a nibble) pack 8 to a word: code i is bits 4 * (i % 8) of word i / 8, i.e.
// the low nibble of byte i / 2 for even i and the high nibble for odd i; the nibbles past the last code are 0.
constexpr uint64_t PackedWords4(uint64_t cols) { return (cols + 7) / 8; }

inline void PackRow4(const int8_t* codes, uint64_t cols, uint8_t* out) {
  for (uint64_t i = 0; i < PackedWords4(cols) * 4; ++i) out[i] = 0;
  for (uint64_t i = 0; i < cols; ++i) out[i / 2] |= static_cast<uint8_t>(((codes[i] + 8) & 0xf) << (4 * (i % 2)));
}

inline int8_t UnpackCode4(const uint8_t* packed_row, uint64_t i) {
  return static_cast<int8_t>(((packed_row[i / 2] >> (4 * (i % 2))) & 0xf) - 8);
}

// Code i of a packed row.
inline int8_t UnpackCode8(const uint8_t* packed_row, uint64_t i) {
  return static_cast<int8_t>(static_cast<int>(packed_row[i]) - 128);
}

}  // namespace lmkit::formats
