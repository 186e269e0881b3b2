// The encoder against tiktoken's ids (golden files in tests/data/bpe-encode/, see PROVENANCE.md; every code point in
// codepoint_sweep_test.cpp), the two merge loops against each other, and special tokens.
#include "lmkit/bpe/encode/encoder.h"

#include <catch2/catch.hpp>
#include <random>

#include "encode_test_helpers.h"

using namespace lmkit;
using namespace lmkit::bpe;
using namespace lmkit::bpe::test_helpers;

TEST_CASE("bpe encode: gpt2 ids equal tiktoken on corpus.en and tinystories", "[bpe][encode]") {
  const Tokenizer& tok = Builtin("gpt2");
  auto corpus = test::ReadAll(test::TestData("bpe-encode/corpus.en"));
  auto ids = EncodeAll(tok, corpus);
  auto want = Expected("corpus.gpt2.json");
  REQUIRE(want.size() == 30854);
  CHECK(ids == want);
  auto stories = test::ReadAll(test::TestData("bpe-encode/tinystories_sample.txt"));
  auto want_s = Expected("tinystories_sample.gpt2.json");
  REQUIRE(want_s.size() == 923);
  CHECK(EncodeAll(tok, stories) == want_s);
}

TEST_CASE("bpe encode: cl100k_base and o200k_base ids equal tiktoken", "[bpe][encode]") {
  for (std::string name : {"cl100k_base", "o200k_base"}) {
    INFO(name);
    const Tokenizer& tok = Builtin(name);
    for (std::string stem : {"patterns", "tinystories_sample"}) {
      INFO(stem);
      auto text = test::ReadAll(test::TestData("bpe-encode/" + stem + (stem == "patterns" ? ".txt" : ".txt")));
      CHECK(EncodeAll(tok, text) == Expected(stem + "." + name + ".json"));
    }
  }
  CHECK(EncodeAll(Builtin("gpt2"), test::ReadAll(test::TestData("bpe-encode/patterns.txt"))) ==
        Expected("patterns.gpt2.json"));
}

TEST_CASE("bpe encode: known small encodings", "[bpe][encode]") {
  const Tokenizer& gpt2 = Builtin("gpt2");
  CHECK(EncodeAll(gpt2, "Hello world") == std::vector<uint32_t>{15496, 995});
  CHECK(EncodeAll(gpt2, "<|endoftext|>") == std::vector<uint32_t>{50256});
  CHECK(EncodeAll(gpt2, "").empty());
  CHECK(EncodeAll(Builtin("cl100k_base"), "hello world") == std::vector<uint32_t>{15339, 1917});
  CHECK(EncodeAll(Builtin("o200k_base"), "hello world") == std::vector<uint32_t>{24912, 2375});
}

TEST_CASE("bpe encode: flat and heap merge loops agree", "[bpe][encode]") {
  const Tokenizer& tok = Builtin("gpt2");
  Encoder enc(tok);
  std::mt19937 rng(7);
  const std::string alphabet = "aaabbbeeettthhhnnnrrss  --==..\n";
  for (int trial = 0; trial < 300; ++trial) {
    std::string piece;
    size_t len = 1 + rng() % 400;
    for (size_t i = 0; i < len; ++i) piece += alphabet[rng() % alphabet.size()];
    std::vector<uint32_t> a, b;
    enc.MergeFlat(piece, &a);
    enc.MergeHeap(piece, &b);
    REQUIRE(a == b);
  }
  // A 100 KB run of one symbol takes the heap path and stays fast.
  std::string dashes(100000, '-');
  std::vector<uint32_t> ids;
  enc.EncodePiece(dashes, &ids);
  std::string_view bytes;
  size_t total = 0;
  for (uint32_t id : ids) {
    REQUIRE(tok.TokenBytes(id, &bytes));
    total += bytes.size();
  }
  CHECK(total == dashes.size());
}

TEST_CASE("bpe encode: special tokens, longest first, only when enabled", "[bpe][encode]") {
  TokenizerOptions opt;
  auto plain = LoadTokenizer("gpt2", opt);
  REQUIRE(plain.ok());
  // gpt2's own <|endoftext|> is on by default.
  CHECK(EncodeAll(**plain, "a<|endoftext|>b") == std::vector<uint32_t>{64, 50256, 65});
  // A caller-named special that is not in the tokenizer is an error naming it.
  opt.specials = {"<|im_start|>"};
  auto bad = LoadTokenizer("gpt2", opt);
  REQUIRE(!bad.ok());
  CHECK(bad.status().subject() == "<|im_start|>");
  // cl100k_base knows <|fim_prefix|> etc.; all its own specials are matched.
  CHECK(EncodeAll(Builtin("cl100k_base"), "<|fim_prefix|>x<|endofprompt|>") ==
        std::vector<uint32_t>{100258, 87, 100276});
}

TEST_CASE("bpe encode: invalid UTF-8 is encoded losslessly", "[bpe][encode]") {
  const Tokenizer& tok = Builtin("gpt2");
  std::string bad = "ok \xff\xfe bad \xc3 cut \xe4\xb8 end\x80";
  auto ids = EncodeAll(tok, bad);
  std::string back;
  std::string_view b;
  for (uint32_t id : ids) {
    REQUIRE(tok.TokenBytes(id, &b));
    back += b;
  }
  CHECK(back == bad);
  CHECK(EncodeStreamed(tok, bad, 3, 2) == ids);
}

TEST_CASE("bpe encode: characters of Unicode 15-16 are letters and marks, as in tiktoken (#32's reproducers)",
          "[bpe][encode]") {
  // tiktoken 0.14.0: gpt2 encode("\U00031350's"), o200k_base encode("\u0cf3's").
  CHECK(EncodeAll(Builtin("gpt2"), "\xf0\xb1\x8d\x90's") == std::vector<uint32_t>{172, 109, 235, 238, 338});
  CHECK(EncodeAll(Builtin("o200k_base"), "\xe0\xb3\xb3's") == std::vector<uint32_t>{670, 111, 885});
}
