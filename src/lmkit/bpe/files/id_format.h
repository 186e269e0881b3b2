// The formats `lmkit bpe encode` writes ids in (and `decode` reads): names, defaults and the one text rendering.
//
// Contract: bin: raw little-endian ids; npy: a 1-D .npy array; json: one array `[1,2,3]` and a newline; text: one
// token per line, `id<TAB>bytes` with the bytes as QuoteTokenBytes writes them (docs/bpe-encoding.md). Name tables
// (kIdFormatNames, kIdDtypeNames) drive both parsing and help. Errors: kInvalidArgument (an unknown name; uint16 for
// a vocabulary that does not fit, naming Field("dtype")). Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "lmkit/bpe/tokenizer.h"
#include "lmkit/common/status.h"
#include "lmkit/io/token_dtype.h"

namespace lmkit::bpe {

enum class IdFormat { kBin, kNpy, kJson, kText };
// The id width of bin/npy files is the token file's (io/token_dtype.h), so `dataload` and `eval` read what we write.
using IdDtype = io::TokenDtype;

struct IdFormatEntry {
  std::string_view name;
  IdFormat format;
};
inline constexpr IdFormatEntry kIdFormatNames[] = {
    {"bin", IdFormat::kBin}, {"npy", IdFormat::kNpy}, {"json", IdFormat::kJson}, {"text", IdFormat::kText}};

// The accepted spellings; the first of each dtype is its name.
struct IdDtypeEntry {
  std::string_view name;
  IdDtype dtype;
};
inline constexpr IdDtypeEntry kIdDtypeNames[] = {{"auto", IdDtype::kAuto},
                                                 {"uint16", IdDtype::kU16},
                                                 {"uint32", IdDtype::kU32},
                                                 {"u16", IdDtype::kU16},
                                                 {"u32", IdDtype::kU32}};

Result<IdFormat> IdFormatFromName(std::string_view name);  // bin | npy | json | text
std::string_view IdFormatName(IdFormat f);
// .npy → npy, .json → json, .txt → text, anything else → bin.
IdFormat IdFormatFromPath(const std::string& path);
Result<IdDtype> IdDtypeFromName(std::string_view name);  // auto | uint16 | uint32
std::string_view IdDtypeName(IdDtype d);
// auto: uint16 when every id of the tokenizer fits, else uint32. Errors: kInvalidArgument for uint16 with larger ids.
Result<IdDtype> ResolveDtype(IdDtype requested, const Tokenizer& tokenizer);

// The token's bytes as a double-quoted string: printable ASCII as is (\" and \\ escaped), \n \r \t, other
// control bytes as \u00XX, valid UTF-8 sequences as is, any other byte as \xNN. Used by the text format.
std::string QuoteTokenBytes(std::string_view bytes);

}  // namespace lmkit::bpe
