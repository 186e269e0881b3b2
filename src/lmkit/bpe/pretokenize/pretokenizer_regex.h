// The PCRE2-JIT implementation of the three pre-tokenizer patterns: the ORACLE that the hand-written scanner
// (NextPretokenEnd, pretokenizer.h) is proven equal to, and the baseline the scanner was measured against.
//
// Contract: RegexPretokenizer::Create compiles PatternRegex(p) with PCRE2_UTF|PCRE2_UCP and JIT, with one change:
// `\s`/`\S` are spelled as Unicode White_Space ([\t-\r\x{85}\p{Z}]), which is what tiktoken's Rust regex means and
// what PCRE2's own \s is not (it leaves out U+0085). Split(text) returns the end offset of every pre-token, in order;
// the last is text.size(). Invalid UTF-8 follows the scanner's documented rule (each ill-formed byte is one character
// of class "other"): such bytes are replaced by U+FFFD (class So, also "other") before matching and offsets are mapped
// back. A compiled object is immutable; Split is thread-safe (it allocates its own match data).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/bpe/pretokenize/pretokenizer.h"
#include "lmkit/common/status.h"

namespace lmkit::bpe {

class RegexPretokenizer {
 public:
  static Result<RegexPretokenizer> Create(PretokPattern pattern);

  std::vector<size_t> Split(std::string_view text) const;
  // The PCRE2 pattern actually compiled.
  const std::string& pcre2_pattern() const { return pattern_; }

 private:
  struct Code;
  std::string pattern_;
  std::shared_ptr<Code> code_;
};

// PatternRegex(p) with \s and \S rewritten as described above.
std::string Pcre2PatternFor(PretokPattern p);

}  // namespace lmkit::bpe
