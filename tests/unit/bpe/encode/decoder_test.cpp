// decode(encode(x)) == x on generated Unicode text, and clear errors for ids the tokenizer does not have.
#include "lmkit/bpe/encode/decoder.h"

#include <catch2/catch.hpp>
#include <random>

#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/common/utf8.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::bpe;

namespace {

// Random text drawn from ranges that exercise every pattern class: ASCII letters/digits/punctuation, whitespace of
// several kinds, Latin-1, Greek/Cyrillic, combining marks, CJK, Hangul, emoji with modifiers and ZWJ, and any
// scalar value at all.
std::string RandomUnicode(std::mt19937& rng, size_t n) {
  static const std::pair<uint32_t, uint32_t> ranges[] = {
      {0x20, 0x7E},       {0x30, 0x39},     {0x41, 0x5A},     {0x61, 0x7A},     {0x09, 0x0D},     {0xA0, 0xFF},
      {0x370, 0x3FF},     {0x400, 0x4FF},   {0x300, 0x36F},   {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x1F300, 0x1F64F},
      {0x1F3FB, 0x1F3FF}, {0x200B, 0x200D}, {0x2000, 0x202F}, {0x3000, 0x3000}, {0x1, 0xD7FF},    {0xE000, 0x10FFFF}};
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    const auto& r = ranges[rng() % std::size(ranges)];
    AppendUtf8(s, r.first + static_cast<uint32_t>(rng() % (r.second - r.first + 1)));
    if (rng() % 5 == 0) s += ' ';
    if (rng() % 17 == 0) s += "'s";
  }
  return s;
}

}  // namespace

TEST_CASE("bpe decode: decode(encode(x)) == x on generated Unicode text", "[bpe][decode]") {
  std::mt19937 rng(1234);
  for (std::string name : {"gpt2", "cl100k_base", "o200k_base"}) {
    auto tok = LoadTokenizer(name, {});
    REQUIRE(tok.ok());
    Encoder enc(**tok);
    for (int trial = 0; trial < 150; ++trial) {
      std::string text = RandomUnicode(rng, 1 + rng() % 80);
      std::vector<uint32_t> ids;
      enc.Encode(text, &ids);
      std::string back;
      REQUIRE(DecodeIds(**tok, ids.data(), ids.size(), 0, &back).ok());
      INFO(name);
      REQUIRE(back == text);
    }
  }
}

TEST_CASE("bpe decode: special tokens decode to their text", "[bpe][decode]") {
  auto tok = LoadTokenizer("gpt2", {});
  REQUIRE(tok.ok());
  const uint32_t ids[] = {15496, 50256, 995};
  std::string out;
  REQUIRE(DecodeIds(**tok, ids, 3, 0, &out).ok());
  CHECK(out == "Hello<|endoftext|> world");
}

TEST_CASE("bpe decode: an unknown id is an error with its index", "[bpe][decode]") {
  auto tok = LoadTokenizer("gpt2", {});
  REQUIRE(tok.ok());
  const uint32_t ids[] = {15496, 50257, 995};
  std::string out;
  Status st = DecodeIds(**tok, ids, 3, 100, &out);
  REQUIRE(!st.ok());
  CHECK(st.code() == ErrorCode::kInvalidInput);
  CHECK(st.message() == "token id 50257 at index 101 is not in the tokenizer (ids 0..50256)");
}

// A rank file with neither a telling name nor metadata has no pattern, which only encoding needs: decoding loads it
// with any pattern, while encoding still asks for one.
TEST_CASE("bpe decode: a rank file without a pattern decodes", "[bpe][decode]") {
  lmkit::test::TempDir dir;
  const std::string ranks = dir.file("ranks.tiktoken");
  lmkit::test::WriteAll(ranks, lmkit::test::ReadAll(lmkit::test::RepoPath("data/tokenizers/gpt2.tiktoken")));
  lmkit::test::WriteAll(dir.file("ids.json"), "[15496,995]");
  DecodeRequest req;
  req.tokenizer = ranks;
  req.input = dir.file("ids.json");
  req.output = dir.file("out.txt");
  auto rep = DecodeFile(req);
  INFO(rep.status().ToString());
  REQUIRE(rep.ok());
  CHECK(lmkit::test::ReadAll(dir.file("out.txt")) == "Hello world");
  CHECK(LoadTokenizer(ranks, {}).status().code() == ErrorCode::kInvalidArgument);
}
