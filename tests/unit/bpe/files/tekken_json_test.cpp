// Mistral tekken.json against mistral-common's Tekkenizer: tests/data/bpe/native (scripts/native_goldens.py) holds the
// real tekken_240911.json cut to 1500 ranks, without and with a special_tokens list, and mistral-common 1.13.1's ids
// per string; lmkit must give the same. Malformed files are one-line errors naming the file.
#include <catch2/catch.hpp>
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

const std::string kTekkenDir = std::string(LMKIT_TEST_DATA_DIR) + "/bpe/native";

// The shared golden-file readers (support/goldens.h), under the names this file's cases use.
constexpr auto& ReadTekkenJsonFile = test::ReadGoldenJson;
constexpr auto& TekkenIds = test::GoldenIds;

}  // namespace

TEST_CASE("tekken.json gives mistral-common's ids", "[bpe][tekken]") {
  const Json g = ReadTekkenJsonFile(kTekkenDir + "/goldens.json");
  const Json& strings = g["strings"];
  for (const char* name : {"tekken_small.json", "tekken_small_specials.json"}) {
    INFO(name);
    auto tok = LoadTokenizer(kTekkenDir + "/" + name, {});  // a .json without "model": picked as tekken
    if (!tok.ok()) FAIL(tok.status().ToString());
    CHECK((*tok)->description().rfind("tekken.json", 0) == 0);
    Encoder enc(**tok, 64);
    for (size_t i = 0; i < strings.size(); ++i) {
      const std::string text = strings[i].get<std::string>();
      INFO("string " << i << ": " << DumpJson(strings[i], -1));
      std::vector<uint32_t> ids;
      enc.Encode(text, &ids);  // "<s>" in the text stays text, as in Tekkenizer.encode
      CHECK(ids == TekkenIds(g["files"][name]["ids"][i]));
      std::string back;
      REQUIRE(DecodeIds(**tok, ids.data(), ids.size(), 0, &back).ok());
      CHECK(back == text);
    }
  }
}

TEST_CASE("tekken.json's special ids come first, named by the file or mistral-common's defaults", "[bpe][tekken]") {
  auto plain = ReadTekkenJson(kTekkenDir + "/tekken_small.json", {});
  REQUIRE(plain.ok());
  // 1000 special ids, then 1200 of the file's 1500 ranks.
  CHECK((*plain)->id_limit() == 2200);
  CHECK((*plain)->TokenId("a") == 1000 + 'a');
  const auto& k = (*plain)->known_specials();
  REQUIRE(k.size() == 1000);
  CHECK(k[1].text == "<s>");
  CHECK(k[19].text == "[TOOL_CONTENT]");
  CHECK(k[20].text == "<SPECIAL_20>");
  CHECK((*plain)->enabled_specials().empty());
  auto named = ReadTekkenJson(kTekkenDir + "/tekken_small_specials.json", {});
  REQUIRE(named.ok());
  CHECK((*named)->id_limit() == 1300);
  CHECK((*named)->known_specials()[2].text == "</s>");
  CHECK((*named)->known_specials()[3].text == "<SPECIAL_3>");
}

TEST_CASE("a malformed tekken.json is a one-line error naming the file", "[bpe][tekken]") {
  const Json base = ReadTekkenJsonFile(kTekkenDir + "/tekken_small_specials.json");
  TempDir dir;
  struct Case {
    const char* pointer;
    Json value;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"/config/pattern", Json(3), "\"pattern\" must be a string"},
      {"/config/pattern", Json("(("), "config \"pattern\""},
      {"/config/default_vocab_size", Json(5000), "default_vocab_size 5000"},
      {"/config/default_num_special_tokens", Json(-1), "default_num_special_tokens\" must be"},
      {"/config/default_num_special_tokens", Json(2), "more than config default_num_special_tokens"},
      {"/vocab/7/rank", Json(8), "\"rank\" is 8, not its position"},
      {"/vocab/300/token_bytes", Json("!!"), "not valid base64"},
      {"/vocab/3/token_bytes", Json("QQ=="), "single bytes in order"},
      {"/vocab/400/token_bytes", Json("QQ=="), "repeats the bytes"},
      {"/special_tokens/1/token_str", Json("<unk>"), "defined twice"},
      {"/special_tokens", Json("x"), "\"special_tokens\" must be a list"},
      {"/vocab", Json::object(), "\"vocab\" must be a list"},
  };
  for (const auto& c : cases) {
    INFO(c.pointer << " " << c.needle);
    Json j = base;
    j[Json::json_pointer(c.pointer)] = c.value;
    const std::string path = dir.path() + "/t.json";
    WriteAll(path, DumpJson(j, -1));
    auto tok = LoadTokenizer(path, {});
    REQUIRE_FALSE(tok.ok());
    const std::string msg = tok.status().ToString();
    CHECK(msg.find(c.needle) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.find("t.json") != std::string::npos);
  }
}

TEST_CASE("tekken.json --add-special-tokens gives mistral-common's encode with bos", "[bpe][tekken]") {
  // tests/data/bpe/native/goldens_extra.json (scripts/native_goldens_extra.py): mistral-common 1.13.1's
  // Tekkenizer.encode(s, bos=True, eos=False).
  const Json g = ReadTekkenJsonFile(kTekkenDir + "/goldens_extra.json");
  const Json& strings = g["strings"];
  size_t files = 0;
  for (const char* name : {"tekken_small.json", "tekken_small_specials.json"}) {
    INFO(name);
    auto tok = LoadTokenizer(kTekkenDir + "/" + name, {});
    REQUIRE(tok.ok());
    REQUIRE((*tok)->has_template());
    CHECK((*tok)->template_suffix().empty());
    Encoder enc(**tok, 64);
    for (size_t i = 0; i < strings.size(); ++i) {
      INFO("string " << i);
      std::vector<uint32_t> body, ids = (*tok)->template_prefix();
      enc.Encode(strings[i].get<std::string>(), &body);
      ids.insert(ids.end(), body.begin(), body.end());
      CHECK(ids == TekkenIds(g["files"][name]["ids_with_bos"][i]));
    }
    ++files;
  }
  CHECK(files == 2);
}
