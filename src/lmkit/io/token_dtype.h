// The id width of a token file — the one vocabulary of `bpe encode`/`bpe decode`, `dataload`, `eval` and the token
// file reader and writer: uint16 (nanoGPT's convention, ids below 65,536) or uint32, or auto (resolved by the caller
// from the vocabulary size).
//
// Contract: pure functions over a fixed table, thread-safe. Names are "auto", "uint16", "uint32"; ParseTokenDtype also
// takes numpy's short spellings "u16" and "u32".
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "lmkit/common/status.h"

namespace lmkit::io {

enum class TokenDtype : uint8_t { kAuto, kU16, kU32 };

struct TokenDtypeEntry {
  TokenDtype dtype;
  std::string_view name;
};
// Every dtype with its name, in the order auto, uint16, uint32 (for help text and option checks).
std::span<const TokenDtypeEntry> TokenDtypeTable();

std::string_view TokenDtypeName(TokenDtype t);
// Errors: kInvalidArgument "unknown dtype 'x' (expected auto, uint16 or uint32)".
Result<TokenDtype> ParseTokenDtype(std::string_view name);
// Bytes per id: 2 or 4; 0 for kAuto.
unsigned TokenDtypeBytes(TokenDtype t);
// kU16 for 2, kU32 for anything else.
TokenDtype TokenDtypeOfBytes(unsigned bytes);
// kAuto → kU16 when every id below `id_limit` fits 16 bits (id_limit ≤ 65,536), else kU32; others unchanged.
TokenDtype ResolveAuto(TokenDtype requested, uint64_t id_limit);

}  // namespace lmkit::io
