#include "lmkit/accounting/plan_packing.h"

#include <algorithm>
#include <numeric>

namespace lmkit::accounting {
namespace {

uint64_t Bytes(const PackItem& it) { return it.size * static_cast<uint64_t>(std::max(it.pieces, 1)); }

// Items by bytes, largest first; equal bytes keep input order so the result does not depend on the sort.
std::vector<size_t> DecreasingOrder(const std::vector<PackItem>& items) {
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return Bytes(items[a]) > Bytes(items[b]); });
  return order;
}

// Depth-first branch and bound over "place item i on these bins, or leave it out", items in decreasing order. A
// branch is cut when even placing every remaining item could not beat the best placement found (more items, or as
// many with more bytes). Bins with the same free space are interchangeable: a choice among them takes the lowest
// indices only.
class Search {
 public:
  Search(const std::vector<PackItem>& items, const std::vector<size_t>& order, uint64_t capacity, int bins)
      : items_(items),
        order_(order),
        capacity_(capacity),
        used_(static_cast<size_t>(bins), 0),
        bins_of_(items.size()),
        suffix_bytes_(order.size() + 1, 0) {
    for (size_t i = order.size(); i-- > 0;) suffix_bytes_[i] = suffix_bytes_[i + 1] + Bytes(items[order[i]]);
  }

  void Seed(const Packing& p) {
    best_placed_ = p.placed;
    best_bytes_ = 0;
    for (uint64_t u : p.used) best_bytes_ += u;
    best_ = p.bins_of;
    best_used_ = p.used;
  }
  void Run() { Visit(0, 0, 0); }

  bool stopped() const { return stopped_; }
  uint64_t nodes() const { return nodes_; }
  Packing Best() const {
    Packing p;
    p.bins_of = best_;
    p.used = best_used_;
    p.placed = best_placed_;
    return p;
  }

 private:
  void Visit(size_t i, int placed, uint64_t bytes) {
    if (stopped_) return;
    if (++nodes_ > kExactNodes) {
      stopped_ = true;
      return;
    }
    if (placed > best_placed_ || (placed == best_placed_ && bytes > best_bytes_)) {
      best_placed_ = placed;
      best_bytes_ = bytes;
      best_ = bins_of_;
      best_used_ = used_;
    }
    if (i == order_.size()) return;
    const int left = static_cast<int>(order_.size() - i);
    if (placed + left < best_placed_ || (placed + left == best_placed_ && bytes + suffix_bytes_[i] <= best_bytes_))
      return;
    const size_t item = order_[i];
    const PackItem& it = items_[item];
    std::vector<int> chosen;
    Choose(i, item, it, 0, chosen, placed, bytes);
    if (stopped_) return;
    Visit(i + 1, placed, bytes);  // leave it out
  }

  // Picks it.pieces distinct bins with room, in increasing index, then recurses; a bin is skipped when a lower bin
  // with the same free space was not chosen (the same placement up to relabelling bins).
  void Choose(size_t i, size_t item, const PackItem& it, size_t from, std::vector<int>& chosen, int placed,
              uint64_t bytes) {
    if (static_cast<int>(chosen.size()) == it.pieces) {
      for (int b : chosen) used_[static_cast<size_t>(b)] += it.size;
      bins_of_[item] = chosen;
      Visit(i + 1, placed + 1, bytes + Bytes(it));
      bins_of_[item].clear();
      for (int b : chosen) used_[static_cast<size_t>(b)] -= it.size;
      return;
    }
    for (size_t b = from; b < used_.size() && !stopped_; ++b) {
      if (used_[b] + it.size > capacity_) continue;
      bool twin = false;
      for (size_t c = from; c < b && !twin; ++c) twin = used_[c] == used_[b];
      if (twin) continue;
      chosen.push_back(static_cast<int>(b));
      Choose(i, item, it, b + 1, chosen, placed, bytes);
      chosen.pop_back();
    }
  }

  const std::vector<PackItem>& items_;
  const std::vector<size_t>& order_;
  uint64_t capacity_;
  std::vector<uint64_t> used_;
  std::vector<std::vector<int>> bins_of_;
  std::vector<uint64_t> suffix_bytes_;
  int best_placed_ = -1;
  uint64_t best_bytes_ = 0;
  std::vector<std::vector<int>> best_;
  std::vector<uint64_t> best_used_;
  uint64_t nodes_ = 0;
  bool stopped_ = false;
};

}  // namespace

Packing PackFirstFitDecreasing(const std::vector<PackItem>& items, uint64_t capacity, int bins) {
  Packing p;
  p.bins_of.assign(items.size(), {});
  p.used.assign(static_cast<size_t>(std::max(bins, 0)), 0);
  for (size_t i : DecreasingOrder(items)) {
    const PackItem& it = items[i];
    std::vector<int> chosen;
    for (size_t b = 0; b < p.used.size() && static_cast<int>(chosen.size()) < it.pieces; ++b)
      if (it.size <= capacity && p.used[b] + it.size <= capacity) chosen.push_back(static_cast<int>(b));
    if (static_cast<int>(chosen.size()) < it.pieces) continue;
    for (int b : chosen) p.used[static_cast<size_t>(b)] += it.size;
    p.bins_of[i] = chosen;
    ++p.placed;
  }
  p.method = "first-fit decreasing";
  return p;
}

Packing PackItems(const std::vector<PackItem>& items, uint64_t capacity, int bins) {
  Packing ffd = PackFirstFitDecreasing(items, capacity, bins);
  const size_t n = items.size();
  if (static_cast<size_t>(ffd.placed) == n) {
    ffd.optimal = true;
    return ffd;
  }
  if (n > kExactItems || static_cast<size_t>(bins) > kExactBins) {
    ffd.method = "first-fit decreasing (a heuristic: branch and bound runs up to " + std::to_string(kExactItems) +
                 " models and " + std::to_string(kExactBins) + " GPUs)";
    return ffd;
  }
  const std::vector<size_t> order = DecreasingOrder(items);
  Search s(items, order, capacity, bins);
  s.Seed(ffd);
  s.Run();
  Packing p = s.Best();
  const std::string ffd_said = "first-fit decreasing placed " + std::to_string(ffd.placed) + " of " + std::to_string(n);
  if (s.stopped()) {
    p.method = ffd_said + "; branch and bound stopped at " + std::to_string(kExactNodes) + " nodes with " +
               std::to_string(p.placed) + " placed (best found, not proven optimal)";
    return p;
  }
  p.optimal = true;
  p.method = p.placed > ffd.placed ? ffd_said + "; branch and bound placed " + std::to_string(p.placed) + " (optimal)"
                                   : ffd_said + "; branch and bound proved that no placement holds more (optimal)";
  return p;
}

}  // namespace lmkit::accounting
