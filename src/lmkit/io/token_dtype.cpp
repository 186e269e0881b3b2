#include "lmkit/io/token_dtype.h"

#include <array>
#include <string>

namespace lmkit::io {
namespace {

constexpr std::array<TokenDtypeEntry, 3> kTokenDtypes = {{
    {TokenDtype::kAuto, "auto"},
    {TokenDtype::kU16, "uint16"},
    {TokenDtype::kU32, "uint32"},
}};

}  // namespace

std::span<const TokenDtypeEntry> TokenDtypeTable() { return kTokenDtypes; }

std::string_view TokenDtypeName(TokenDtype t) { return kTokenDtypes[static_cast<size_t>(t)].name; }

Result<TokenDtype> ParseTokenDtype(std::string_view name) {
  for (const auto& e : kTokenDtypes)
    if (e.name == name) return e.dtype;
  if (name == "u16") return TokenDtype::kU16;
  if (name == "u32") return TokenDtype::kU32;
  return Status::InvalidArgument("unknown dtype '" + std::string(name) + "' (expected auto, uint16 or uint32)");
}

unsigned TokenDtypeBytes(TokenDtype t) { return t == TokenDtype::kU16 ? 2 : t == TokenDtype::kU32 ? 4 : 0; }

TokenDtype TokenDtypeOfBytes(unsigned bytes) { return bytes == 2 ? TokenDtype::kU16 : TokenDtype::kU32; }

TokenDtype ResolveAuto(TokenDtype requested, uint64_t id_limit) {
  if (requested != TokenDtype::kAuto) return requested;
  return id_limit <= 65536 ? TokenDtype::kU16 : TokenDtype::kU32;
}

}  // namespace lmkit::io
