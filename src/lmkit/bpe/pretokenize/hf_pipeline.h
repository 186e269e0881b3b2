// The parts of a Hugging Face tokenizer.json pipeline that run before the BPE model: normalizers and pre-tokenizers,
// with Hugging Face tokenizers' semantics (docs/bpe-encoding.md "tokenizer.json pipelines" lists what is implemented
// and the sources of each rule).
//
// Contract: a Pipeline is built once by the tokenizer.json reader and is then immutable and thread-safe (matching
// allocates its own PCRE2 match data; callers pass their own buffers).
// - Normalize(text, out) applies the normalizer steps in order to one segment of text (the text between added
//   tokens). `text` must be valid UTF-8 (callers cut invalid bytes out first).
// - PreTokenize(text, at_start, splits) cuts the normalized segment into the words the model encodes; a step may also
//   rewrite the text (Metaspace: ' ' -> '▁' and a prepended '▁'; ByteLevel's add_prefix_space). `at_start` says the
//   segment starts the whole input (Metaspace's prepend_scheme "first"). Empty words are dropped.
// Regexes: patterns are written for Oniguruma (Hugging Face's engine, Unicode 16.0) and compiled by PCRE2 with UTF,
// UCP and JIT; \s, \S, \w, \W are rewritten to Oniguruma's Unicode meaning (White_Space; Letter, Mark,
// Decimal_Number, Connector_Punctuation) and general-category properties (\p{L}, \P{N}, \p{^P}, inside classes too)
// are spelled by lmkit's Unicode 16.0 tables (unicode_categories.h) before compiling, so the system PCRE2's older
// tables (Debian 12: Unicode 14.0) do not matter; inside a case-insensitive group PCRE2's own \p{..} is kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lmkit/bpe/pretokenize/pretokenizer.h"
#include "lmkit/common/status.h"

namespace lmkit::bpe {

// A compiled regex. Immutable; FindAll is thread-safe.
class HfRegex {
 public:
  // kInvalidArgument (PCRE2's message and offset) when the pattern does not compile.
  static Result<std::shared_ptr<const HfRegex>> Compile(std::string_view onig_pattern);
  ~HfRegex();
  // The non-overlapping matches in `text` (valid UTF-8), leftmost first, as [begin, end) pairs; after an empty match
  // the search resumes one character later.
  void FindAll(std::string_view text, std::vector<std::pair<size_t, size_t>>* out) const;
  // True when the regex matches somewhere in text.
  bool Matches(std::string_view text) const;
  const std::string& pcre2_pattern() const { return pattern_; }
  // The pattern as the file spells it (Oniguruma).
  const std::string& onig_pattern() const { return onig_; }

 private:
  HfRegex() = default;
  // The compiled code for `text`: code_, or fast_ when the text holds no code point new since Unicode 14.0.
  void* CodeFor(std::string_view text) const;
  std::string pattern_, onig_;
  void* code_ = nullptr;  // pcre2_code_8
  void* fast_ = nullptr;  // the pattern with PCRE2's own \p{..} (when PCRE2 is at Unicode 14.0-16.0), or null
};

// Oniguruma's \s \S \w \W and general-category \p{..} (and the same inside brackets) spelled for PCRE2 by Unicode
// 16.0 (`unicode16`; else \p{..} is left to PCRE2's own tables). kInvalidArgument for \W or \S inside a negated
// bracket, which has no PCRE2 spelling here.
Result<std::string> OnigToPcre2(std::string_view pattern, bool unicode16 = true);

// Hugging Face's SplitDelimiterBehavior.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct NormalizerStep {
  enum class Kind { kNfc, kNfd, kNfkc, kNfkd, kLowercase, kStrip, kPrepend, kReplace };
  Kind kind = Kind::kNfc;
  bool left = false, right = false;      // Strip
  std::string text;                      // Prepend: the prefix; Replace: the replacement
  std::string literal;                   // Replace: a plain-string pattern (when regex is null)
  std::shared_ptr<const HfRegex> regex;  // Replace: a regex pattern
};

struct PreTokenizerStep {
  enum class Kind {
    kSplit,      // regex + behavior + invert (also Digits, Punctuation, Whitespace, WhitespaceSplit, string patterns)
    kKnown,      // one of the hand-written patterns, Isolated (the same result as its regex, faster)
    kByteLevel,  // add_prefix_space, then the GPT-2 pattern when use_regex
    kMetaspace,  // replacement, prepend_scheme, split
  };
  // kInputStart: SentencePiece's dummy prefix, prepended to the word that starts the input even when it already
  // starts with a space or the replacement (Hugging Face's Metaspace skips those).
  enum class Prepend { kAlways, kFirst, kNever, kInputStart };
  Kind kind = Kind::kSplit;
  std::shared_ptr<const HfRegex> regex;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  PretokPattern known = PretokPattern::kGpt2;
  bool add_prefix_space = false, use_regex = true;  // ByteLevel
  bool to_printable = false;  // a ByteLevel step: later steps see GPT-2's printable form of the bytes
  std::string replacement;    // Metaspace
  Prepend prepend = Prepend::kAlways;
  bool split = true;
};

// Words of one segment: [begin, end) into buf, and whether the word starts the input.
struct PreTokenized {
  struct Word {
    uint32_t begin = 0, end = 0;
    bool at_start = false;
  };
  std::string buf;
  std::vector<Word> words;
  std::string_view word(size_t i) const {
    return std::string_view(buf).substr(words[i].begin, words[i].end - words[i].begin);
  }
};

class Pipeline {
 public:
  std::vector<NormalizerStep> normalizer;
  std::vector<PreTokenizerStep> pre_tokenizer;

  bool has_normalizer() const { return !normalizer.empty(); }
  void Normalize(std::string_view text, std::string* out) const;
  void PreTokenize(std::string_view text, bool at_start, PreTokenized* out) const;
  // True when encoding never changes the bytes (no normalizer, no step that rewrites text).
  bool lossless() const;
  // True when a text cut at "X\n|Y" (X printable non-space ASCII, Y an ASCII letter: IsNewlineLetterCut,
  // cut_rules.h) normalizes and pre-tokenizes as its two sides do, one after the other: every normalizer step is
  // NFC, NFD, NFKC, NFKD or Lowercase (each maps the three bytes to themselves and never joins a character across an
  // ASCII starter), and the pre-tokenizer steps are Isolated splits whose regexes leave the bytes at the cut in words
  // apart (the hand-written patterns, ByteLevel's GPT-2 regex, and the families' regexes listed in hf_pipeline.cpp,
  // each checked by hand in docs/bpe-encoding.md "Cutting pipelines") until one of them puts a word boundary there.
  bool newline_cut_safe() const;
  // True when a segment (the text between two added tokens) encodes alike wherever the input starts: no Metaspace
  // step with prepend_scheme "first".
  bool special_end_cut_safe() const;
};

// Unicode White_Space (Rust's char::is_whitespace).
bool IsUnicodeWhiteSpace(uint32_t cp);

}  // namespace lmkit::bpe
