// The caching-allocator simulation, rule by rule: every expected block layout below is worked out by hand from the
// rules of c10/cuda/CUDACachingAllocator.cpp (round_size, get_allocation_size, get_free_block, should_split,
// free_block's merging, release_available_cached_blocks, release_cached_blocks, expandable segments).
#include "lmkit/accounting/cuda_allocator_sim.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

using namespace lmkit::accounting;

namespace {

constexpr uint64_t M = kMiB;

// A segment's blocks as "A3M F17M" (A = allocated, F = free mapped, U = unmapped), sizes in MiB when whole, else
// bytes.
std::string Layout(const SimSegment& s) {
  std::string out;
  for (const auto& b : s.blocks) {
    if (!out.empty()) out += ' ';
    out += b.allocated ? 'A' : b.mapped ? 'F' : 'U';
    out += b.size % M == 0 ? std::to_string(b.size / M) + "M" : std::to_string(b.size);
  }
  return out;
}

std::vector<std::string> Layouts(const CudaAllocatorSim& a) {
  std::vector<std::string> v;
  for (const auto& s : a.Segments()) v.push_back(Layout(s));
  return v;
}

AllocatorConfig Cap(uint64_t bytes) {
  AllocatorConfig c;
  c.capacity = bytes;
  return c;
}

}  // namespace

TEST_CASE("allocator sim: round_size rounds to 512 B", "[allocator]") {
  CHECK(CudaAllocatorSim::RoundSize(0) == 512);
  CHECK(CudaAllocatorSim::RoundSize(1) == 512);
  CHECK(CudaAllocatorSim::RoundSize(512) == 512);
  CHECK(CudaAllocatorSim::RoundSize(513) == 1024);
  CHECK(CudaAllocatorSim::RoundSize(1000000) == 1000448);  // 1954 x 512 = 1,000,448
}

TEST_CASE("allocator sim: get_allocation_size picks 2 MiB, 20 MiB or the request rounded to 2 MiB", "[allocator]") {
  CHECK(CudaAllocatorSim::AllocationSize(512) == 2 * M);
  CHECK(CudaAllocatorSim::AllocationSize(M) == 2 * M);  // 1 MiB is still small
  CHECK(CudaAllocatorSim::AllocationSize(M + 512) == 20 * M);
  CHECK(CudaAllocatorSim::AllocationSize(10 * M - 512) == 20 * M);
  CHECK(CudaAllocatorSim::AllocationSize(10 * M) == 10 * M);  // 10 MiB and up: own segment
  CHECK(CudaAllocatorSim::AllocationSize(11 * M + 512) == 12 * M);
}

TEST_CASE("allocator sim: small requests pack into one 2 MiB segment, split to 512 B", "[allocator]") {
  CudaAllocatorSim a(Cap(100 * M));
  const uint64_t x = a.Malloc(1000);  // 1024 B
  const uint64_t y = a.Malloc(3000);  // 3072 B, right behind x
  REQUIRE(x != 0);
  CHECK(y == x + 1024);
  CHECK(Layouts(a) == std::vector<std::string>{"A1024 A3072 F2093056"});  // 2 MiB - 4096
  CHECK(a.reserved() == 2 * M);
  CHECK(a.allocated() == 4096);
  // 1 MiB is still small; then a request leaving exactly 512 B splits it off.
  REQUIRE(a.Malloc(M) == x + 4096);
  const uint64_t w = a.Malloc(1044480 - 512);
  CHECK(Layouts(a) == std::vector<std::string>{"A1024 A3072 A1M A1043968 F512"});
  a.Free(w);
  a.Free(x);
  CHECK(Layouts(a) == std::vector<std::string>{"F1024 A3072 A1M F1044480"});  // w merged with the 512 B tail
  CHECK(a.reserved() == 2 * M);
}

TEST_CASE("allocator sim: 1-10 MiB requests split a 20 MiB segment, a remainder of 1 MiB or less is not split",
          "[allocator]") {
  CudaAllocatorSim a(Cap(100 * M));
  REQUIRE(a.Malloc(3 * M) != 0);
  CHECK(Layouts(a) == std::vector<std::string>{"A3M F17M"});
  REQUIRE(a.Malloc(16 * M + M / 2) != 0);  // the 17 MiB block, 0.5 MiB left: kept whole
  CHECK(Layouts(a) == std::vector<std::string>{"A3M A17M"});
  CHECK(a.allocated() == 20 * M);
  CHECK(a.reserved() == 20 * M);
}

TEST_CASE("allocator sim: a request of 10 MiB or more gets its own segment rounded to 2 MiB", "[allocator]") {
  CudaAllocatorSim a(Cap(100 * M));
  REQUIRE(a.Malloc(15 * M + 1) != 0);  // 15 MiB + 512 -> 16 MiB segment, 1 MiB - 512 left: not split
  CHECK(Layouts(a) == std::vector<std::string>{"A16M"});
  CHECK(a.allocated() == 16 * M);
  REQUIRE(a.Malloc(11 * M) != 0);  // 12 MiB segment, 1 MiB left: not split (more than 1 MiB is needed)
  CHECK(Layouts(a) == std::vector<std::string>{"A16M", "A12M"});
  REQUIRE(a.Malloc(13 * M - 512) != 0);  // 14 MiB segment, 1 MiB + 512 left: split
  CHECK(Layouts(a) == std::vector<std::string>{"A16M", "A12M", "A13630976 F1049088"});
}

TEST_CASE("allocator sim: best fit takes the smallest cached block that holds the request", "[allocator]") {
  CudaAllocatorSim a(Cap(1000 * M));
  const uint64_t p = a.Malloc(30 * M), q = a.Malloc(50 * M), r = a.Malloc(40 * M);
  REQUIRE((p && q && r));
  a.Free(p);
  a.Free(r);
  const uint64_t s = a.Malloc(35 * M);  // 40 MiB block (30 is too small, 50 is in use), 5 MiB left: split
  CHECK(s == r);
  CHECK(Layouts(a) == std::vector<std::string>{"F30M", "A50M", "A35M F5M"});
  CHECK(a.Malloc(30 * M) == p);  // exact fit, no cudaMalloc
  CHECK(a.num_device_alloc() == 3);
}

TEST_CASE("allocator sim: freed blocks merge with free neighbours, empty_cache releases whole free segments",
          "[allocator]") {
  CudaAllocatorSim a(Cap(100 * M));
  const uint64_t x = a.Malloc(2 * M), y = a.Malloc(3 * M), z = a.Malloc(4 * M);
  CHECK(Layouts(a) == std::vector<std::string>{"A2M A3M A4M F11M"});
  a.Free(x);
  a.Free(z);
  CHECK(Layouts(a) == std::vector<std::string>{"F2M A3M F15M"});
  a.EmptyCache();  // the segment still holds y: nothing released
  CHECK(a.reserved() == 20 * M);
  a.Free(y);
  CHECK(Layouts(a) == std::vector<std::string>{"F20M"});
  a.EmptyCache();
  CHECK(a.reserved() == 0);
  CHECK(a.Segments().empty());
  CHECK(a.num_device_free() == 1);
}

TEST_CASE("allocator sim: a failing cudaMalloc releases free cached segments and retries", "[allocator]") {
  CudaAllocatorSim a(Cap(100 * M));
  a.Free(a.Malloc(60 * M));             // cached, 60 MiB reserved
  const uint64_t b = a.Malloc(70 * M);  // 60 + 70 > 100: release the cached 60, retry
  CHECK(b != 0);
  CHECK(a.reserved() == 70 * M);
  CHECK(a.num_alloc_retries() == 1);
  CHECK(a.num_ooms() == 0);
}

TEST_CASE("allocator sim: fragmentation fails a request smaller than the total free memory", "[allocator]") {
  // 900 MiB device. A 400 MiB model, a 150 MiB one beside it; the first unloads and a 300 MiB burst splits its
  // segment: 450 MiB free in all (100 cached, 350 never reserved) but no 400 MiB piece.
  CudaAllocatorSim a(Cap(900 * M));
  const uint64_t w1 = a.Malloc(400 * M);
  REQUIRE(a.Malloc(150 * M) != 0);
  a.Free(w1);
  REQUIRE(a.Malloc(300 * M) == w1);
  CHECK(Layouts(a) == std::vector<std::string>{"A300M F100M", "A150M"});
  CHECK(a.Malloc(400 * M) == 0);
  CHECK(a.num_ooms() == 1);
  CHECK(a.capacity() - a.allocated() == 450 * M);  // more than the request
  CHECK(a.LargestObtainable() == 350 * M);         // 900 - 550 reserved; the 100 MiB block is smaller
  CHECK(a.reserved() == 550 * M);
}

TEST_CASE("allocator sim: max_split_size keeps oversize blocks whole and for large requests only", "[allocator]") {
  AllocatorConfig c = Cap(1000 * M);
  c.max_split_size = 100 * M;
  CudaAllocatorSim a(c);
  const uint64_t big = a.Malloc(200 * M);
  a.Free(big);
  const uint64_t small = a.Malloc(50 * M);  // may not use the oversize 200: its own segment
  CHECK(small != big);
  CHECK(a.reserved() == 250 * M);
  CHECK(a.Malloc(150 * M) != big);  // 200 >= 150 + 20: too much rounding
  CHECK(a.reserved() == 400 * M);
  CHECK(a.Malloc(190 * M) == big);  // 200 < 190 + 20: taken whole, not split
  CHECK(Layouts(a) == std::vector<std::string>{"A200M", "A50M", "A150M"});
  CHECK(a.allocated() == 400 * M);
}

TEST_CASE("allocator sim: release_available_cached_blocks frees oversize blocks before failing", "[allocator]") {
  AllocatorConfig c = Cap(300 * M);
  c.max_split_size = 100 * M;
  SECTION("one block covers the request") {
    CudaAllocatorSim a(c);
    const uint64_t x = a.Malloc(200 * M);
    REQUIRE(a.Malloc(50 * M) != 0);
    a.Free(x);
    CHECK(a.Malloc(120 * M) != 0);  // 200 >= 120 + 20 unusable; 250 + 120 > 300: release the 200, then 170
    CHECK(a.reserved() == 170 * M);
    CHECK(a.num_alloc_retries() == 0);  // no full release needed
  }
  SECTION("the largest blocks until their sum covers it") {
    CudaAllocatorSim a(c);
    const uint64_t x = a.Malloc(120 * M), y = a.Malloc(130 * M);
    a.Free(x);
    a.Free(y);
    CHECK(a.Malloc(160 * M) != 0);  // none holds 160; 250 + 160 > 300; release 130 then 120
    CHECK(a.reserved() == 160 * M);
    CHECK(a.num_device_free() == 2);
  }
}

TEST_CASE("allocator sim: out of memory when nothing can be released", "[allocator]") {
  CudaAllocatorSim a(Cap(100 * M));
  REQUIRE(a.Malloc(80 * M) != 0);
  CHECK(a.Malloc(30 * M) == 0);
  CHECK(a.num_ooms() == 1);
  CHECK(a.reserved() == 80 * M);
}

TEST_CASE("allocator sim: expandable segments map 20 MiB pages and unmap free ones to grow elsewhere", "[allocator]") {
  // The fragmentation case above with expandable_segments:True: the request succeeds.
  AllocatorConfig c = Cap(900 * M);
  c.expandable_segments = true;
  CudaAllocatorSim a(c);
  const uint64_t w1 = a.Malloc(400 * M);  // pages 0-19
  CHECK(a.reserved() == 400 * M);
  REQUIRE(a.Malloc(150 * M) != 0);  // at 400 MiB: pages 20-27 mapped (8 x 20 MiB), 10 MiB spare
  CHECK(a.reserved() == 560 * M);
  CHECK(Layouts(a) == std::vector<std::string>{"A400M A150M F10M"});
  a.Free(w1);
  REQUIRE(a.Malloc(300 * M) == w1);  // best fit among mapped free blocks: the 400, split (remainder >= 512 B)
  CHECK(Layouts(a) == std::vector<std::string>{"A300M F100M A150M F10M"});
  // 400 more: at 550 MiB, pages 28-47 (20 new pages = 400 MiB): 960 > 900. Unmapping the free pages 15-19 (100 MiB)
  // makes room: 460 + 400 = 860.
  REQUIRE(a.Malloc(400 * M) != 0);
  CHECK(a.reserved() == 860 * M);
  CHECK(a.allocated() == 850 * M);
  CHECK(a.num_alloc_retries() == 1);
  CHECK(Layouts(a) == std::vector<std::string>{"A300M U100M A150M A400M F10M"});
}

TEST_CASE("allocator sim: expandable best fit keeps the block that can grow for larger requests", "[allocator]") {
  AllocatorConfig c = Cap(1000 * M);
  c.expandable_segments = true;
  CudaAllocatorSim a(c);
  const uint64_t x = a.Malloc(100 * M);  // pages 0-4
  REQUIRE(a.Malloc(50 * M) != 0);        // pages 5-7: 10 MiB spare at the end
  REQUIRE(a.Malloc(200 * M) != 0);       // at 150 MiB: pages 8-17, 10 MiB spare again
  a.Free(x);
  CHECK(Layouts(a) == std::vector<std::string>{"F100M A50M A200M F10M"});
  // 5 MiB: the 10 MiB block at the end is the smallest that fits, but it can grow without limit; the 100 MiB one
  // cannot grow (an allocation follows it), so it is taken.
  CHECK(a.Malloc(5 * M) == x);
  CHECK(Layouts(a) == std::vector<std::string>{"A5M F95M A50M A200M F10M"});
}

TEST_CASE("allocator sim: expandable small pool uses 2 MiB pages", "[allocator]") {
  AllocatorConfig c = Cap(100 * M);
  c.expandable_segments = true;
  CudaAllocatorSim a(c);
  const uint64_t x = a.Malloc(M);  // one 2 MiB page
  CHECK(a.reserved() == 2 * M);
  const uint64_t y = a.Malloc(M + 512);  // large pool: one 20 MiB page
  CHECK(a.reserved() == 22 * M);
  a.Free(x);
  a.Free(y);
  a.EmptyCache();
  CHECK(a.reserved() == 0);
  CHECK(a.allocated() == 0);
}

TEST_CASE("allocator sim: random days keep the block map consistent and give everything back", "[allocator]") {
  for (bool expandable : {false, true}) {
    for (uint64_t max_split : {kNoMaxSplit, 64 * M}) {
      AllocatorConfig c = Cap(2048 * M);
      c.expandable_segments = expandable;
      c.max_split_size = max_split;
      CudaAllocatorSim a(c);
      std::mt19937_64 rng(45);                          // the engine's output is fixed by the standard
      std::vector<std::pair<uint64_t, uint64_t>> live;  // handle, rounded size
      for (int step = 0; step < 4000; ++step) {
        const uint64_t r = rng() % 100;
        if (r < 55 || live.empty()) {
          // Sizes from 1 B to 300 MiB, most of them small.
          const uint64_t bytes = 1 + rng() % (r < 20 ? 4096 : r < 40 ? 12 * M : 300 * M);
          const uint64_t h = a.Malloc(bytes);
          if (h != 0) live.push_back({h, CudaAllocatorSim::RoundSize(bytes)});
        } else if (r < 98) {
          const size_t k = rng() % live.size();
          a.Free(live[k].first);
          live.erase(live.begin() + static_cast<long>(k));
        } else {
          a.EmptyCache();
        }
        if (step % 97 != 0) continue;
        uint64_t allocated = 0, mapped_or_reserved = 0;
        for (const auto& s : a.Segments()) {
          uint64_t at = s.addr;
          for (const auto& b : s.blocks) {
            REQUIRE(b.addr == at);  // blocks tile their segment: no gap, no overlap
            at += b.size;
            if (b.allocated) allocated += b.size;
            if (!s.expandable) mapped_or_reserved += b.size;
          }
          REQUIRE(at == s.addr + s.size);
        }
        REQUIRE(allocated == a.allocated());
        uint64_t want = 0;
        for (const auto& [h, sz] : live) want += sz;
        REQUIRE(a.allocated() >= want);  // unsplit tails count as allocated
        REQUIRE(a.reserved() <= c.capacity);
        if (!expandable) REQUIRE(mapped_or_reserved == a.reserved());
      }
      for (const auto& [h, sz] : live) a.Free(h);
      a.EmptyCache();
      CHECK(a.allocated() == 0);
      CHECK(a.reserved() == 0);
    }
  }
}
