// Packing of model footprints: first-fit decreasing by hand, the exact search where FFD falls short, determinism.
#include "lmkit/accounting/plan_packing.h"

#include <catch2/catch.hpp>

using namespace lmkit::accounting;

TEST_CASE("plan packing: first-fit decreasing, hand-checked", "[accounting][plan]") {
  // Capacity 10, sizes 6 2 5 4 (plan order). FFD order 6, 5, 4, 2: 6 -> bin 0; 5 -> bin 1; 4 -> bin 0 (10);
  // 2 -> bin 1 (7).
  Packing p = PackFirstFitDecreasing({6, 2, 5, 4}, 10, 2);
  CHECK(p.bin_of == std::vector<int>{0, 1, 1, 0});
  CHECK(p.used == std::vector<uint64_t>{10, 7});
  CHECK(p.method == "first-fit decreasing");
  // Equal sizes keep plan order: the first 3 goes first.
  Packing q = PackFirstFitDecreasing({3, 3, 3}, 5, 3);
  CHECK(q.bin_of == std::vector<int>{0, 1, 2});
  // An item larger than a bin is never placed, and the rest still are.
  Packing r = PackFirstFitDecreasing({11, 4}, 10, 1);
  CHECK(r.bin_of == std::vector<int>{-1, 0});
}

TEST_CASE("plan packing: exact search places what FFD leaves out", "[accounting][plan]") {
  // Capacity 10, 2 bins, sizes 5 4 3 3 3 2 (sum 20 = both bins full). FFD: 5,4 -> bin 0 (9); 3,3,3 -> bin 1 (9);
  // 2 fits nowhere. A full packing exists: {5, 3, 2} and {4, 3, 3}.
  std::vector<uint64_t> sizes = {5, 4, 3, 3, 3, 2};
  Packing ffd = PackFirstFitDecreasing(sizes, 10, 2);
  CHECK(ffd.bin_of[5] == -1);
  Packing p = PackItems(sizes, 10, 2);
  CHECK(p.exact_search);
  CHECK(p.exact_found);
  CHECK(p.method == "first-fit decreasing left 1 unplaced; an exact search placed every model");
  CHECK(p.used == std::vector<uint64_t>{10, 10});
  for (int b : p.bin_of) CHECK(b >= 0);
  uint64_t in0 = 0;
  for (size_t i = 0; i < sizes.size(); ++i) in0 += p.bin_of[i] == 0 ? sizes[i] : 0;
  CHECK(in0 == 10);
  // Same input, same bytes: the result is deterministic.
  CHECK(PackItems(sizes, 10, 2).bin_of == p.bin_of);
}

TEST_CASE("plan packing: exact search proves when nothing better exists", "[accounting][plan]") {
  // Sizes 6 6 6 on two bins of 10: any packing leaves one out (two 6s never share a bin).
  Packing p = PackItems({6, 6, 6}, 10, 2);
  CHECK(p.exact_search);
  CHECK_FALSE(p.exact_found);
  CHECK(p.method == "first-fit decreasing left 1 unplaced; an exact search proved no placement of every model exists");
  CHECK(p.bin_of == std::vector<int>{0, 1, -1});  // FFD's placement is kept
  // When FFD places everything the search does not run.
  Packing q = PackItems({1, 2, 3}, 10, 1);
  CHECK_FALSE(q.exact_search);
  CHECK(q.used == std::vector<uint64_t>{6});
}
