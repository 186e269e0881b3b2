#include "lmkit/accounting/plan_packing.h"

#include <algorithm>
#include <numeric>

namespace lmkit::accounting {
namespace {

// Items by size, largest first; equal sizes keep input order so the result does not depend on the sort.
std::vector<size_t> DecreasingOrder(const std::vector<uint64_t>& sizes) {
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  return order;
}

struct Search {
  const std::vector<uint64_t>& sizes;
  const std::vector<size_t>& order;
  uint64_t capacity;
  std::vector<uint64_t> used;
  std::vector<int> bin_of;
  std::vector<uint64_t> suffix;  // bytes of order[i..]
  uint64_t nodes = 0;
  bool limit_hit = false;

  bool Place(size_t i) {
    if (i == order.size()) return true;
    if (++nodes > kExactSearchNodes) {
      limit_hit = true;
      return false;
    }
    uint64_t free_total = 0;
    for (uint64_t u : used) free_total += capacity - u;
    if (suffix[i] > free_total) return false;  // what is left cannot fit in all the room there is
    const uint64_t s = sizes[order[i]];
    for (size_t b = 0; b < used.size(); ++b) {
      if (used[b] + s > capacity) continue;
      // Bins with the same free space are interchangeable: trying the first of them is enough.
      bool seen = false;
      for (size_t c = 0; c < b && !seen; ++c) seen = used[c] == used[b];
      if (seen) continue;
      used[b] += s;
      bin_of[order[i]] = static_cast<int>(b);
      if (Place(i + 1)) return true;
      used[b] -= s;
      bin_of[order[i]] = -1;
      if (limit_hit) return false;
    }
    return false;
  }
};

}  // namespace

Packing PackFirstFitDecreasing(const std::vector<uint64_t>& sizes, uint64_t capacity, int bins) {
  Packing p;
  p.bin_of.assign(sizes.size(), -1);
  p.used.assign(static_cast<size_t>(std::max(bins, 0)), 0);
  for (size_t i : DecreasingOrder(sizes)) {
    for (size_t b = 0; b < p.used.size(); ++b) {
      if (sizes[i] <= capacity && p.used[b] + sizes[i] <= capacity) {
        p.used[b] += sizes[i];
        p.bin_of[i] = static_cast<int>(b);
        break;
      }
    }
  }
  p.method = "first-fit decreasing";
  return p;
}

Packing PackItems(const std::vector<uint64_t>& sizes, uint64_t capacity, int bins) {
  Packing p = PackFirstFitDecreasing(sizes, capacity, bins);
  size_t left = static_cast<size_t>(std::count(p.bin_of.begin(), p.bin_of.end(), -1));
  if (left == 0) return p;
  std::string ffd = "first-fit decreasing left " + std::to_string(left) + " unplaced; ";
  if (sizes.size() > kExactSearchItems || p.used.size() > kExactSearchBins) {
    p.method = ffd + "no exact search (more than " + std::to_string(kExactSearchItems) + " models or " +
               std::to_string(kExactSearchBins) + " GPUs)";
    return p;
  }
  bool any_too_big = false;
  for (uint64_t s : sizes) any_too_big = any_too_big || s > capacity;
  p.exact_search = true;
  if (any_too_big) {
    p.method = ffd + "a model larger than a GPU rules out placing all";
    return p;
  }
  std::vector<size_t> order = DecreasingOrder(sizes);
  Search s{sizes, order, capacity, std::vector<uint64_t>(p.used.size(), 0), std::vector<int>(sizes.size(), -1), {}};
  s.suffix.assign(order.size() + 1, 0);
  for (size_t i = order.size(); i-- > 0;) s.suffix[i] = s.suffix[i + 1] + sizes[order[i]];
  if (s.Place(0)) {
    p.bin_of = s.bin_of;
    p.used = s.used;
    p.exact_found = true;
    p.method = ffd + "an exact search placed every model";
  } else if (s.limit_hit) {
    p.method =
        ffd + "the exact search stopped at " + std::to_string(kExactSearchNodes) + " nodes without a full placement";
  } else {
    p.method = ffd + "an exact search proved no placement of every model exists";
  }
  return p;
}

}  // namespace lmkit::accounting
