// The tokenizer readers: built-in names, tiktoken rank files, vocab.json + merges.txt, tokenizer.json; and their
// errors, which name the file (and line).
#include "lmkit/bpe/files/tokenizer_files.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <functional>

#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/files/byte_unicode.h"
#include "lmkit/common/json.h"
#include "support/encode.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::bpe;
using lmkit::test::Enc;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;

namespace {

// A byte-level vocabulary {printable: id} with bytes at ids 0..255 plus `extra` tokens after them.
Json SmallVocab(const std::vector<std::string>& extra) {
  Json v = Json::object();
  for (int b = 0; b < 256; ++b) v[BytesToPrintable(std::string(1, static_cast<char>(b)))] = b;
  uint32_t id = 256;
  for (const auto& e : extra) v[BytesToPrintable(e)] = id++;
  return v;
}

std::string Base64(std::string_view in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int k = 3; k >= 0; --k) out += t[(v >> (6 * k)) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += t[(v >> 18) & 63];
    out += t[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += t[(v >> 18) & 63];
    out += t[(v >> 12) & 63];
    out += t[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

}  // namespace

TEST_CASE("bpe tokenizer files: built-in tokenizers", "[bpe][tokenizer]") {
  struct Case {
    const char* name;
    size_t ordinary;
    uint32_t id_limit;
    PretokPattern pattern;
    size_t specials;
  } cases[] = {{"gpt2", 50256, 50257, PretokPattern::kGpt2, 1},
               {"cl100k_base", 100256, 100277, PretokPattern::kCl100k, 5},
               {"o200k_base", 199998, 200019, PretokPattern::kO200k, 2}};
  for (const auto& c : cases) {
    INFO(c.name);
    auto t = LoadTokenizer(c.name, {});
    REQUIRE(t.ok());
    CHECK((*t)->ordinary_count() == c.ordinary);
    CHECK((*t)->id_limit() == c.id_limit);
    CHECK((*t)->pattern() == c.pattern);
    CHECK((*t)->enabled_specials().size() == c.specials);
    CHECK((*t)->whole_piece_shortcut());
  }
  auto missing = LoadTokenizer("o200k", {});
  REQUIRE(!missing.ok());
  CHECK(missing.status().code() == ErrorCode::kNotFound);
  CHECK(missing.status().message().find("did you mean 'o200k_base'") != std::string::npos);
}

TEST_CASE("bpe tokenizer files: a tiktoken rank file by path, pattern from --pattern", "[bpe][tokenizer]") {
  TempDir dir;
  std::string lines;
  for (int b = 0; b < 256; ++b) lines += Base64(std::string(1, static_cast<char>(b))) + " " + std::to_string(b) + "\n";
  lines += Base64("bc") + " 256\n" + Base64("abc") + " 257\n" + Base64("ab") + " 258\n";
  std::string path = dir.file("custom.tiktoken");
  WriteAll(path, lines);
  auto no_pattern = LoadTokenizer(path, {});
  REQUIRE(!no_pattern.ok());
  CHECK(no_pattern.status().code() == ErrorCode::kInvalidArgument);
  TokenizerOptions opt;
  opt.pattern = PretokPattern::kCl100k;
  auto t = LoadTokenizer(path, opt);
  REQUIRE(t.ok());
  CHECK((*t)->pattern() == PretokPattern::kCl100k);
  // tiktoken's rule: "bc" (256) merges first, then (a, bc) → "abc" (257), a cut no merges.txt would list.
  CHECK(Enc(**t, "abc") == std::vector<uint32_t>{257});
  CHECK(Enc(**t, "abcx") == std::vector<uint32_t>{257, 'x'});
  CHECK(Enc(**t, "xab") == std::vector<uint32_t>{'x', 258});
  // Metadata beside the file names the pattern and specials.
  WriteAll(dir.file("custom.json"), R"({"pattern": "o200k", "special_tokens": {"<|x|>": 300}})");
  auto m = LoadTokenizer(path, {});
  REQUIRE(m.ok());
  CHECK((*m)->pattern() == PretokPattern::kO200k);
  CHECK(Enc(**m, "ab<|x|>") == std::vector<uint32_t>{258, 300});
  // Errors name the file and line.
  WriteAll(path, lines + "!!notbase64 259\n");
  auto bad = LoadTokenizer(path, opt);
  REQUIRE(!bad.ok());
  CHECK(bad.status().subject() == path + ":260");
  WriteAll(path, Base64("ab") + " 0\n");
  bad = LoadTokenizer(path, opt);
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("no token for byte 0x00") != std::string::npos);
}

TEST_CASE("bpe tokenizer files: tokenizer.json with string or pair merges and added tokens", "[bpe][tokenizer]") {
  TempDir dir;
  for (bool pairs : {false, true}) {
    INFO(pairs);
    Json j;
    j["version"] = "1.0";
    j["added_tokens"] = Json::array({Json{{"id", 260}, {"content", "<|end|>"}, {"special", true}}});
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = Json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
    j["model"]["type"] = "BPE";
    j["model"]["vocab"] = SmallVocab({" t", " th", " the", "he"});
    if (pairs)
      j["model"]["merges"] = Json::array(
          {Json::array({"Ġ", "t"}), Json::array({"Ġt", "h"}), Json::array({"Ġth", "e"}), Json::array({"h", "e"})});
    else
      j["model"]["merges"] = Json::array({"Ġ t", "Ġt h", "Ġth e", "h e"});
    std::string path = dir.file("tokenizer.json");
    WriteAll(path, j.dump());
    auto t = LoadTokenizer(dir.path(), {});
    REQUIRE(t.ok());
    CHECK_FALSE((*t)->whole_piece_shortcut());
    // " the" by merges; "he" too; the added token is matched in the text.
    CHECK(Enc(**t, " the<|end|>he") == std::vector<uint32_t>{258, 260, 259});
  }
  WriteAll(dir.file("tokenizer.json"), R"({"model": {"type": "Unigram", "vocab": []}})");
  auto u = LoadTokenizer(dir.file("tokenizer.json"), {});
  REQUIRE(!u.ok());
  CHECK(u.status().code() == ErrorCode::kUnsupported);
  WriteAll(dir.file("tokenizer.json"), "{\"model\": ");
  auto bad = LoadTokenizer(dir.file("tokenizer.json"), {});
  REQUIRE(!bad.ok());
  CHECK(bad.status().subject() == dir.file("tokenizer.json"));
}

TEST_CASE("bpe tokenizer files: a byte-level vocabulary may lack the bytes that never occur in UTF-8",
          "[bpe][tokenizer]") {
  // GPT-NeoX-20B, OLMo 1 and DeepSeek LLM have no token for 0xC0, 0xC1, 0xF5-0xFF. Such a byte of ill-formed input
  // is dropped before merging, as Hugging Face drops a character its vocabulary lacks.
  TempDir dir;
  Json j;
  j["pre_tokenizer"] = Json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  j["model"]["type"] = "BPE";
  j["model"]["vocab"] = SmallVocab({"!!"});
  j["model"]["merges"] = Json::array({"! !"});
  for (int b : {0xC0, 0xC1, 0xF5, 0xFE, 0xFF}) j["model"]["vocab"].erase(BytesToPrintable(std::string(1, char(b))));
  const std::string path = dir.file("tokenizer.json");
  WriteAll(path, j.dump());
  auto t = LoadTokenizer(path, {});
  REQUIRE(t.ok());
  CHECK(Enc(**t, "x!!") == std::vector<uint32_t>{'x', 256});
  CHECK(Enc(**t, "x!\xFF!") == std::vector<uint32_t>{'x', 256});  // the neighbours of a dropped byte merge
  CHECK(Enc(**t,
            "a\xC0"
            "b \xFE\xF5") == std::vector<uint32_t>{'a', 'b', ' '});
  CHECK(Enc(**t, "\xC1") == std::vector<uint32_t>{});
  // A byte that occurs in UTF-8 must have a token.
  j["model"]["vocab"].erase("A");
  WriteAll(path, j.dump());
  auto bad = LoadTokenizer(path, {});
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("no token for byte 0x41") != std::string::npos);
}

TEST_CASE("bpe tokenizer files: malformed files found by fuzz_tokenizer are one-line errors naming the file",
          "[bpe][tokenizer]") {
  TempDir dir;
  TokenizerOptions opt;
  opt.pattern = PretokPattern::kGpt2;
  auto message = [&](const std::string& path) {
    auto t = LoadTokenizer(path, opt);
    REQUIRE(!t.ok());
    CHECK(t.status().message().find('\n') == std::string::npos);
    return t.status().subject() + ": " + t.status().message();
  };
  // An id of 2^31 - 2 used to size a 16 GB table; ids above 2^24 - 1 are refused before anything is allocated.
  std::string ranks;
  for (int b = 0; b < 256; ++b) ranks += Base64(std::string(1, static_cast<char>(b))) + " " + std::to_string(b) + "\n";
  const std::string tik = dir.file("big.tiktoken");
  WriteAll(tik, ranks + Base64("ab") + " 2147483646\n");
  CHECK(message(tik) == tik + ":257: token id 2147483646 is above lmkit's limit of 16777215");
  WriteAll(tik, ranks + Base64("ab") + " 16777215\n");  // the limit itself is allowed
  CHECK(LoadTokenizer(tik, opt).ok());

  auto tokenizer_json = [&](const std::function<void(Json&)>& edit) {
    Json j;
    j["pre_tokenizer"] = Json{{"type", "ByteLevel"}, {"add_prefix_space", false}};
    j["model"]["type"] = "BPE";
    j["model"]["vocab"] = SmallVocab({"he"});
    j["model"]["merges"] = Json::array({"h e"});
    edit(j);
    const std::string path = dir.file("tokenizer.json");
    WriteAll(path, j.dump());
    return message(path);
  };
  const std::string tj = dir.file("tokenizer.json");
  // Fields of the wrong type used to escape as exceptions ("internal error: [json.exception.type_error.302] ...").
  CHECK(tokenizer_json([](Json& j) { j["model"]["type"] = 5; }) == tj + ": model \"type\" must be a string");
  CHECK(tokenizer_json([](Json& j) { j["model"]["ignore_merges"] = "yes"; }) ==
        tj + ": model \"ignore_merges\" must be true or false");
  CHECK(tokenizer_json([](Json& j) { j["pre_tokenizer"]["use_regex"] = 1; }) ==
        tj + ": pre_tokenizer ByteLevel \"use_regex\" must be true or false");
  CHECK(tokenizer_json([](Json& j) {
          j["pre_tokenizer"] = Json{{"type", "Sequence"}, {"pretokenizers", {7}}};
        }) == tj + ": \"pre_tokenizer\" and \"pretokenizers\" entries must be objects");
  CHECK(tokenizer_json([](Json& j) { j["model"]["merges"] = Json{{"h", "e"}}; }) == tj + ": \"merges\" must be a list");
  // A special token whose id is an ordinary token of other bytes: the file is named, the token quoted.
  CHECK(tokenizer_json([](Json& j) {
          j["added_tokens"] = Json::array({Json{{"id", 256}, {"content", "<|end|>\n"}}});
        }) == tj + ": special token \"<|end|>\\n\": id 256 is already the ordinary token of other bytes");
  CHECK(tokenizer_json([](Json& j) {
          j["added_tokens"] = Json::array({Json{{"id", 20000000}, {"content", "<|x|>"}}});
        }) == tj + ": special token \"<|x|>\": id 20000000 is above lmkit's limit of 16777215");

  // A merges.txt line naming bytes that are not valid UTF-8 (and not in the vocabulary): quoted, not thrown.
  WriteAll(dir.file("vocab.json"), SmallVocab({"he"}).dump());
  WriteAll(dir.file("merges.txt"), "#version: 0.2\nh \xA9\n");
  auto vm = ReadVocabMerges(dir.file("vocab.json"), dir.file("merges.txt"), opt);
  REQUIRE(!vm.ok());
  CHECK(vm.status().subject() == dir.file("merges.txt") + ":2");
  CHECK(vm.status().message() == "token \"\xEF\xBF\xBD\" is not in the vocabulary");
}

TEST_CASE("bpe tokenizer files: a directory with half of vocab.json + merges.txt names the missing one",
          "[bpe][tokenizer]") {
  TokenizerOptions opt;
  opt.pattern = PretokPattern::kGpt2;
  TempDir dir;
  auto message = [&] {
    auto t = LoadTokenizer(dir.path(), opt);
    REQUIRE(!t.ok());
    CHECK(t.status().code() == ErrorCode::kNotFound);
    return t.status().subject() + ": " + t.status().message();
  };
  CHECK(message() == dir.path() + ": directory has neither vocab.json + merges.txt nor tokenizer.json");
  WriteAll(dir.file("vocab.json"), SmallVocab({}).dump());
  CHECK(message() == dir.path() + ": directory has vocab.json but no merges.txt");
  std::remove(dir.file("vocab.json").c_str());
  WriteAll(dir.file("merges.txt"), "#version: 0.2\n");
  CHECK(message() == dir.path() + ": directory has merges.txt but no vocab.json");
}

// added_tokens that is not a list used to be skipped, so the special tokens were silently missing.
TEST_CASE("bpe tokenizer files: tokenizer.json added_tokens must be a list", "[bpe][tokenizer]") {
  TokenizerOptions opt;
  opt.pattern = PretokPattern::kGpt2;
  TempDir dir;
  Json j;
  j["pre_tokenizer"] = Json{{"type", "ByteLevel"}, {"add_prefix_space", false}};
  j["model"]["type"] = "BPE";
  j["model"]["vocab"] = SmallVocab({});
  j["model"]["merges"] = Json::array();
  j["added_tokens"] = Json{{"id", 256}, {"content", "<|end|>"}};
  const std::string path = dir.file("tokenizer.json");
  WriteAll(path, j.dump());
  auto t = LoadTokenizer(path, opt);
  REQUIRE(!t.ok());
  CHECK(t.status().subject() + ": " + t.status().message() == path + ": \"added_tokens\" is not a list");
  j["added_tokens"] = nullptr;  // null is "none", as HF writes it
  WriteAll(path, j.dump());
  CHECK(LoadTokenizer(path, opt).ok());
}
