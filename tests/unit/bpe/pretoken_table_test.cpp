// The pre-token table's key comparison: the word-at-a-time tail compare agrees with memcmp on every length and at
// every differing position, and reads no byte outside the keys (the sanitizer build checks the reads).
#include "lmkit/bpe/pretoken_table.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <random>
#include <string>

using lmkit::bpe::PretokenTable;
using lmkit::bpe::table_detail::SameTail;

TEST_CASE("pretoken table: SameTail equals memcmp of bytes 8..len", "[bpe][pretoken_table]") {
  std::mt19937 rng(7);
  for (size_t len = 9; len <= 64; ++len) {
    // Each key in its own allocation of exactly len bytes, so a read past either end is a sanitizer error.
    std::unique_ptr<char[]> x(new char[len]), y(new char[len]);
    for (size_t i = 0; i < len; ++i) x[i] = static_cast<char>(rng());
    std::memcpy(y.get(), x.get(), len);
    CHECK(SameTail(x.get(), y.get(), len));
    for (size_t at = 8; at < len; ++at) {
      y[at] = static_cast<char>(y[at] ^ (1 << (at % 8)));
      INFO("len " << len << ", differs at " << at);
      CHECK_FALSE(SameTail(x.get(), y.get(), len));
      y[at] = x[at];
    }
  }
}

TEST_CASE("pretoken table: long keys that share their first 8 bytes stay apart", "[bpe][pretoken_table]") {
  PretokenTable t;
  const std::string base = "internationalization";  // 20 bytes
  for (size_t at = 8; at < base.size(); ++at) {
    std::string k = base;
    k[at] = '_';
    t.Add(k, at);
  }
  t.Add(base, 1000);
  t.Add(base, 1);
  size_t entries = 0;
  uint64_t base_count = 0;
  t.ForEach([&](std::string_view key, uint64_t count) {
    ++entries;
    if (key == base) base_count = count;
  });
  CHECK(entries == base.size() - 8 + 1);
  CHECK(base_count == 1001);
}
