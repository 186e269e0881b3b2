// Where a text may be cut so that its two sides pre-tokenize as the whole does: one function per rule, named by the
// bytes around the cut. The rules look only at ASCII bytes (a cut never falls inside a UTF-8 character). The word-start
// rules are proved for the gpt2, cl100k and o200k patterns (docs/bpe-encoding.md, "Streaming"), the newline-letter
// rule also for the tokenizer.json pipelines Pipeline::newline_cut_safe accepts ("Cutting pipelines"); any other
// tokenizer is never cut (Tokenizer::cut_rule). Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/bpe/tokenizer.h"

namespace lmkit::bpe {

// "x| " or "x|\n" with x an ASCII letter (0 < c < text.size()): the training counter's cut of an ordinary span. No
// pre-token of the three patterns runs from a letter into whitespace, so a pre-token boundary lies at c and the
// counts of both sides add up to the whole's (the ids may differ: counting needs boundaries only).
bool IsLetterSpaceCut(std::string_view text, size_t c);
// The largest c with lo < c <= hi (and c < text.size()) that IsLetterSpaceCut accepts, or 0 when there is none.
size_t LastLetterSpaceCut(std::string_view text, size_t lo, size_t hi);

// "X\n|Y" (X printable non-space ASCII, Y an ASCII letter or digit: rule N) or "x| y" (x, y ASCII letters: rule S),
// with 2 <= c and c + 1 < text.size(): a new word starts at c, no pre-token looks past c, and the pattern has no
// look-behind, so encoding both sides gives the ids of the whole (special tokens aside).
bool IsWordStartCut(std::string_view text, size_t c);

// IsWordStartCut and no occurrence of any of `specials` straddles c, so the special-token split is unchanged too; an
// occurrence that might straddle c but runs past the text's end makes c unsafe (it cannot be told yet): the encoder's
// chunk cut. False outside 2 <= c, c + 1 < text.size().
bool IsWordStartCutOutsideSpecials(std::string_view text, size_t c, const std::vector<SpecialToken>& specials);
// The largest c in [max(from, 2), text.size() - 2] that IsWordStartCutOutsideSpecials accepts, or 0 when there is none.
size_t LastWordStartCutOutsideSpecials(std::string_view text, size_t from, const std::vector<SpecialToken>& specials);

// "X\n|Y" with X printable non-space ASCII and Y an ASCII letter (rule N without digits), 2 <= c < text.size().
bool IsNewlineLetterCut(std::string_view text, size_t c);

// IsNewlineLetterCut and no occurrence of any of `specials` starts in [c - len, c] (so none straddles c, ends at c
// or starts at c: an added token's lstrip, rstrip and single_word then look at the same neighbours in the whole and
// in the parts); an occurrence that might, but runs past the text's end, makes c unsafe. The encoder's chunk cut for
// tokenizer.json pipelines.
bool IsNewlineLetterCutOutsideSpecials(std::string_view text, size_t c, const std::vector<SpecialToken>& specials);

// c ends an occurrence of one of `enders` (added tokens without lstrip/rstrip/single_word whose last byte is printable
// non-alphanumeric ASCII, e.g. "</s>", "<|endoftext|>") and no occurrence of any of `specials` straddles that
// occurrence's start or c: the occurrence is matched as a token in the whole text too, so the text after it is a
// segment of its own, normalized and pre-tokenized alone either way (Pipeline::special_end_cut_safe). False when the
// bytes needed to tell run past the text's end, and for c == 0 or c >= text.size().
bool IsSpecialEndCut(std::string_view text, size_t c, const std::vector<SpecialToken>& enders,
                     const std::vector<SpecialToken>& specials);

// The shard cut (dist/shard.h): no special straddles c, and IsWordStartCut holds or c ends a special whose own start
// no occurrence straddles (a document boundary), so the special-token split and the pre-tokens are the whole's. `text`
// holds the whole input or 2·L+2 bytes before c and L+2 after (L = the longest special); false for c == 0, c >= size.
bool IsWordStartOrSpecialEndCut(std::string_view text, size_t c, const std::vector<std::string>& specials);

}  // namespace lmkit::bpe
