// SentencePiece .model files against sentencepiece itself: tests/data/bpe/native (scripts/native_goldens.py) holds
// tiny BPE models trained by sentencepiece 0.2.3 with each whitespace option, a user-defined and a control symbol and
// byte fallback, and Mistral's real v3 model, with sentencepiece's ids and decoded text per string; lmkit must give
// the same. Models lmkit does not implement are one-line errors (built here as protobuf bytes).
#include <catch2/catch.hpp>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "lmkit/bpe/encode/decoder.h"
#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/common/json.h"
#include "support/goldens.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::bpe;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;

namespace {

const std::string kSpmDir = std::string(LMKIT_TEST_DATA_DIR) + "/bpe/native";

// The shared golden-file readers (support/goldens.h), under the names this file's cases use.
constexpr auto& ReadSpmJson = test::ReadGoldenJson;
constexpr auto& SpmIds = test::GoldenIds;

// Protobuf wire format, enough to write a ModelProto (field numbers of sentencepiece_model.proto).
std::string PbVarint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
std::string PbBytes(int field, const std::string& body) {
  return PbVarint(field << 3 | 2) + PbVarint(body.size()) + body;
}
std::string PbInt(int field, uint64_t v) { return PbVarint(field << 3) + PbVarint(v); }
std::string PbPiece(const std::string& text, float score, int type) {
  std::string f(4, '\0');
  std::memcpy(f.data(), &score, 4);
  return PbBytes(1, PbBytes(1, text) + PbVarint(2 << 3 | 5) + f + PbInt(3, type));
}
enum { kSpNormal = 1, kSpUnknown = 2, kSpControl = 3, kSpUserDefined = 4, kSpUnused = 5 };

// <unk>, ▁, a, b, ab (score -1), ▁ab (score -2); BPE; identity normalizer with the dummy prefix, spaces kept.
std::string SpmSmallModel(const std::string& trainer_extra = "", const std::string& normalizer_extra = "",
                          const std::string& extra_pieces = "") {
  return PbPiece("<unk>", 0, kSpUnknown) + PbPiece("\xE2\x96\x81", -3, kSpNormal) + PbPiece("a", -4, kSpNormal) +
         PbPiece("b", -5, kSpNormal) + PbPiece("ab", -1, kSpNormal) +
         PbPiece(
             "\xE2\x96\x81"
             "ab",
             -2, kSpNormal) +
         extra_pieces + PbBytes(2, PbInt(3, 2) + trainer_extra) +
         PbBytes(3, PbBytes(1, "identity") + PbInt(4, 0) + normalizer_extra);
}

}  // namespace

TEST_CASE("SentencePiece models give sentencepiece's ids", "[bpe][sentencepiece]") {
  const Json g = ReadSpmJson(kSpmDir + "/goldens.json");
  const Json& strings = g["strings"];
  size_t checked = 0;
  for (auto it = g["files"].begin(); it != g["files"].end(); ++it) {
    const std::string name = it.key();
    if (name.find(".model") == std::string::npos) continue;
    INFO(name);
    // Picked by content: the same loader reads tiktoken rank files named tokenizer.model.
    auto tok = LoadTokenizer(kSpmDir + "/" + name, {});
    if (!tok.ok()) FAIL(tok.status().ToString());
    CHECK((*tok)->description().rfind("SentencePiece model", 0) == 0);
    Encoder enc(**tok, 64);
    for (size_t i = 0; i < strings.size(); ++i) {
      const std::string text = strings[i].get<std::string>();
      INFO("string " << i << ": " << DumpJson(strings[i], -1));
      std::vector<uint32_t> ids;
      enc.Encode(text, &ids);
      const std::vector<uint32_t> want = SpmIds(it.value()["ids"][i]);
      CHECK(ids == want);
      std::string back;
      REQUIRE(DecodeIds(**tok, ids.data(), ids.size(), 0, &back).ok());
      if (ids == want) CHECK(back == it.value()["decoded"][i].get<std::string>());
      ++checked;
    }
  }
  CHECK(checked == 4 * strings.size());
}

TEST_CASE("a SentencePiece model merges by score, leftmost first among equal scores", "[bpe][sentencepiece]") {
  TempDir dir;
  const std::string path = dir.path() + "/small.model";
  // "ab" outranks "▁ab": both "ab" merge first, then each "▁" + "ab".
  WriteAll(path, SpmSmallModel());
  auto tok = ReadSentencePieceModel(path, {});
  REQUIRE(tok.ok());
  Encoder enc(**tok, 64);
  std::vector<uint32_t> ids;
  enc.Encode("ab ab", &ids);
  CHECK(ids == std::vector<uint32_t>{5, 5});
  ids.clear();
  enc.Encode("ba", &ids);  // "▁b" is no piece: ▁, b, a
  CHECK(ids == std::vector<uint32_t>{1, 3, 2});
  // Characters that are no piece, without byte fallback: one fused <unk>.
  ids.clear();
  enc.Encode("xyab", &ids);
  CHECK(ids == std::vector<uint32_t>{1, 0, 4});

  // "aa" and "aaa" score the same: sentencepiece merges the leftmost pair, whatever piece it makes. "aaaa": a a a a
  // -> aa a a (leftmost) -> aaa a (leftmost: "aaa" before "aa") -> no "aaaa". Ranking by the result's id instead
  // would take the right "a a" second and give aa aa.
  const std::string tie_path = dir.path() + "/tie.model";
  WriteAll(tie_path, PbPiece("<unk>", 0, kSpUnknown) + PbPiece("a", -1, kSpNormal) + PbPiece("aa", -2, kSpNormal) +
                         PbPiece("aaa", -2, kSpNormal) + PbBytes(2, PbInt(3, 2)) +
                         PbBytes(3, PbBytes(1, "identity") + PbInt(3, 0) + PbInt(4, 0)));
  auto tie = ReadSentencePieceModel(tie_path, {});
  REQUIRE(tie.ok());
  Encoder tenc(**tie, 64);
  ids.clear();
  tenc.Encode("aaaa", &ids);
  CHECK(ids == std::vector<uint32_t>{3, 1});
}

TEST_CASE("what lmkit does not implement in a SentencePiece model is a one-line error", "[bpe][sentencepiece]") {
  TempDir dir;
  const float nan = std::nanf("");
  struct Case {
    std::string bytes;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {PbPiece("<unk>", 0, kSpUnknown) + PbPiece("a", 0, kSpNormal) + PbBytes(2, PbInt(3, 1)),
       "type UNIGRAM is not implemented"},
      {SpmSmallModel("", PbBytes(2, "\x01\x02\x03")), "precompiled character map"},
      {SpmSmallModel(PbInt(24, 1)), "treat_whitespace_as_suffix"},
      {SpmSmallModel("", "", PbPiece("zz", -9, kSpUnused)), "UNUSED pieces are not implemented"},
      {SpmSmallModel("", "", PbPiece("q", nan, kSpNormal)), "score is not a number"},
      {SpmSmallModel("", "", PbPiece("", 0, kSpNormal)), "piece is empty"},
      {SpmSmallModel("", "", PbPiece("<0xZZ>", 0, 6)), "BYTE piece is not <0xXX>"},
      {SpmSmallModel("", "", PbPiece("a", 0, kSpNormal)), "repeats the bytes"},
      {PbPiece("a", 0, kSpNormal) + PbBytes(2, PbInt(3, 2)), "no UNKNOWN piece"},
      {SpmSmallModel("", "", PbPiece(std::string(3000, 'x'), 0, kSpNormal)), "longer than 2048 bytes"},
      {std::string("\x0A\x09\x0A\x05<unk"), "does not parse"},
  };
  for (const auto& c : cases) {
    INFO(c.needle);
    const std::string path = dir.path() + "/t.model";
    WriteAll(path, c.bytes);
    auto tok = ReadSentencePieceModel(path, {});
    REQUIRE_FALSE(tok.ok());
    const std::string msg = tok.status().ToString();
    CHECK(msg.find(c.needle) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.find("t.model") != std::string::npos);
  }
  // A pattern is the user's mistake: a SentencePiece model has none.
  const std::string path = dir.path() + "/small.model";
  WriteAll(path, SpmSmallModel());
  TokenizerOptions opts;
  opts.pattern = PretokPattern::kGpt2;
  auto tok = LoadTokenizer(path, opts);
  REQUIRE_FALSE(tok.ok());
  CHECK(tok.status().code() == ErrorCode::kInvalidArgument);
}

TEST_CASE("a tiktoken rank file is not taken for a SentencePiece model", "[bpe][sentencepiece]") {
  CHECK(detail::LooksLikeSentencePiece(std::string("\x0A\x0B\x0A\x05<unk>", 9)));
  CHECK(detail::LooksLikeSentencePiece(std::string("\x0A\x85\x01\x0A\x05", 5)));  // a two-byte length
  CHECK_FALSE(detail::LooksLikeSentencePiece("IQ== 0\nIg== 1\n"));
  CHECK_FALSE(detail::LooksLikeSentencePiece("\nIQ== 0\nIg== 1\n"));  // a rank file starting with an empty line
  CHECK_FALSE(detail::LooksLikeSentencePiece(""));
}

TEST_CASE("SentencePiece decoding and --add-special-tokens match sentencepiece", "[bpe][sentencepiece]") {
  // tests/data/bpe/native/goldens_extra.json (scripts/native_goldens_extra.py, sentencepiece 0.2.3): decode() of 400
  // random id sequences per model (leading U+2581 pieces after control pieces, unknown pieces, byte pieces) and
  // encode(s, add_bos=True).
  const Json g = ReadSpmJson(kSpmDir + "/goldens_extra.json");
  const Json& strings = g["strings"];
  size_t models = 0;
  for (auto it = g["files"].begin(); it != g["files"].end(); ++it) {
    const std::string name = it.key();
    if (name.find(".model") == std::string::npos) continue;
    INFO(name);
    auto tok = LoadTokenizer(kSpmDir + "/" + name, {});
    REQUIRE(tok.ok());
    const Json& seqs = it.value()["decode_ids"];
    REQUIRE(seqs.size() == 400);
    for (size_t i = 0; i < seqs.size(); ++i) {
      const std::vector<uint32_t> ids = SpmIds(seqs[i]);
      INFO("sequence " << i << ": " << DumpJson(seqs[i], -1));
      std::string back;
      REQUIRE(DecodeIds(**tok, ids.data(), ids.size(), 0, &back).ok());
      CHECK(back == it.value()["decoded"][i].get<std::string>());
      // The same ids in blocks of one carry the start state from block to block.
      std::string blocks;
      DecodeState state;
      for (size_t k = 0; k < ids.size(); ++k) REQUIRE(DecodeIds(**tok, &ids[k], 1, k, &blocks, &state).ok());
      CHECK(blocks == back);
    }
    REQUIRE((*tok)->has_template());
    CHECK((*tok)->template_suffix().empty());
    Encoder enc(**tok, 64);
    for (size_t i = 0; i < strings.size(); ++i) {
      INFO("string " << i);
      std::vector<uint32_t> body, ids = (*tok)->template_prefix();
      enc.Encode(strings[i].get<std::string>(), &body);
      ids.insert(ids.end(), body.begin(), body.end());
      CHECK(ids == SpmIds(it.value()["ids_with_bos"][i]));
    }
    ++models;
  }
  CHECK(models == 4);

  // A model whose bos_piece is not a CONTROL piece has no BOS to add (sentencepiece refuses add_bos there).
  TempDir dir;
  const std::string path = dir.path() + "/nobos.model";
  WriteAll(path, SpmSmallModel());
  auto small = LoadTokenizer(path, {});
  REQUIRE(small.ok());
  CHECK_FALSE((*small)->has_template());
  // bos_piece (field 46) names another CONTROL piece: that one is added.
  WriteAll(path, SpmSmallModel(PbBytes(46, "<go>"), "", PbPiece("<go>", 0, kSpControl)));
  small = LoadTokenizer(path, {});
  REQUIRE(small.ok());
  REQUIRE((*small)->has_template());
  CHECK((*small)->template_prefix() == std::vector<uint32_t>{6});
}
