// The PCRE2 oracle of the pre-tokenizer patterns: golden splits of its own, Unicode White_Space for \s, and offsets
// of invalid UTF-8 mapped back to the input.
#include "lmkit/bpe/pretokenize/pretokenizer_regex.h"

#include <catch2/catch.hpp>
#include <vector>

using namespace lmkit::bpe;

namespace {

std::vector<size_t> RegexEnds(PretokPattern p, std::string_view text) {
  auto re = RegexPretokenizer::Create(p);
  INFO(re.status().ToString());
  REQUIRE(re.ok());
  return re->Split(text);
}

}  // namespace

TEST_CASE("pretokenizer regex: golden splits of the GPT-2 and cl100k patterns", "[bpe][pretokenizer]") {
  // "Hello" " world" "'s" " 123"
  CHECK(RegexEnds(PretokPattern::kGpt2, "Hello world's 123") == std::vector<size_t>{5, 11, 13, 17});
  // GPT-2 keeps a digit run whole; cl100k cuts it in threes and leaves the space alone.
  CHECK(RegexEnds(PretokPattern::kGpt2, "x 12345") == std::vector<size_t>{1, 7});
  CHECK(RegexEnds(PretokPattern::kCl100k, "x 12345") == std::vector<size_t>{1, 2, 5, 7});
  // Trailing spaces: the run before a word leaves its last space to the word.
  CHECK(RegexEnds(PretokPattern::kGpt2, "a   b") == std::vector<size_t>{1, 3, 5});
  CHECK(RegexEnds(PretokPattern::kGpt2, "").empty());
}

TEST_CASE("pretokenizer regex: whitespace is Unicode White_Space, U+0085 included", "[bpe][pretokenizer]") {
  for (PretokPattern p : {PretokPattern::kGpt2, PretokPattern::kCl100k, PretokPattern::kO200k}) {
    const std::string pat = Pcre2PatternFor(p);
    CHECK(pat.find("\\x{85}") != std::string::npos);
    auto re = RegexPretokenizer::Create(p);
    REQUIRE(re.ok());
    CHECK(re->pcre2_pattern() == pat);
  }
  // a, NEL, NEL, b: whitespace pieces (PCRE2's own \s would have made the two NELs one punctuation piece: 1, 5, 6).
  CHECK(RegexEnds(PretokPattern::kGpt2,
                  "a\xc2\x85\xc2\x85"
                  "b") == std::vector<size_t>{1, 3, 5, 6});
}

TEST_CASE("pretokenizer regex: an invalid byte is one 'other' character at its own offset", "[bpe][pretokenizer]") {
  // The byte is matched as U+FFFD (3 bytes) but the offsets are the input's.
  CHECK(RegexEnds(PretokPattern::kGpt2,
                  "a\xff"
                  "b") == std::vector<size_t>{1, 2, 3});
  CHECK(RegexEnds(PretokPattern::kGpt2, "ab \xff\xfe") == std::vector<size_t>{2, 5});  // " " + two others: one piece
  auto re = RegexPretokenizer::Create(PretokPattern::kO200k);
  REQUIRE(re.ok());
  const std::string text = "caf\xc3\xa9 \xe2\x82 x";  // a cut euro sign
  const auto ends = re->Split(text);
  REQUIRE_FALSE(ends.empty());
  CHECK(ends.back() == text.size());
  for (size_t i = 1; i < ends.size(); ++i) CHECK(ends[i - 1] < ends[i]);
}
