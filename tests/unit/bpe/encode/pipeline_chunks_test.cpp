// Chunked encoding of tokenizer.json pipelines: where Tokenizer::cut_rule allows the newline-letter cut or the cut
// after an added token, encoding the two sides of every such cut gives the ids of the whole text, on random and
// adversarial strings built from the characters each regex alternative treats apart (line breaks, spaces, punctuation,
// digit runs, CJK, combining marks for NFC, Unicode 16.0 letters, and the fixtures' added tokens with
// lstrip/rstrip/single_word next to the cut); and EncodeStream with tiny chunks on 1 and 2 threads gives the whole
// text's ids.
#include <catch2/catch.hpp>
#include <cctype>
#include <random>
#include <string>
#include <vector>

#include "lmkit/bpe/encode/encode_stream.h"
#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/bpe/pretokenize/cut_rules.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::bpe;

namespace {

const std::string kDir = std::string(LMKIT_TEST_DATA_DIR) + "/bpe/hf/";

// Fragments around which the families' regexes and normalizers decide differently.
const std::vector<std::string> kFragments = {"a",
                                             "Z",
                                             "hello",
                                             "World",
                                             "x",
                                             " ",
                                             "  ",
                                             "\n",
                                             "\n",
                                             "\n\n",
                                             "\r\n",
                                             "\t",
                                             ".",
                                             ",",
                                             "!?",
                                             "'s",
                                             "'T",
                                             "/",
                                             "_",
                                             "-",
                                             "(",
                                             ")",
                                             "\"",
                                             "1",
                                             "23",
                                             "4567",
                                             "\xC3\xA9",
                                             "e\xCC\x81",
                                             "\xCC\x81",
                                             "\xCC\xA3\xCC\x81",
                                             "\xE6\x97\xA5\xE6\x9C\xAC",
                                             "\xE3\x83\xBC",
                                             "\xE3\x82\xAB",
                                             "\xED\x95\x9C",
                                             "\xC2\xA0",
                                             "\xCE\xA3",
                                             "\xC4\xB0",
                                             "\xEF\xAC\x81",
                                             "\xE1\xB2\x89",
                                             "\xF0\x90\xB5\x80",
                                             "\xF0\x9F\xA4\x97",
                                             "<|end|>",
                                             "<|w|>",
                                             "<|l|>",
                                             "<|r|>",
                                             " <|l|>",
                                             "<|r|> ",
                                             "\n<|w|>",
                                             "<|end|>\n",
                                             "x<|w|>",
                                             "<|end|>",
                                             "<|end|>x",
                                             "<s>",
                                             "</s>",
                                             " </s>",
                                             "<s><s>",
                                             "\xFF"};

std::string RandomText(std::mt19937& rnd, size_t max_fragments) {
  std::string s;
  const size_t n = 1 + rnd() % max_fragments;
  for (size_t i = 0; i < n; ++i) {
    // Line breaks followed by letters often, so that many cuts are tried.
    if (rnd() % 4 == 0) s += std::string(1, "!.a)9"[rnd() % 5]) + "\n" + std::string(1, "aZk"[rnd() % 3]);
    s += kFragments[rnd() % kFragments.size()];
  }
  return s;
}

}  // namespace

TEST_CASE("pipeline tokenizers: which take the newline-letter cut", "[bpe][cut_rules][pipeline_chunks]") {
  auto rule = [](const std::string& name) {
    auto tok = ReadHfTokenizerJson(kDir + name + ".json", {});
    REQUIRE(tok.ok());
    return (*tok)->cut_rule();
  };
  using R = Tokenizer::CutRule;
  CHECK(rule("qwen2_nfc_split") == R::kNewlineLetter);        // NFC + Qwen's regex
  CHECK(rule("neox_nfc_bytelevel") == R::kNewlineLetter);     // NFC + GPT-2's
  CHECK(rule("unicode16_tekken") == R::kNewlineLetter);       // Tekken's regex
  CHECK(rule("unicode16_deepseek_v3") == R::kNewlineLetter);  // DeepSeek V3's three splits
  CHECK(rule("llama3_known_regex") == R::kNewlineLetter);     // the scanner, with lstrip/rstrip/single_word tokens
  // Only after an added token: a regex no proof covers; Prepend (every part would get the prefix); a prefix space;
  // Strip; another split behavior.
  CHECK(rule("deepseek_splits") == R::kSpecialEnd);
  CHECK(rule("llama2_prepend_replace") == R::kSpecialEnd);
  CHECK(rule("bytelevel_prefix_space") == R::kSpecialEnd);
  CHECK(rule("whitespacesplit_strip_nfd") == R::kSpecialEnd);
  CHECK(rule("split_merged_with_next") == R::kSpecialEnd);
  CHECK(rule("mistral_metaspace_first") == R::kNone);  // "first" tells the input's start apart
}

// The added tokens EncodeStream lets a chunk end with (as encode_stream.cpp picks them).
std::vector<SpecialToken> Enders(const Tokenizer& t) {
  std::vector<SpecialToken> out;
  for (const SpecialToken& s : t.enabled_specials()) {
    const Tokenizer::AddedFlags f = t.added_flags(s.id);
    const auto last = static_cast<unsigned char>(s.text.back());
    if (!f.lstrip && !f.rstrip && !f.single_word && last > ' ' && last < 0x7F && std::isalnum(last) == 0)
      out.push_back(s);
  }
  return out;
}

TEST_CASE("pipeline tokenizers: both sides of every cut after an added token encode as the whole",
          "[bpe][cut_rules][pipeline_chunks]") {
  for (const char* name :
       {"llama2_prepend_replace", "deepseek_splits", "bytelevel_prefix_space", "whitespacesplit_strip_nfd",
        "split_merged_with_next", "metaspace_always_split", "qwen2_nfc_split", "punctuation_isolated_nfkd"}) {
    INFO(name);
    auto tok = ReadHfTokenizerJson(kDir + name + ".json", {});
    REQUIRE(tok.ok());
    const Tokenizer& t = **tok;
    REQUIRE(t.cut_rule() != Tokenizer::CutRule::kNone);
    const std::vector<SpecialToken> enders = Enders(t);
    REQUIRE(!enders.empty());
    Encoder enc(t, 64);
    std::mt19937 rnd(43);
    size_t cuts = 0;
    for (int trial = 0; trial < 300; ++trial) {
      const std::string s = RandomText(rnd, 20);
      std::vector<uint32_t> whole;
      enc.Encode(s, &whole);
      for (size_t c = 1; c < s.size(); ++c) {
        if (!IsSpecialEndCut(s, c, enders, t.enabled_specials())) continue;
        std::vector<uint32_t> parts;
        enc.Encode(std::string_view(s).substr(0, c), &parts);
        enc.Encode(std::string_view(s).substr(c), &parts);
        INFO("text " << s << " cut at " << c);
        CHECK(parts == whole);
        ++cuts;
      }
    }
    CHECK(cuts > 100);
  }
}

TEST_CASE("pipeline tokenizers: both sides of every newline-letter cut encode as the whole",
          "[bpe][cut_rules][pipeline_chunks]") {
  for (const char* name :
       {"qwen2_nfc_split", "neox_nfc_bytelevel", "unicode16_tekken", "unicode16_deepseek_v3", "llama3_known_regex"}) {
    INFO(name);
    auto tok = ReadHfTokenizerJson(kDir + name + ".json", {});
    REQUIRE(tok.ok());
    const Tokenizer& t = **tok;
    REQUIRE(t.cut_rule() == Tokenizer::CutRule::kNewlineLetter);
    Encoder enc(t, 64);
    std::mt19937 rnd(41);
    size_t cuts = 0;
    for (int trial = 0; trial < 400; ++trial) {
      const std::string s = RandomText(rnd, 24);
      std::vector<uint32_t> whole;
      enc.Encode(s, &whole);
      for (size_t c = 2; c < s.size(); ++c) {
        if (!IsNewlineLetterCutOutsideSpecials(s, c, t.enabled_specials())) continue;
        std::vector<uint32_t> parts;
        enc.Encode(std::string_view(s).substr(0, c), &parts);
        enc.Encode(std::string_view(s).substr(c), &parts);
        INFO("text " << s << " cut at " << c);
        CHECK(parts == whole);
        ++cuts;
      }
    }
    CHECK(cuts > 1000);
  }
}

TEST_CASE("pipeline tokenizers: tiny chunks on 1 and 2 threads give the whole text's ids",
          "[bpe][cut_rules][pipeline_chunks]") {
  for (const char* name : {"qwen2_nfc_split", "unicode16_tekken", "unicode16_deepseek_v3", "llama3_known_regex",
                           "llama2_prepend_replace", "deepseek_splits"}) {
    INFO(name);
    auto tok = ReadHfTokenizerJson(kDir + name + ".json", {});
    REQUIRE(tok.ok());
    std::mt19937 rnd(7);
    std::string text;
    for (int i = 0; i < 300; ++i) text += RandomText(rnd, 12);
    Encoder enc(**tok, 64);
    std::vector<uint32_t> whole;
    enc.Encode(text, &whole);
    for (unsigned threads : {1u, 2u}) {
      StringSource src(text);
      VectorSink sink;
      StreamOptions opt;
      opt.chunk_bytes = 16;
      opt.threads = threads;
      auto st = EncodeStream(**tok, src, sink, opt, nullptr);
      REQUIRE(st.ok());
      INFO("threads " << threads);
      CHECK(sink.ids() == whole);
      CHECK(st->chunks > ((*tok)->cut_rule() == Tokenizer::CutRule::kNewlineLetter ? 300u : 50u));
    }
  }
}

TEST_CASE("character-level segments cut before each \"▁\" give the ids of one merge over the segment",
          "[bpe][pipeline_chunks]") {
  // A SentencePiece-style vocabulary (no token holds "▁" after another character), Llama 2's normalizer, no
  // pre-tokenizer: the encoder cuts each segment before every "▁" that follows another character. The reference is
  // BPE over the whole segment, written out here: merge the lowest-ranked adjacent pair, leftmost first.
  const std::string m = "\xE2\x96\x81";
  const std::vector<std::string> vocab = {"a", "b", m, m + "a", m + "b", "ab", m + "ab", "ba", m + m, "bab", m + "ba"};
  const std::vector<std::pair<std::string, std::string>> merges = {{m, "a"},   {"a", "b"}, {m, "b"},    {m + "a", "b"},
                                                                   {"b", "a"}, {m, m},     {"b", "ab"}, {m + "b", "a"}};
  std::string v = "{\"<unk>\":0", mg;
  for (size_t i = 0; i < vocab.size(); ++i) v += ",\"" + vocab[i] + "\":" + std::to_string(i + 1);
  for (const auto& [a, b] : merges) mg += (mg.empty() ? "\"" : ",\"") + a + " " + b + "\"";
  const std::string json =
      R"({"version":"1.0","added_tokens":[{"id":0,"content":"<unk>","single_word":false,"lstrip":false,)"
      R"("rstrip":false,"normalized":false,"special":true}],"normalizer":{"type":"Sequence","normalizers":[)"
      R"({"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]},)"
      R"("pre_tokenizer":null,"post_processor":null,"decoder":null,"model":{"type":"BPE","dropout":null,)"
      R"("unk_token":"<unk>","fuse_unk":true,"byte_fallback":false,"ignore_merges":false,"vocab":)" +
      v + "},\"merges\":[" + mg + "]}}";
  lmkit::test::TempDir dir;
  lmkit::test::WriteAll(dir.file("spm.json"), json);
  auto tok = ReadHfTokenizerJson(dir.file("spm.json"), {});
  REQUIRE(tok.ok());
  const Tokenizer& t = **tok;
  auto reference = [&](const std::string& text) {
    std::string seg = m;  // Prepend, then Replace(" ", "▁")
    for (char c : text) seg += c == ' ' ? m : std::string(1, c);
    std::vector<std::string> sym;
    for (size_t i = 0; i < seg.size();) {
      const size_t len = static_cast<unsigned char>(seg[i]) >= 0xE0 ? 3 : 1;
      sym.push_back(seg.substr(i, len));
      i += len;
    }
    for (;;) {
      size_t best = merges.size(), at = 0;
      for (size_t i = 0; i + 1 < sym.size(); ++i)
        for (size_t r = 0; r < best; ++r)
          if (merges[r].first == sym[i] && merges[r].second == sym[i + 1]) best = r, at = i;
      if (best == merges.size()) break;
      sym[at] += sym[at + 1];
      sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    }
    std::vector<uint32_t> ids;
    for (const auto& s : sym) ids.push_back(t.TokenId(s));
    return ids;
  };
  Encoder enc(t, 64);
  std::mt19937 rnd(5);
  for (int trial = 0; trial < 500; ++trial) {
    std::string text;
    const size_t n = 1 + rnd() % 24;
    for (size_t i = 0; i < n; ++i) text += "ab  "[rnd() % 4];
    std::vector<uint32_t> ids;
    enc.Encode(text, &ids);
    INFO("text '" << text << "'");
    CHECK(ids == reference(text));
  }
}
