// The loaded tokenizer's tables: byte strings <-> ids, merge rules ranked and packed, specials, and what Finish checks;
// the pair and byte-string maps behind their Bloom filters find every key they hold (no false negatives) and nothing
// else.
#include "lmkit/bpe/tokenizer.h"

#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <string>
#include <utility>

using namespace lmkit::bpe;
using lmkit::ErrorCode;

namespace {

// The 256 single bytes as ids 0..255 (as GPT-2's byte-level alphabet, in byte order).
void AddAllBytes(Tokenizer* t) {
  for (int b = 0; b < 256; ++b)
    REQUIRE(t->AddToken(std::string(1, static_cast<char>(b)), static_cast<uint32_t>(b)).ok());
}

uint32_t ByteTok(char c) { return static_cast<uint8_t>(c); }

}  // namespace

TEST_CASE("tokenizer: tokens and merges round trip, a merge is packed rank << 32 | result", "[bpe][tokenizer]") {
  Tokenizer t;
  AddAllBytes(&t);
  REQUIRE(t.AddToken("ab", 256).ok());
  REQUIRE(t.AddToken("abc", 300).ok());  // ids need not be dense
  REQUIRE(t.AddMerge(ByteTok('a'), ByteTok('b'), 0, 256).ok());
  REQUIRE(t.AddMerge(256, ByteTok('c'), 1, 300).ok());
  REQUIRE(t.Finish().ok());
  CHECK(t.ordinary_count() == 258);
  CHECK(t.merge_count() == 2);
  CHECK(t.max_token_bytes() == 3);
  CHECK(t.id_limit() == 301);
  CHECK(t.TokenId("abc") == 300);
  CHECK(t.TokenId("abd") == kNoId);
  CHECK(t.ByteId('z') == ByteTok('z'));
  std::string_view bytes;
  REQUIRE(t.TokenBytes(300, &bytes));
  CHECK(bytes == "abc");
  CHECK_FALSE(t.TokenBytes(299, &bytes));  // a gap in the ids
  CHECK_FALSE(t.TokenBytes(5000, &bytes));
  CHECK(t.Merge(256, ByteTok('c')) == ((uint64_t{1} << 32) | 300));
  CHECK(t.Merge(ByteTok('a'), ByteTok('b')) == 256);  // rank 0
  CHECK(t.Merge(ByteTok('b'), ByteTok('a')) == kNoPair);
}

TEST_CASE("tokenizer: building refuses duplicates, bad merges and a missing byte", "[bpe][tokenizer]") {
  Tokenizer t;
  AddAllBytes(&t);
  CHECK(t.AddToken("a", 400).code() == ErrorCode::kInvalidInput);  // bytes already a token
  CHECK(t.AddToken("zz", 97).code() == ErrorCode::kInvalidInput);  // id already a token
  CHECK(t.AddToken("zz", kMaxTokenId + 1).code() == ErrorCode::kInvalidInput);
  REQUIRE(t.AddToken("ab", 256).ok());
  CHECK(t.AddMerge(ByteTok('a'), ByteTok('c'), 0, 256).code() == ErrorCode::kInvalidInput);  // "ac" is not "ab"
  CHECK(t.AddMerge(ByteTok('a'), 999, 0, 256).code() == ErrorCode::kInvalidInput);           // not a token
  CHECK(t.EnableSpecial("<|nothing|>").code() == ErrorCode::kNotFound);

  Tokenizer partial;
  for (int b = 1; b < 256; ++b)
    REQUIRE(partial.AddToken(std::string(1, static_cast<char>(b)), static_cast<uint32_t>(b)).ok());
  CHECK(partial.Finish().code() == ErrorCode::kInvalidInput);  // byte 0x00 is not a token
  // Bytes that never occur in UTF-8 may be missing (GPT-NeoX's vocabulary): they are dropped when encoding.
  Tokenizer no_ff;
  for (int b = 0; b < 255; ++b)
    REQUIRE(no_ff.AddToken(std::string(1, static_cast<char>(b)), static_cast<uint32_t>(b)).ok());
  REQUIRE(no_ff.Finish().ok());
  CHECK(no_ff.ByteId(0xFF) == kNoId);
}

TEST_CASE("tokenizer: rank files merge every split of a token at the token's rank", "[bpe][tokenizer]") {
  Tokenizer t;
  AddAllBytes(&t);
  REQUIRE(t.AddToken("ab", 256).ok());
  REQUIRE(t.AddToken("bc", 257).ok());
  REQUIRE(t.AddToken("abc", 258).ok());
  t.AddAllSplitsAsMerges();
  REQUIRE(t.Finish().ok());
  const uint64_t abc = (uint64_t{258} << 32) | 258;
  CHECK(t.Merge(256, ByteTok('c')) == abc);  // ab + c
  CHECK(t.Merge(ByteTok('a'), 257) == abc);  // a + bc
  CHECK(t.Merge(ByteTok('a'), ByteTok('b')) == ((uint64_t{256} << 32) | 256));
  CHECK(t.Merge(ByteTok('c'), ByteTok('a')) == kNoPair);
}

TEST_CASE("tokenizer: specials are known, enabled longest first, and decode", "[bpe][tokenizer]") {
  Tokenizer t;
  AddAllBytes(&t);
  REQUIRE(t.AddToken("<|eot|>", 256).ok());  // an ordinary token promoted below
  REQUIRE(t.AddSpecial("<|pad|>", 300, false).ok());
  REQUIRE(t.AddSpecial("<|endofprompt|>", 301, true).ok());
  CHECK_FALSE(t.AddSpecial("<|pad|>", 302, true).ok());  // defined twice
  CHECK_FALSE(t.AddSpecial("", 303, true).ok());
  REQUIRE(t.EnableSpecial("<|pad|>").ok());
  REQUIRE(t.EnableSpecial("<|eot|>").ok());
  REQUIRE(t.Finish().ok());
  CHECK(t.known_specials().size() == 2);  // a promoted ordinary token is not one the file defines
  REQUIRE(t.enabled_specials().size() == 3);
  CHECK(t.enabled_specials()[0].text == "<|endofprompt|>");
  for (size_t i = 1; i < t.enabled_specials().size(); ++i)
    CHECK(t.enabled_specials()[i - 1].text.size() >= t.enabled_specials()[i].text.size());
  std::string_view bytes;
  REQUIRE(t.TokenBytes(300, &bytes));
  CHECK(bytes == "<|pad|>");
}

TEST_CASE("tokenizer: the byte-string map finds long keys and survives growth", "[bpe][tokenizer]") {
  BytesIdMap m;
  for (uint32_t i = 0; i < 5000; ++i) REQUIRE(m.Insert("key-with-a-long-common-prefix-" + std::to_string(i), i));
  CHECK_FALSE(m.Insert("key-with-a-long-common-prefix-7", 99));  // present: unchanged
  CHECK(m.size() == 5000);
  for (uint32_t i = 0; i < 5000; i += 37) CHECK(m.Find("key-with-a-long-common-prefix-" + std::to_string(i)) == i);
  CHECK(m.Find("key-with-a-long-common-prefix-5000") == kNoId);
  CHECK(m.Find("") == kNoId);

  PairMap p;
  for (uint32_t i = 0; i < 3000; ++i) p.Insert(i, i + 1, i);
  p.Insert(7, 8, 5);      // a lower rank wins
  p.Insert(9, 10, 1000);  // a higher one does not
  CHECK(p.size() == 3000);
  CHECK(p.Find(7, 8) == 5);
  CHECK(p.Find(9, 10) == 9);
  CHECK(p.Find(2999, 3000) == 2999);
  CHECK(p.Find(8, 7) == kNoPair);
}

TEST_CASE("PairMap: every pair inserted is found across growth, and absent pairs are not", "[bpe][tokenizer]") {
  for (size_t reserve : {size_t{0}, size_t{1000}, size_t{200000}}) {
    INFO("reserve " << reserve);
    PairMap map;
    if (reserve != 0) map.Reserve(reserve);
    std::mt19937 rng(static_cast<uint32_t>(reserve) + 1);
    std::set<std::pair<uint32_t, uint32_t>> in;
    for (uint32_t k = 0; k < 50000; ++k) {
      const uint32_t l = rng() % 70000, r = rng() % 70000;
      if (!in.insert({l, r}).second) continue;
      map.Insert(l, r, (uint64_t{k} << 32) | k);
    }
    REQUIRE(map.size() == in.size());
    size_t checked = 0;
    for (const auto& [l, r] : in) {
      const uint64_t v = map.Find(l, r);
      REQUIRE(v != kNoPair);
      REQUIRE((v >> 32) == (v & 0xFFFFFFFFu));
      ++checked;
    }
    CHECK(checked == in.size());
    size_t absent = 0;
    for (uint32_t k = 0; k < 50000; ++k) {
      const uint32_t l = rng() % 70000, r = rng() % 70000;
      if (in.count({l, r})) continue;
      REQUIRE(map.Find(l, r) == kNoPair);
      ++absent;
    }
    CHECK(absent > 40000);
  }
  PairMap map;
  map.Insert(5, 6, 10);
  map.Insert(5, 6, 3);  // the lower value wins
  CHECK(map.Find(5, 6) == 3);
  CHECK(map.Find(6, 5) == kNoPair);
  CHECK(map.Find(0xFFFFFFFFu, 0xFFFFFFFEu) == kNoPair);
}

TEST_CASE("BytesIdMap: every key inserted is found across growth, and absent keys are not", "[bpe][tokenizer]") {
  BytesIdMap map;
  std::mt19937 rng(28);
  std::set<std::string> in;
  for (uint32_t id = 0; id < 60000; ++id) {
    std::string key(1 + rng() % 20, '\0');
    for (char& c : key) c = static_cast<char>('a' + rng() % 6);
    if (!in.insert(key).second) continue;
    REQUIRE(map.Insert(key, id));
  }
  REQUIRE(map.size() == in.size());
  for (const std::string& key : in) REQUIRE(map.Find(key) != kNoId);
  size_t absent = 0;
  for (int k = 0; k < 60000; ++k) {
    std::string key(1 + rng() % 20, '\0');
    for (char& c : key) c = static_cast<char>('a' + rng() % 7);  // 'g' never occurs in a key
    if (in.count(key)) continue;
    REQUIRE(map.Find(key) == kNoId);
    ++absent;
  }
  CHECK(absent > 10000);
  CHECK_FALSE(map.Insert(*in.begin(), 99999999));  // already present
}
