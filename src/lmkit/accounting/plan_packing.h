// Placement of models on identical GPUs, by memory: as many models as possible, each model's pieces (one per
// tensor-parallel GPU) on distinct GPUs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmkit::accounting {

struct PackItem {
  uint64_t size = 0;  // bytes of one piece
  int pieces = 1;     // pieces on distinct bins (the tensor-parallel degree); a model is placed whole or not at all
};

struct Packing {
  std::vector<std::vector<int>> bins_of;  // per item: its bins (ascending), empty when not placed
  std::vector<uint64_t> used;             // per bin: bytes placed
  int placed = 0;                         // items placed
  std::string method;                     // how the placement was found, one line
  bool optimal = false;                   // no placement places more items (or as many with more bytes)
};

// The largest search the exact method takes on: items, bins, and nodes before it stops with the best found.
constexpr size_t kExactItems = 24;
constexpr size_t kExactBins = 16;
constexpr uint64_t kExactNodes = 2000000;

// First-fit decreasing: items by bytes (size x pieces), largest first, ties in input order; each piece into the
// lowest-numbered bins with room. Deterministic.
Packing PackFirstFitDecreasing(const std::vector<PackItem>& items, uint64_t capacity, int bins);
// The placement that places the most items, ties broken by the most bytes placed: branch and bound from FFD's
// placement for up to kExactItems items on up to kExactBins bins (exact unless it stops at kExactNodes nodes, which
// `method` says); beyond those sizes, FFD (a heuristic, which `method` says). Never places fewer items than FFD.
// Deterministic; pure.
Packing PackItems(const std::vector<PackItem>& items, uint64_t capacity, int bins);

}  // namespace lmkit::accounting
