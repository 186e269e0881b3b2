// The pre-token table's key comparison: the word-at-a-time tail compare agrees with memcmp on every length and at
// every differing position, and reads no byte outside the keys (the sanitizer build checks the reads).
#include "lmkit/bpe/train/pretoken_table.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

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

TEST_CASE("pretoken table: AddFound over slot ranges plus the missing keys (AddFrom) equals Absorb",
          "[bpe][pretoken_table]") {
  // Keys of 1..33 bytes (inline and arena), a third of them in both tables, enough to grow both tables past their
  // first size; the second table's slots are split into three ranges, as Counter::ReduceView splits them by thread.
  std::mt19937 rng(11);
  auto key_of = [](size_t i) {  // distinct: the digits of i, then 0..29 letters
    std::string k = std::to_string(i);
    k.append(i % 30, static_cast<char>('a' + i % 26));
    return k;
  };
  PretokenTable a, b, expected;
  std::map<std::string, uint64_t> truth;
  for (size_t i = 0; i < 6000; ++i) {
    const uint64_t c = 1 + rng() % 1000;
    const std::string k = key_of(i);
    if (i % 3 != 2) {
      a.Add(k, c);
      expected.Add(k, c);
    }
    if (i % 3 != 0) b.Add(k, c + 1);
    truth[k] += (i % 3 != 2 ? c : 0) + (i % 3 != 0 ? c + 1 : 0);
  }
  expected.Absorb(b);
  const size_t a_before = a.size();
  std::vector<uint64_t> missing;
  const size_t n = b.slot_count();
  for (size_t r = 0; r < 3; ++r) a.AddFound(b, n * r / 3, n * (r + 1) / 3, &missing);
  CHECK(a.size() == a_before);  // nothing inserted
  std::map<std::string, uint64_t> got;
  a.ForEach([&](std::string_view k, uint64_t c) { got[std::string(k)] += c; });
  std::map<std::string, uint64_t> missing_keys;
  for (uint64_t slot : missing)
    b.VisitSlot(slot, [&](std::string_view k, uint64_t c) { missing_keys[std::string(k)] = c; });
  CHECK(missing_keys.size() == missing.size());  // each missing key once
  for (const auto& [k, c] : missing_keys) {
    CHECK(got.count(k) == 0);
    got[k] = c;
  }
  CHECK(missing.size() == 2000);  // the keys only b holds (i % 3 == 2)
  CHECK(got == truth);
  std::map<std::string, uint64_t> absorbed;
  expected.ForEach([&](std::string_view k, uint64_t c) { absorbed[std::string(k)] = c; });
  CHECK(absorbed == truth);
  const std::string probe = key_of(5);  // i % 3 == 2: only in b
  uint64_t prefix = 0;
  std::memcpy(&prefix, probe.data(), std::min<size_t>(probe.size(), 8));
  CHECK(a.Find(probe.data(), probe.size(), prefix, PretokenTable::Hash(prefix, probe.data(), probe.size())) ==
        PretokenTable::kNone);
  CHECK(b.Find(probe.data(), probe.size(), prefix, PretokenTable::Hash(prefix, probe.data(), probe.size())) !=
        PretokenTable::kNone);
  for (uint64_t slot : missing) a.AddFrom(b, slot);  // as Counter::Reduce completes the union
  std::map<std::string, uint64_t> completed;
  a.ForEach([&](std::string_view k, uint64_t c) { completed[std::string(k)] = c; });
  CHECK(a.size() == truth.size());
  CHECK(completed == truth);
}
