// The merger's pair word lists: AddOnce drops only an immediate repeat, entries come out in insertion order across
// the growth from two inline ids to the heap, moves leave the source empty, and TakeInto resets the list.
#include "lmkit/bpe/train/word_list.h"

#include <catch2/catch.hpp>
#include <utility>
#include <vector>

using lmkit::bpe::train::WordList;

namespace {

std::vector<uint32_t> Take(WordList& l) {
  std::vector<uint32_t> v;
  l.TakeInto(&v);
  return v;
}

}  // namespace

TEST_CASE("word list: AddOnce skips a repeat of the last entry only", "[bpe][train]") {
  WordList l;
  CHECK(Take(l).empty());
  for (uint32_t w : {5u, 5u, 7u, 5u, 5u, 9u}) l.AddOnce(w);
  CHECK(Take(l) == std::vector<uint32_t>{5, 7, 5, 9});
  CHECK(Take(l).empty());  // TakeInto emptied it
}

TEST_CASE("word list: order survives growth from inline to heap storage, and moves", "[bpe][train]") {
  for (uint32_t n : {1u, 2u, 3u, 4u, 5u, 17u, 1000u}) {
    INFO("n = " << n);
    WordList l;
    std::vector<uint32_t> want;
    for (uint32_t i = 0; i < n; ++i) {
      l.AddOnce(3 * i + 1);
      want.push_back(3 * i + 1);
    }
    WordList moved(std::move(l));
    CHECK(Take(l).empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty by contract
    WordList assigned;
    assigned.AddOnce(99);
    assigned = std::move(moved);
    CHECK(Take(moved).empty());  // NOLINT(bugprone-use-after-move)
    CHECK(Take(assigned) == want);
    assigned.AddOnce(4);  // usable again after TakeInto
    CHECK(Take(assigned) == std::vector<uint32_t>{4});
  }
}

TEST_CASE("word list: many lists in a vector keep their entries through reallocation", "[bpe][train]") {
  std::vector<WordList> lists;
  for (uint32_t i = 0; i < 300; ++i) {
    lists.emplace_back();
    for (uint32_t k = 0; k <= i % 6; ++k) lists.back().AddOnce(i * 10 + k);
  }
  for (uint32_t i = 0; i < 300; ++i) {
    std::vector<uint32_t> want;
    for (uint32_t k = 0; k <= i % 6; ++k) want.push_back(i * 10 + k);
    CHECK(Take(lists[i]) == want);
  }
}
