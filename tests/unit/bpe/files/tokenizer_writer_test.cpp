// The files a trained tokenizer is written to: a folder reads back as its tokenizer.json, and Hugging Face's
// tokenizers (pip's, pinned in tests/requirements.txt; tests/scripts/hf_encode.py) gives lmkit's ids for it, specials
// with spaces, newlines, tabs and non-ASCII bytes included.
#include "lmkit/bpe/files/tokenizer_writer.h"

#include <catch2/catch.hpp>

#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/files/byte_unicode.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/bpe/train/trainer.h"
#include "lmkit/common/json.h"
#include "support/encode.h"
#include "support/run_lmkit.h"
#include "support/skip.h"
#include "support/test_python.h"

using namespace lmkit;
using namespace lmkit::bpe;

namespace {

const std::vector<std::string> kSpecials = {"[doc break]", "<|endoftext|>", "line\nbreak", "tab\there",
                                            "\xc3\xa9t\xc3\xa9<sep>\xe2\x98\x83"};

// Trains on the CS336 fixture (with every special in it) and writes the three files into `dir`.
void TrainInto(const std::string& dir, const std::vector<std::string>& specials) {
  std::string text = test::ReadAll(test::TestData("bpe/tinystories_sample.txt"));
  for (const auto& s : specials) text += "\n" + s + " more text after " + s;
  BpeTrainOptions o;
  o.vocab_size = 400;
  o.special_tokens = specials;
  auto r = TrainBpeOnText(text, o);
  REQUIRE(r.ok());
  REQUIRE(WriteTokenizerFiles(r->model, dir).ok());
}

std::vector<uint32_t> Encode(const Tokenizer& tok, std::string_view text) {
  Encoder enc(tok);
  std::vector<uint32_t> ids;
  enc.Encode(text, &ids);
  return ids;
}

const std::vector<std::string> kTexts = {"x[doc break]y", "a<|endoftext|>b",
                                         "one line\nbreak two tab\there, three \xc3\xa9t\xc3\xa9<sep>\xe2\x98\x83!",
                                         "[doc break][doc break]\n\n[doc  break] tab\t here",
                                         "Once upon a time <|endoftext|> there was a line\nbreakline\nbreak"};

}  // namespace

TEST_CASE("bpe tokenizer writer: a trained folder gives the ids of its tokenizer.json, specials included",
          "[bpe][tokenizer]") {
  test::TempDir dir;
  TrainInto(dir.path(), kSpecials);
  auto folder = LoadTokenizer(dir.path(), {});
  REQUIRE(folder.ok());
  auto json = LoadTokenizer(dir.file("tokenizer.json"), {});
  REQUIRE(json.ok());
  CHECK((*folder)->enabled_specials().size() == kSpecials.size());
  for (const auto& t : kTexts) CHECK(Encode(**folder, t) == Encode(**json, t));
  // #32's reproducers: ids 0.. are the specials, then byte b is id b + 5.
  CHECK(Encode(**folder, "x[doc break]y") == std::vector<uint32_t>{125, 0, 126});
  CHECK(Encode(**folder, "a<|endoftext|>b") == std::vector<uint32_t>{102, 1, 103});
  // vocab.json + merges.txt alone (GPT-2's format) know no specials: they read as ordinary text there.
  auto pair = ReadVocabMerges(dir.file("vocab.json"), dir.file("merges.txt"), {});
  REQUIRE(pair.ok());
  CHECK(pair->get()->enabled_specials().empty());
}

TEST_CASE("bpe tokenizer writer: tokenizer.json stores specials by their raw text", "[bpe][tokenizer]") {
  BpeModel m;
  m.vocab = {"[doc break]", "\n"};
  m.num_specials = 1;
  const std::string j = RenderTokenizerJson(m);
  auto doc = ParseJson(j, "tokenizer.json");
  REQUIRE(doc.ok());
  CHECK((*doc)["added_tokens"][0]["content"] == "[doc break]");
  CHECK((*doc)["model"]["vocab"]["[doc break]"] == 0);
  CHECK((*doc)["model"]["vocab"]["\xc4\x8a"] == 1);  // ordinary tokens keep GPT-2's printable form (U+010A)
  CHECK(RenderVocabJson(m) == "{\"[doc break]\": 0, \"\xc4\x8a\": 1}\n");  // vocab.json too, as HF's BPE saves it
}

TEST_CASE("bpe tokenizer files: a special stored raw in vocab.json is the file's special, enabled on request",
          "[bpe][tokenizer]") {
  test::TempDir dir;
  std::string vocab = "{\"[doc break]\": 0";
  for (int b = 0; b < 256; ++b) {
    const std::string byte(1, static_cast<char>(b));
    vocab += ", " + DumpJson(Json(BytesToPrintable(byte)), -1) + ": " + std::to_string(b + 1);
  }
  test::WriteAll(dir.file("vocab.json"), vocab + "}");
  test::WriteAll(dir.file("merges.txt"), "#version: 0.2\n");
  auto plain = ReadVocabMerges(dir.file("vocab.json"), dir.file("merges.txt"), {});
  REQUIRE(plain.ok());
  CHECK(test::Enc(**plain, "a[doc break]").size() == 12);  // not enabled: ordinary text
  TokenizerOptions opts;
  opts.specials = {"[doc break]"};
  auto with = ReadVocabMerges(dir.file("vocab.json"), dir.file("merges.txt"), opts);
  REQUIRE(with.ok());
  CHECK(test::Enc(**with, "a[doc break]") == std::vector<uint32_t>{'a' + 1, 0});
  // A key in neither form of a requested special is still an error of the merges that use it.
  test::WriteAll(dir.file("merges.txt"), "#version: 0.2\n[doc break] a\n");
  CHECK(ReadVocabMerges(dir.file("vocab.json"), dir.file("merges.txt"), opts).status().code() ==
        ErrorCode::kInvalidInput);
}

TEST_CASE("bpe tokenizer writer: Hugging Face tokenizers gives lmkit's ids for a trained tokenizer.json",
          "[bpe][tokenizer]") {
  const std::string py = test::TestPythonWith("tokenizers");
  if (py.empty()) {
    LMKIT_SKIP("LMKIT_TEST_PYTHON with tokenizers (tests/requirements.txt) not found; Hugging Face check");
  }
  test::TempDir dir;
  TrainInto(dir.path(), kSpecials);
  auto tok = LoadTokenizer(dir.path(), {});
  REQUIRE(tok.ok());
  test::WriteAll(dir.file("texts.json"), DumpJson(Json(kTexts), -1));
  const auto r = test::RunShell("'" + py + "' " + test::RepoPath("tests/scripts/hf_encode.py") + " " +
                                dir.file("tokenizer.json") + " " + dir.file("texts.json"));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  auto hf = ParseJson(r.out, "hf_encode.py");
  REQUIRE(hf.ok());
  REQUIRE(hf->size() == kTexts.size());
  for (size_t i = 0; i < kTexts.size(); ++i) {
    INFO(Json(kTexts[i]).dump());
    CHECK((*hf)[i].get<std::vector<uint32_t>>() == Encode(**tok, kTexts[i]));
  }
}
