// The hand-written pre-tokenizer against its PCRE2-JIT oracle (on real text and on generated Unicode text), plus
// golden splits worked out by hand from the patterns.
#include "lmkit/bpe/pretokenize/pretokenizer.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <random>

#include "lmkit/bpe/pretokenize/pretokenizer_regex.h"
#include "lmkit/bpe/pretokenize/unicode_classes.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::bpe;

namespace {

std::vector<std::string> ScanSplit(PretokPattern p, std::string_view text) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = NextPretokenEnd(p, text, pos);
    REQUIRE(end > pos);
    REQUIRE(end <= text.size());
    out.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

std::vector<std::string> RegexSplit(const RegexPretokenizer& re, std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (size_t end : re.Split(text)) {
    out.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

const PretokPattern kAll[] = {PretokPattern::kGpt2, PretokPattern::kCl100k, PretokPattern::kO200k};

std::string U8(uint32_t cp) {
  std::string s;
  AppendUtf8(s, cp);
  return s;
}

// Draws 20,000 texts of 1-24 pieces of `pool` (each text biased towards six of them, so that runs of letters, spaces,
// marks... form) and asks same(pattern, its PCRE2 oracle, text) for each pattern. A text where it is false fails the
// test with its bytes; the search stops after 5 of them. Returns how many there were.
template <typename Same>
int PoolTextsAgree(const std::vector<std::string>& pool, uint64_t seed, Same same) {
  std::mt19937_64 rng(seed);
  RegexPretokenizer res[3] = {*RegexPretokenizer::Create(kAll[0]), *RegexPretokenizer::Create(kAll[1]),
                              *RegexPretokenizer::Create(kAll[2])};
  int mismatches = 0;
  for (int iter = 0; iter < 20000 && mismatches < 5; ++iter) {
    std::string text;
    const int pieces = 1 + static_cast<int>(rng() % 24);
    std::vector<size_t> local;
    for (int k = 0; k < 6; ++k) local.push_back(rng() % pool.size());
    for (int k = 0; k < pieces; ++k) text += pool[(rng() % 3 == 0) ? rng() % pool.size() : local[rng() % 6]];
    for (int pi = 0; pi < 3; ++pi) {
      if (same(kAll[pi], res[pi], text)) continue;
      ++mismatches;
      std::string hex;
      for (unsigned char c : text) hex += fmt::format("{:02x} ", c);
      FAIL_CHECK(PatternName(kAll[pi]) << " differs on bytes: " << hex);
    }
  }
  return mismatches;
}

}  // namespace

TEST_CASE("pretokenizer: pattern names and regexes", "[bpe][pretokenizer]") {
  CHECK(*PatternFromName("gpt2") == PretokPattern::kGpt2);
  CHECK(*PatternFromName("cl100k_base") == PretokPattern::kCl100k);
  CHECK(*PatternFromName("o200k") == PretokPattern::kO200k);
  CHECK_FALSE(PatternFromName("p50k").ok());
  CHECK(PatternName(PretokPattern::kO200k) == "o200k");
  // Exactly the pat_str of tiktoken's published encodings (tests/data/bpe has no copy; the strings are short).
  CHECK(PatternRegex(PretokPattern::kGpt2) ==
        R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  CHECK(Pcre2PatternFor(PretokPattern::kGpt2).find("\\s") == std::string::npos);
}

TEST_CASE("pretokenizer: golden GPT-2 splits", "[bpe][pretokenizer]") {
  using V = std::vector<std::string>;
  const auto p = PretokPattern::kGpt2;
  CHECK(ScanSplit(p, "Hello, world! It's   2024.") == V{"Hello", ",", " world", "!", " It", "'s", "  ", " 2024", "."});
  CHECK(ScanSplit(p, "some text that i'll pre-tokenize") ==
        V{"some", " text", " that", " i", "'ll", " pre", "-", "tokenize"});
  CHECK(ScanSplit(p, "a\n\nb  ") == V{"a", "\n", "\n", "b", "  "});
  CHECK(ScanSplit(p, "x \t\ty") == V{"x", " \t", "\t", "y"});
  CHECK(ScanSplit(p, "'S 'twas") == V{"'", "S", " '", "twas"});  // GPT-2 contractions are case-sensitive
  CHECK(ScanSplit(p, "") == V{});
}

TEST_CASE("pretokenizer: golden cl100k and o200k splits", "[bpe][pretokenizer]") {
  using V = std::vector<std::string>;
  CHECK(ScanSplit(PretokPattern::kCl100k, "I'M 12345 cats!!\n\n  x") ==
        V{"I", "'M", " ", "123", "45", " cats", "!!\n\n", " ", " x"});
  CHECK(ScanSplit(PretokPattern::kO200k, "HelloWorld CATs don't a/b\n") ==
        V{"Hello", "World", " CATs", " don't", " a", "/b", "\n"});
}

TEST_CASE("pretokenizer: invalid UTF-8 bytes are characters of class other", "[bpe][pretokenizer]") {
  using V = std::vector<std::string>;
  CHECK(ScanSplit(PretokPattern::kGpt2, "ab\xff\xfe cd \x80") == V{"ab", "\xff\xfe", " cd", " \x80"});
  CHECK(ScanSplit(PretokPattern::kGpt2, "\xc3") == V{"\xc3"});  // truncated sequence at the end
  CHECK(ScanSplit(PretokPattern::kGpt2, "x\xed\xa0\x80y") == V{"x", "\xed\xa0\x80", "y"});  // encoded surrogate
  for (auto p : kAll) {
    auto re = RegexPretokenizer::Create(p);
    REQUIRE(re.ok());
    const std::string t = "caf\xc3 \xe9t\xc3\xa9\xf0\x9f\x98 ok\xc0\xaf";
    CHECK(ScanSplit(p, t) == RegexSplit(*re, t));
  }
}

TEST_CASE("pretokenizer: scanner equals PCRE2 on the fixtures", "[bpe][pretokenizer]") {
  for (const char* f : {"bpe/corpus.en", "bpe/tinystories_sample.txt"}) {
    const std::string text = lmkit::test::ReadAll(lmkit::test::TestData(f));
    REQUIRE(text.size() > 1000);
    for (auto p : kAll) {
      auto re = RegexPretokenizer::Create(p);
      REQUIRE(re.ok());
      INFO(f << " " << PatternName(p));
      CHECK(ScanSplit(p, text) == RegexSplit(*re, text));
    }
  }
}

TEST_CASE("pretokenizer: scanner equals PCRE2 on generated Unicode text (property)", "[bpe][pretokenizer]") {
  // Pieces chosen to hit every branch: letters of several scripts and every letter category (Lu Ll Lt Lm Lo), marks
  // (Mn, Mc), numbers (Nd, Nl, No), contractions in mixed case (and U+017F, which case-folds to 's'), \r \n \t,
  // Unicode spaces (NBSP, U+3000, U+2028, NEL U+0085), punctuation, '/', emoji, format characters, invalid bytes.
  std::vector<std::string> pool = {"a",
                                   "Z",
                                   "e",
                                   "S",
                                   "t",
                                   "ll",
                                   "R",
                                   "ve",
                                   "D",
                                   "m",
                                   "'",
                                   "'",
                                   "'",
                                   "'s",
                                   "'T",
                                   "'Re",
                                   "'vE",
                                   "'LL",
                                   "'d",
                                   "'M",
                                   U8(0x17F),
                                   " ",
                                   " ",
                                   " ",
                                   "  ",
                                   "\t",
                                   "\n",
                                   "\r\n",
                                   "\r",
                                   "\v",
                                   "\f",
                                   U8(0x85),
                                   U8(0xA0),
                                   U8(0x3000),
                                   U8(0x2028),
                                   U8(0x2009),
                                   "0",
                                   "7",
                                   "42",
                                   "1234",
                                   U8(0x663),
                                   U8(0x216B),
                                   U8(0xBD),
                                   U8(0xB2),
                                   "!",
                                   ".",
                                   ",",
                                   "/",
                                   "-",
                                   "?!",
                                   "(",
                                   ")",
                                   "\"",
                                   "#",
                                   U8(0xE9),
                                   U8(0xC9),
                                   U8(0x3B1),
                                   U8(0x391),
                                   U8(0x436),
                                   U8(0x416),
                                   U8(0x1C5),
                                   U8(0x2B0),
                                   U8(0x5D0),
                                   U8(0x4E2D),
                                   U8(0x6587),
                                   U8(0x3042),
                                   U8(0xAC00),
                                   U8(0x301),
                                   U8(0x903),
                                   U8(0x20DD),
                                   U8(0x1F600),
                                   U8(0x200D),
                                   U8(0xFEFF),
                                   U8(0xFFFD),
                                   std::string("\0", 1),
                                   "\xff",
                                   "\x80",
                                   "\xc3",
                                   "\xe2\x82",
                                   "\xed\xa0\x80",
                                   "\xf4\x90\x80\x80",
                                   "\xc0\xaf"};
  const int mismatches =
      PoolTextsAgree(pool, 20251130, [](PretokPattern p, const RegexPretokenizer& re, const std::string& text) {
        return ScanSplit(p, text) == RegexSplit(re, text);
      });
  CHECK(mismatches == 0);
}

TEST_CASE("pretokenizer: the ASCII fast path equals the general scanner and PCRE2 (property)", "[bpe][pretokenizer]") {
  // Mostly ASCII: words in both cases and mixed case, digit runs of every length, symbols (' and / among them), every
  // ASCII whitespace and control byte, runs of spaces and newlines, with an occasional non-ASCII character next to a
  // run (where the fast path must hand over to the general scanner).
  std::vector<std::string> pool = {"the",     " the",    "The",      " THE",   "HelloWorld", "a",
                                   "I",       " x",      "don",      "'t",     "'s",         "'",
                                   "'S",      "'LL",     "0",        "12",     "345",        "67890",
                                   " 1",      "!",       "...",      ",",      " (",         "(",
                                   ")",       "/",       "//",       "-",      "==",         "'x",
                                   " ",       " ",       "  ",       "    ",   "\t",         "\n",
                                   "\n\n",    "\r\n",    "\r",       "\v",     "\f",         std::string("\0", 1),
                                   "\x1c",    "\x1f",    "\x7f",     U8(0xE9), U8(0xA0),     U8(0x85),
                                   U8(0x663), U8(0x301), U8(0x4E2D), "\xff"};
  for (int b = 0; b < 128; ++b) pool.push_back(std::string(1, static_cast<char>(b)));
  PoolTextsAgree(pool, 33, [](PretokPattern p, const RegexPretokenizer& re, const std::string& text) {
    std::vector<std::string> general;
    for (size_t pos = 0; pos < text.size();) {
      const size_t end = NextPretokenEndGeneral(p, text, pos);
      general.emplace_back(text.substr(pos, end - pos));
      pos = end;
    }
    const auto scan = ScanSplit(p, text);
    return scan == general && scan == RegexSplit(re, text);
  });
}
