// Where a text may be cut so that encoding the two parts separately gives exactly the ids of the whole.
//
// Contract: LastSafeCut(text, from, specials) returns the largest c in [max(from, 2), text.size() - 2] that
// IsPatternSafeCut accepts and that no occurrence of any of `specials` straddles, or 0 when there is none. The
// pattern rules (proved for the gpt2, cl100k and o200k patterns in docs/bpe-encoding.md) look only at ASCII bytes:
// "X\n|Y" with X printable non-space ASCII and Y an ASCII letter or digit, or "x| y" with x, y ASCII letters. A
// special that might straddle c but extends past the text's end makes c unsafe (it cannot be told yet).
// IsPatternSafeCut(text, c) is the pattern part alone: true when 2 <= c, c + 1 < text.size() and the bytes around c
// match a rule (the shard splitter, shard.h, adds its own special-token rules). Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "lmkit/bpe/tokenizer.h"

namespace lmkit::bpe {

size_t LastSafeCut(std::string_view text, size_t from, const std::vector<SpecialToken>& specials);
bool IsPatternSafeCut(std::string_view text, size_t c);
// IsPatternSafeCut and no occurrence of `specials` straddling c (requires 2 <= c, c + 1 < text.size()).
bool IsSafeCut(std::string_view text, size_t c, const std::vector<SpecialToken>& specials);

}  // namespace lmkit::bpe
