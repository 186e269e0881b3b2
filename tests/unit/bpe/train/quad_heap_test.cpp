// The merger's 4-ary max-heap: pops come out in the order of a full sort, whether filled by Push or by Append and
// Heapify, with pushes interleaved between pops, and for sizes around the node fan-out.
#include "lmkit/bpe/train/quad_heap.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <tuple>
#include <vector>

using lmkit::bpe::train::HeapEntry;
using lmkit::bpe::train::QuadHeap;

namespace {

// A strict total order (count, then a, then b), so the pop order is unique and can be compared with std::sort.
struct Less {
  bool operator()(const HeapEntry& x, const HeapEntry& y) const {
    return std::tie(x.count, x.a, x.b) < std::tie(y.count, y.a, y.b);
  }
};

std::vector<HeapEntry> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<HeapEntry> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = {static_cast<int64_t>(rng() % 50), static_cast<uint32_t>(i), static_cast<uint32_t>(rng() % 3)};
  return v;
}

std::vector<HeapEntry> Descending(std::vector<HeapEntry> v) {
  std::sort(v.begin(), v.end(), [](const HeapEntry& x, const HeapEntry& y) { return Less()(y, x); });
  return v;
}

bool Same(const std::vector<HeapEntry>& x, const std::vector<HeapEntry>& y) {
  return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const HeapEntry& p, const HeapEntry& q) {
    return p.count == q.count && p.a == q.a && p.b == q.b;
  });
}

}  // namespace

TEST_CASE("quad heap: pops in sorted order after Push or Append + Heapify", "[bpe][train]") {
  for (size_t n : {0u, 1u, 2u, 4u, 5u, 6u, 17u, 21u, 1000u}) {
    INFO("n = " << n);
    const std::vector<HeapEntry> v = Random(n, static_cast<uint32_t>(n));
    QuadHeap<Less> pushed{Less()}, bulk{Less()};
    for (const HeapEntry& e : v) pushed.Push(e);
    bulk.Reserve(n);
    for (const HeapEntry& e : v) bulk.Append(e);
    bulk.Heapify();
    std::vector<HeapEntry> a, b;
    while (!pushed.empty()) a.push_back(pushed.Pop());
    while (!bulk.empty()) b.push_back(bulk.Pop());
    CHECK(Same(a, Descending(v)));
    CHECK(Same(b, Descending(v)));
  }
}

TEST_CASE("quad heap: pushes between pops keep the maximum on top", "[bpe][train]") {
  // The merger's pattern: pop the top, push back entries with lower counts (stale re-pushes) and new ones.
  std::mt19937 rng(3);
  QuadHeap<Less> h{Less()};
  std::vector<HeapEntry> live = Random(500, 1);
  for (const HeapEntry& e : live) h.Append(e);
  h.Heapify();
  uint32_t next_id = 1000;
  for (int step = 0; step < 2000 && !h.empty(); ++step) {
    const HeapEntry top = h.Pop();
    auto best = std::max_element(live.begin(), live.end(), Less());
    REQUIRE(best != live.end());
    REQUIRE((best->count == top.count && best->a == top.a && best->b == top.b));
    live.erase(best);
    if (top.count > 0 && rng() % 2) {
      const HeapEntry e{top.count - 1 - static_cast<int64_t>(rng() % 3), next_id++, 0};
      h.Push(e);
      live.push_back(e);
    }
  }
}
