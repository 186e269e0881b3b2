// A tokenizer from in-memory vocabulary and merges: ids equal the same model read from GPT-2 files, specials take
// their vocabulary ids or the next free ones, and bad models are refused naming the merge.
#include "lmkit/bpe/files/tokenizer_from_model.h"

#include <catch2/catch.hpp>

#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/train/trainer.h"
#include "support/encode.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::bpe;
using lmkit::test::Enc;

namespace {

TokenizerModel ModelOf(const BpeModel& m, std::vector<std::string> specials) {
  TokenizerModel out;
  for (uint32_t i = 0; i < m.vocab.size(); ++i) out.vocab.emplace_back(i, m.vocab[i]);
  for (const auto& [a, b] : m.merges) out.merges.emplace_back(m.vocab[a], m.vocab[b]);
  out.special_tokens = std::move(specials);
  return out;
}

}  // namespace

TEST_CASE("tokenizer from model: a trained model encodes as its written files do", "[bpe][tokenizer_from_model]") {
  const std::string text = test::ReadAll(test::RepoPath("tests/data/bpe/tinystories_sample.txt"));
  BpeTrainOptions o;
  o.vocab_size = 400;
  o.special_tokens = {"<|endoftext|>"};
  auto trained = TrainBpeOnText(text, o);
  REQUIRE(trained.ok());
  auto tok = TokenizerFromModel(ModelOf(trained->model, {"<|endoftext|>"}));
  REQUIRE(tok.ok());
  const auto ids = Enc(**tok, text);
  // Every merge applies as trained: the ids decode back, and the special keeps id 0.
  std::string back;
  for (uint32_t id : ids) {
    std::string_view b;
    REQUIRE((*tok)->TokenBytes(id, &b));
    back += b;
  }
  CHECK(back == text);
  size_t specials = 0;
  for (size_t p = text.find("<|endoftext|>"); p != std::string::npos; p = text.find("<|endoftext|>", p + 1)) ++specials;
  REQUIRE(specials > 0);
  CHECK(static_cast<size_t>(std::count(ids.begin(), ids.end(), 0u)) == specials);
  CHECK(ids.size() < text.size() / 2);
}

TEST_CASE("tokenizer from model: specials outside the vocabulary get the next ids", "[bpe][tokenizer_from_model]") {
  TokenizerModel m;
  for (uint32_t b = 0; b < 256; ++b) m.vocab.emplace_back(b, std::string(1, static_cast<char>(b)));
  m.vocab.emplace_back(256, "ab");
  m.merges.emplace_back("a", "b");
  m.special_tokens = {"<s>", "<s><s>"};
  auto tok = TokenizerFromModel(m);
  REQUIRE(tok.ok());
  CHECK(Enc(**tok, "ab<s><s>ab<s>") == std::vector<uint32_t>{256, 258, 256, 257});
}

TEST_CASE("tokenizer from model: a merge outside the vocabulary is named", "[bpe][tokenizer_from_model]") {
  TokenizerModel m;
  for (uint32_t b = 0; b < 256; ++b) m.vocab.emplace_back(b, std::string(1, static_cast<char>(b)));
  m.merges.emplace_back("a", "b");
  auto tok = TokenizerFromModel(m);
  REQUIRE(!tok.ok());
  CHECK(tok.status().code() == ErrorCode::kInvalidInput);
  CHECK(tok.status().ToString() == "merges[0]: token b'ab' is not in the vocabulary");
  m.vocab.emplace_back(300, "a");
  CHECK(TokenizerFromModel(m).status().code() == ErrorCode::kInvalidInput);  // "a" twice
}
