// GPT-2's bytes_to_unicode table: the printable form of token bytes used by vocab.json, merges.txt and
// tokenizer.json (byte-level BPE).
//
// Contract: every byte b maps to one code point ByteToCodePoint(b): the 188 printable Latin-1 bytes ('!'..'~',
// '¡'..'¬', '®'..'ÿ') map to themselves, the other 68 bytes, in increasing order, to U+0100, U+0101, ... (so ' ' (0x20)
// is U+0120 'Ġ' and '\n' is U+010A 'Ċ'). BytesToPrintable() writes that form as UTF-8; PrintableToBytes() inverts it
// and fails (kInvalidInput, subject "") on a code point outside the table or on ill-formed UTF-8. Pure functions over
// constant tables, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lmkit/common/status.h"

namespace lmkit::bpe {

uint32_t ByteToCodePoint(uint8_t b);
// The byte a code point stands for, or -1 when it is not in the table.
int CodePointToByte(uint32_t cp);

std::string BytesToPrintable(std::string_view bytes);
void AppendPrintable(std::string& out, std::string_view bytes);
Result<std::string> PrintableToBytes(std::string_view printable);
// PrintableToBytes into *out without building an error: false where PrintableToBytes fails.
bool PrintableToBytesInto(std::string_view printable, std::string* out);

}  // namespace lmkit::bpe
