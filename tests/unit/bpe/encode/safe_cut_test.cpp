// Safe cuts: encoding the two sides of every accepted cut gives the ids of the whole.
#include "lmkit/bpe/encode/safe_cut.h"

#include <catch2/catch.hpp>
#include <random>

#include "encode_test_helpers.h"

using namespace lmkit;
using namespace lmkit::bpe;
using namespace lmkit::bpe::test_helpers;

TEST_CASE("bpe encode: every safe cut splits the encoding exactly", "[bpe][encode]") {
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
        if (LastSafeCut(std::string_view(text).substr(0, c + 2), c, tok.enabled_specials()) != c) continue;
        auto left = EncodeAll(tok, std::string_view(text).substr(0, c));
        auto right = EncodeAll(tok, std::string_view(text).substr(c));
        left.insert(left.end(), right.begin(), right.end());
        INFO(name << " cut " << c << " in " << Json(text).dump());
        REQUIRE(left == whole);
      }
    }
  }
}
