// The BPE merger's max-heap of pairs (merger.h), four children per node.
//
// Contract: Pop returns an entry e with no other entry f such that less(e, f); the heap must not be empty. Append adds
// without ordering and needs Heapify before the next Pop; Push keeps the order. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "lmkit/common/huge_pages.h"

namespace lmkit::bpe::train {

// A pair (a, b) and the count it had when pushed.
struct HeapEntry {
  int64_t count;
  uint32_t a, b;
};

// A max-heap with four children per node: half the levels of a binary heap, and a node's children share one or two
// cache lines (a pop of std::pop_heap's binary heap missed the cache on nearly every level: 17% of the merge loop's
// samples on one compare). `Less` is a strict weak order; which of two equal entries pops first is unspecified.
template <typename Less>
class QuadHeap {
 public:
  explicit QuadHeap(Less less) : less_(less) {}
  bool empty() const { return v_.empty(); }
  void Reserve(size_t n) { v_.reserve(n); }
  // Bulk insertion without ordering; call Heapify before the first Pop.
  void Append(const HeapEntry& e) { v_.push_back(e); }
  void Heapify() {
    if (v_.size() < 2) return;
    for (size_t i = (v_.size() - 2) / 4 + 1; i-- > 0;) SiftDown(i);
  }
  void Push(const HeapEntry& e) {
    v_.push_back(e);
    size_t i = v_.size() - 1;
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!less_(v_[parent], e)) break;
      v_[i] = v_[parent];
      i = parent;
    }
    v_[i] = e;
  }
  HeapEntry Pop() {
    const HeapEntry top = v_.front();
    v_.front() = v_.back();
    v_.pop_back();
    if (!v_.empty()) SiftDown(0);
    return top;
  }

 private:
  void SiftDown(size_t i) {
    const HeapEntry e = v_[i];
    const size_t n = v_.size();
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t last = std::min(first + 4, n);
      for (size_t c = first + 1; c < last; ++c)
        if (less_(v_[best], v_[c])) best = c;
      if (!less_(e, v_[best])) break;
      v_[i] = v_[best];
      i = best;
    }
    v_[i] = e;
  }
  Less less_;
  HugeVector<HeapEntry> v_;
};

}  // namespace lmkit::bpe::train
