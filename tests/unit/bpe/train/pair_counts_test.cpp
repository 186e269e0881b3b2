// The merger's pair table: dense indexes in insertion order, counts and keys by index, absent pairs count 0, and
// every entry found again after the table has grown many times (against std::map).
#include "lmkit/bpe/train/pair_counts.h"

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <vector>

using lmkit::bpe::train::PairCounts;

TEST_CASE("pair counts: indexes, counts and keys, absent pairs count 0", "[bpe][train]") {
  PairCounts p;
  bool inserted = false;
  const uint64_t ab = (uint64_t{1} << 32) | 2, ba = (uint64_t{2} << 32) | 1;
  CHECK(p.FindOrInsert(ab, &inserted) == 0);
  CHECK(inserted);
  CHECK(p.FindOrInsert(ba, &inserted) == 1);
  CHECK(inserted);
  CHECK(p.FindOrInsert(ab, &inserted) == 0);
  CHECK_FALSE(inserted);
  p.count_[0] += 5;
  p.count_[1] -= 2;
  CHECK(p.CountOf(ab) == 5);
  CHECK(p.CountOf(ba) == -2);
  CHECK(p.CountOf(0) == 0);  // absent (key 0 = the pair (0, 0))
  CHECK(p.key_of_[0] == ab);
  CHECK(p.key_of_[1] == ba);
  CHECK(p.count_.size() == 2);
  CHECK(p.where_.size() == 2);
}

TEST_CASE("pair counts: every pair is found after many growths", "[bpe][train]") {
  PairCounts p;
  std::map<uint64_t, std::pair<uint32_t, int64_t>> ref;  // key -> (index, count)
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000; ++i) {
    // Keys clustered in a few high words, as token pairs are, plus repeats.
    const uint64_t key = ((rng() % 700) << 32) | (rng() % 700);
    bool inserted = false;
    const uint32_t idx = p.FindOrInsert(key, &inserted);
    auto it = ref.find(key);
    if (it == ref.end()) {
      REQUIRE(inserted);
      REQUIRE(idx == ref.size());
      ref[key] = {idx, 0};
    } else {
      REQUIRE_FALSE(inserted);
      REQUIRE(idx == it->second.first);
    }
    p.count_[idx] += static_cast<int64_t>(key % 7) + 1;
    ref[key].second += static_cast<int64_t>(key % 7) + 1;
  }
  REQUIRE(ref.size() > (1u << 16));  // the table started at 2^16 slots and grew
  for (const auto& [key, v] : ref) {
    CHECK(p.CountOf(key) == v.second);
    CHECK(p.key_of_[v.first] == key);
  }
  CHECK(p.CountOf((uint64_t{701} << 32) | 3) == 0);
}
