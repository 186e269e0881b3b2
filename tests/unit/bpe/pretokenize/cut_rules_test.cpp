// Cut rules: the bytes each rule accepts (worked out by hand), and for random texts that every accepted cut keeps the
// pre-tokens (letter-space) or the ids (word-start outside specials) of the whole.
#include "lmkit/bpe/pretokenize/cut_rules.h"

#include <catch2/catch.hpp>
#include <random>

#include "lmkit/bpe/pretokenize/pretokenizer.h"
#include "unit/bpe/encode/encode_test_helpers.h"

using namespace lmkit;
using namespace lmkit::bpe;
using namespace lmkit::bpe::test_helpers;

namespace {

std::vector<std::string_view> Pretokens(PretokPattern p, std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = NextPretokenEnd(p, text, pos);
    REQUIRE(end > pos);
    out.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

}  // namespace

TEST_CASE("cut rules: letter-space cuts", "[bpe][cut_rules]") {
  const std::string t = "ab cd\nE9 f.";
  CHECK(IsLetterSpaceCut(t, 2));        // "b| "
  CHECK(IsLetterSpaceCut(t, 5));        // "d|\n"
  CHECK_FALSE(IsLetterSpaceCut(t, 1));  // "a|b"
  CHECK_FALSE(IsLetterSpaceCut(t, 3));  // " |c"
  CHECK_FALSE(IsLetterSpaceCut(t, 8));  // "9| ": a digit, not a letter
  CHECK_FALSE(IsLetterSpaceCut(t, 0));
  CHECK_FALSE(IsLetterSpaceCut(t, t.size()));
  CHECK_FALSE(IsLetterSpaceCut("\xC3\xA9 x", 2));  // "é| ": not an ASCII letter
  CHECK(LastLetterSpaceCut(t, 0, 100) == 5);
  CHECK(LastLetterSpaceCut(t, 0, 4) == 2);
  CHECK(LastLetterSpaceCut(t, 2, 4) == 0);  // lo itself is excluded
  CHECK(LastLetterSpaceCut(t, 1, 2) == 2);
  CHECK(LastLetterSpaceCut("", 0, 10) == 0);
  CHECK(LastLetterSpaceCut("a ", 0, 10) == 1);  // hi is clipped to text.size() - 1
}

TEST_CASE("cut rules: every letter-space cut keeps the pre-tokens of the whole", "[bpe][cut_rules]") {
  std::mt19937 rng(7);
  const std::vector<std::string> atoms = {"a", "Z", "q",  "x",   "1",  "22", " ", "  ",   "\n", "\r\n", "\t",
                                          ".", "/", "'s", "'LL", "中", "😀",  "!", "\n\n", "ab", "é"};
  for (PretokPattern p : {PretokPattern::kGpt2, PretokPattern::kCl100k, PretokPattern::kO200k}) {
    for (int trial = 0; trial < 60; ++trial) {
      std::string text;
      const size_t n = 5 + rng() % 60;
      for (size_t i = 0; i < n; ++i) text += atoms[rng() % atoms.size()];
      const auto whole = Pretokens(p, text);
      for (size_t c = 1; c < text.size(); ++c) {
        if (!IsLetterSpaceCut(text, c)) continue;
        auto left = Pretokens(p, std::string_view(text).substr(0, c));
        const auto right = Pretokens(p, std::string_view(text).substr(c));
        left.insert(left.end(), right.begin(), right.end());
        INFO(PatternName(p) << " cut " << c << " in " << Json(text).dump());
        REQUIRE(left == whole);
      }
    }
  }
}

TEST_CASE("cut rules: word-start cuts", "[bpe][cut_rules]") {
  const std::string t = "one two\nThree.\n/x";
  CHECK(IsWordStartCut(t, 3));         // "e| t" (rule S)
  CHECK_FALSE(IsWordStartCut(t, 4));   // " |t"
  CHECK(IsWordStartCut(t, 8));         // "o\n|T" (rule N)
  CHECK_FALSE(IsWordStartCut(t, 7));   // "o|\nT"
  CHECK_FALSE(IsWordStartCut(t, 15));  // ".\n|/": '/' may not follow (cl100k and o200k absorb it)
  CHECK_FALSE(IsWordStartCut(t, 0));
  CHECK_FALSE(IsWordStartCut(t, 1));
  CHECK_FALSE(IsWordStartCut("a\n\nb", 3));  // "\n\n|b": X must not be whitespace
  CHECK(IsWordStartCut("x\n9y", 2));         // "x\n|9": a digit may follow a newline
  CHECK_FALSE(IsWordStartCut("a 9", 1));     // "a| 9": rule S needs a letter after the space
  CHECK(IsWordStartCut("ab c", 2));
  CHECK_FALSE(IsWordStartCut("ab ", 2));  // c + 1 must lie inside the text
}

TEST_CASE("cut rules: every word-start cut outside specials splits the encoding exactly", "[bpe][cut_rules][encode]") {
  std::mt19937 rng(11);
  const std::vector<std::string> atoms = {"a",    "Z",    "q",  "x", "1",  "22",  " ",  "  ", "\n",
                                          "\r\n", "\t",   ".",  "/", "'s", "'LL", "中", "😀",  "<|endoftext|>",
                                          "!",    "\n\n", "ab", "é"};
  for (std::string name : {"gpt2", "cl100k_base", "o200k_base"}) {
    const Tokenizer& tok = Builtin(name);
    for (int trial = 0; trial < 60; ++trial) {
      std::string text;
      size_t n = 5 + rng() % 60;
      for (size_t i = 0; i < n; ++i) text += atoms[rng() % atoms.size()];
      auto whole = EncodeAll(tok, text);
      for (size_t c = 2; c + 1 < text.size(); ++c) {
        if (LastWordStartCutOutsideSpecials(std::string_view(text).substr(0, c + 2), c, tok.enabled_specials()) != c)
          continue;
        auto left = EncodeAll(tok, std::string_view(text).substr(0, c));
        auto right = EncodeAll(tok, std::string_view(text).substr(c));
        left.insert(left.end(), right.begin(), right.end());
        INFO(name << " cut " << c << " in " << Json(text).dump());
        REQUIRE(left == whole);
      }
    }
  }
}

TEST_CASE("cut rules: shard cuts (word start or special end)", "[bpe][cut_rules][shard]") {
  const std::vector<std::string> sp = {"<|endoftext|>"};
  const std::string t = "one two\nThree<|endoftext|>four";
  CHECK(IsWordStartOrSpecialEndCut(t, 3, sp));         // "e| t"
  CHECK_FALSE(IsWordStartOrSpecialEndCut(t, 4, sp));   // " |t": inside a pre-token
  CHECK(IsWordStartOrSpecialEndCut(t, 8, sp));         // "o\n|T"
  CHECK_FALSE(IsWordStartOrSpecialEndCut(t, 7, sp));   // "o|\nT"
  CHECK(IsWordStartOrSpecialEndCut(t, 26, sp));        // the end of <|endoftext|> (a document boundary)
  CHECK_FALSE(IsWordStartOrSpecialEndCut(t, 20, sp));  // inside the special token
  CHECK_FALSE(IsWordStartOrSpecialEndCut(t, 0, sp));
  CHECK_FALSE(IsWordStartOrSpecialEndCut(t, t.size(), sp));
  // A special that contains "a b" must not be cut in its middle even though the bytes look safe.
  const std::vector<std::string> sp2 = {"[a b]"};
  CHECK_FALSE(IsWordStartOrSpecialEndCut("x [a b] y", 4, sp2));
  CHECK(IsWordStartOrSpecialEndCut("x [a b] y", 4, {}));
}
