// Pre-tokenization: cutting text into the pieces inside which BPE merges happen.
//
// Contract: the three OpenAI patterns, exactly
// as tiktoken publishes them (PatternRegex). NextPretokenEnd(p, text, pos) returns the end (exclusive, > pos) of the
// pre-token that the pattern's leftmost-first match yields at `pos`, for 0 <= pos < text.size(), looking at the whole
// of `text` (the lookahead `\s+(?!\S)` needs the character after the run). Pre-tokens are contiguous and cover the
// text exactly. Invalid UTF-8 never crashes; its treatment is documented in docs/bpe.md. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "lmkit/common/status.h"

namespace lmkit::bpe {

enum class PretokPattern { kGpt2, kCl100k, kO200k };

// The accepted spellings, for parsing and help; the first of each pattern is its name.
struct PatternEntry {
  std::string_view name;
  PretokPattern pattern;
};
inline constexpr PatternEntry kPatternNames[] = {{"gpt2", PretokPattern::kGpt2},
                                                 {"cl100k", PretokPattern::kCl100k},
                                                 {"o200k", PretokPattern::kO200k},
                                                 {"cl100k_base", PretokPattern::kCl100k},
                                                 {"o200k_base", PretokPattern::kO200k}};

// "gpt2", "cl100k" (or "cl100k_base"), "o200k" (or "o200k_base"); kInvalidArgument otherwise.
Result<PretokPattern> PatternFromName(std::string_view name);
std::string_view PatternName(PretokPattern p);
std::string_view PatternRegex(PretokPattern p);

size_t NextPretokenEnd(PretokPattern pattern, std::string_view text, size_t pos);
// The same result without trying the ASCII fast path first (pretokenizer_ascii.h): for callers that already did.
size_t NextPretokenEndGeneral(PretokPattern pattern, std::string_view text, size_t pos);

}  // namespace lmkit::bpe
