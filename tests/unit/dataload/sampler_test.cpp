#include "lmkit/dataload/sampler.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>

using lmkit::dataload::UniformBelow;
using lmkit::dataload::Window;
using lmkit::dataload::WindowSampler;

// CS336 test_get_batch: with n tokens and context T, starts are uniform in [0, n − T): over many draws every start in
// range appears, and none outside.
TEST_CASE("sampler: every start in 0..n-T-1 appears and none outside (CS336 test_get_batch)", "[dataload]") {
  const uint64_t n = 100, T = 7;
  auto s = WindowSampler::Create({n}, {"a.bin"}, T, 42);
  REQUIRE(s.ok());
  CHECK(s->window_count() == n - T);
  std::map<uint64_t, uint64_t> seen;
  std::vector<Window> batch(32);
  for (uint64_t b = 0; b < 1000; ++b) {
    s->SampleBatch(b, batch.size(), batch.data());
    for (const auto& w : batch) {
      REQUIRE(w.shard == 0);
      REQUIRE(w.start < n - T);
      ++seen[w.start];
    }
  }
  CHECK(seen.size() == n - T);  // every start appeared: 0 and n − T − 1 included
  CHECK(seen.begin()->first == 0);
  CHECK(seen.rbegin()->first == n - T - 1);
  // 32,000 draws over 93 starts: each expected 344; a fair sampler stays within ±30% with overwhelming probability.
  for (const auto& [start, count] : seen) {
    CHECK(count > 240);
    CHECK(count < 450);
  }
}

TEST_CASE("sampler: batch k depends only on (seed, k)", "[dataload]") {
  auto a = WindowSampler::Create({1000000}, {"a"}, 1024, 7);
  auto b = WindowSampler::Create({1000000}, {"a"}, 1024, 7);
  auto c = WindowSampler::Create({1000000}, {"a"}, 1024, 8);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(c.ok());
  std::vector<Window> x(12), y(12), z(12);
  b->SampleBatch(3, 12, y.data());  // out of order on purpose
  a->SampleBatch(3, 12, x.data());
  c->SampleBatch(3, 12, z.data());
  bool all_same = true, any_diff_seed = false;
  for (size_t i = 0; i < 12; ++i) {
    all_same = all_same && x[i].start == y[i].start;
    any_diff_seed = any_diff_seed || x[i].start != z[i].start;
  }
  CHECK(all_same);
  CHECK(any_diff_seed);
  a->SampleBatch(4, 12, z.data());
  bool differs = false;
  for (size_t i = 0; i < 12; ++i) differs = differs || x[i].start != z[i].start;
  CHECK(differs);
}

TEST_CASE("sampler: windows never cross shards and each shard gets its share", "[dataload]") {
  // Shards of 20 and 50 tokens, T = 10: 10 and 40 windows, so shard 1 should get 80% of the draws.
  auto s = WindowSampler::Create({20, 50}, {"a", "b"}, 10, 1);
  REQUIRE(s.ok());
  CHECK(s->window_count() == 50);
  CHECK(s->WindowAt(0).shard == 0);
  CHECK(s->WindowAt(9).shard == 0);
  CHECK(s->WindowAt(9).start == 9);
  CHECK(s->WindowAt(10).shard == 1);
  CHECK(s->WindowAt(10).start == 0);
  CHECK(s->WindowAt(49).start == 39);
  std::vector<Window> batch(100);
  uint64_t in_b = 0;
  std::set<std::pair<uint32_t, uint64_t>> seen;
  for (uint64_t k = 0; k < 100; ++k) {
    s->SampleBatch(k, batch.size(), batch.data());
    for (const auto& w : batch) {
      REQUIRE(w.start + 10 < (w.shard == 0 ? 20u : 50u));  // y's last token stays inside the shard
      in_b += w.shard;
      seen.insert({w.shard, w.start});
    }
  }
  CHECK(seen.size() == 50);
  CHECK(in_b > 7600);
  CHECK(in_b < 8400);
}

TEST_CASE("sampler: a shard without a full window is an error naming it", "[dataload]") {
  auto s = WindowSampler::Create({2000, 1024}, {"big.bin", "small.bin"}, 1024, 0);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().subject() == "small.bin");
  CHECK(s.status().message().find("1025") != std::string::npos);
  CHECK(WindowSampler::Create({1025}, {"x"}, 1024, 0).ok());  // exactly one window: start 0
}

TEST_CASE("sampler: UniformBelow stays below its bound, bound 1 gives 0", "[dataload]") {
  uint64_t state = 5;
  for (int i = 0; i < 1000; ++i) CHECK(UniformBelow(state, 1) == 0);
  uint64_t counts[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i) {
    uint64_t v = UniformBelow(state, 3);
    REQUIRE(v < 3);
    ++counts[v];
  }
  for (uint64_t c : counts) CHECK((c > 9500 && c < 10500));
  const uint64_t big = (1ULL << 63) + 12345;  // the rejection zone matters here
  for (int i = 0; i < 1000; ++i) CHECK(UniformBelow(state, big) < big);
}
