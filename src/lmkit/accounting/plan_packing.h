// Bin packing of model footprints onto identical GPUs: first-fit decreasing, then an exact search when FFD leaves
// something out.
//
// Contract: PackItems places items (sizes in bytes) into `bins` bins of `capacity` bytes each. It runs first-fit
// decreasing (items by size, largest first, ties in input order; each into the lowest-numbered bin with room). FFD
// uses at most 11/9·OPT + 6/9 bins (Dósa 2007), so on a fixed number of GPUs it can leave items out that a better
// packing would place; when it does and there are at most kExactSearchItems items and kExactSearchBins bins, a
// depth-first search over assignments (largest item first, bins with equal free space tried once) looks for a placement
// of every item, within kExactSearchNodes nodes. The result is deterministic. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmkit::accounting {

constexpr size_t kExactSearchItems = 20;
constexpr size_t kExactSearchBins = 64;
constexpr uint64_t kExactSearchNodes = 2000000;

struct Packing {
  std::vector<int> bin_of;     // per item: its bin, or -1 when not placed
  std::vector<uint64_t> used;  // per bin: bytes placed
  std::string method;          // how the placement was found, one line
  bool exact_search = false;   // the exact search ran
  bool exact_found = false;    // ...and placed every item FFD could not
};

Packing PackFirstFitDecreasing(const std::vector<uint64_t>& sizes, uint64_t capacity, int bins);
Packing PackItems(const std::vector<uint64_t>& sizes, uint64_t capacity, int bins);

}  // namespace lmkit::accounting
