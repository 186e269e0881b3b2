// BPE training, phase 2: merging (STYLE.md item 10). Words are flat arrays of ids; pair counts are exact int64 in a
// flat hash map (pair_counts.h, key = a<<32|b); each pair keeps the list of words it was ever counted in (word_list.h,
// appended on increments, so it may hold stale or repeated entries, filtered per step with a stamp); a 4-ary max-heap
// (quad_heap.h) ordered by (count, bytes(a), bytes(b)) is validated lazily: a popped entry whose count is stale is
// re-pushed with its current count. Every pair whose count can rise in a step contains the new token, so pushing the
// new pairs after each step keeps the invariant "each live pair has a heap entry with count >= its current count",
// which makes the first valid pop the true maximum.
//
// Contract: Merger copies the counted pre-tokens (the view may be released once it is built); Run merges the most
// frequent pair (ties to the lexicographically greater (bytes(a), bytes(b))) up to max_merges times or until no pair
// occurs; the result is tokens_ (256 bytes, then one per merge) and merges_ (ids into tokens_). Deterministic; not
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lmkit/bpe/train/counts_view.h"
#include "lmkit/bpe/train/pair_counts.h"
#include "lmkit/bpe/train/quad_heap.h"
#include "lmkit/common/huge_pages.h"
#include "lmkit/common/progress.h"

namespace lmkit::bpe::train {

// One merge step's count changes on one side of the merged pair, per neighbour token: the summed counts, the tokens
// touched, the last word noted per token, and (token, word) in scan order, once per word.
struct Side {
  static constexpr uint32_t kNoWord = ~uint32_t{0};
  std::vector<int64_t> sum;
  std::vector<uint32_t> noted;
  std::vector<uint32_t> touched;
  std::vector<std::pair<uint32_t, uint32_t>> words;

  void Resize(size_t tokens) {
    sum.resize(tokens, 0);
    noted.resize(tokens, kNoWord);
  }
  // Word w (of count c) has neighbour t at one more occurrence. (t, w) is noted once per word: one long word would
  // otherwise note every occurrence (2 M entries for the first merge of a 4 MB word of one letter).
  void Note(uint32_t t, int64_t c, uint32_t w) {
    if (sum[t] == 0) touched.push_back(t);
    sum[t] += c;
    if (noted[t] != w) {
      noted[t] = w;
      words.emplace_back(t, w);
    }
  }
  // Forgets the step: sums and notes of the touched tokens back to empty.
  void Clear() {
    for (uint32_t t : touched) {
      sum[t] = 0;
      noted[t] = kNoWord;
    }
    touched.clear();
    words.clear();
  }
};

class Merger {
 public:
  // Words live in one flat array, each as a record [len, stamp, count low, count high, symbols...] so that visiting a
  // word touches one place in memory (the merge loop is bound by these cache misses, measured: 4 parallel arrays
  // cost ~2x more). Word ids are record offsets.
  static constexpr uint32_t kHeader = 4;

  explicit Merger(const CountsView& counts);

  // False when the words do not fit 32-bit offsets (more than 4 G symbols of unique pre-tokens).
  bool ok() const { return syms_.size() < (uint64_t{1} << 32); }

  // Runs up to `max_merges` merges.
  void Run(size_t max_merges, ProgressSink* progress);

  std::vector<std::string> tokens_;  // id -> bytes; ids 0..255 are the bytes
  std::vector<std::pair<uint32_t, uint32_t>> merges_;

 private:
  static uint64_t Key(uint32_t a, uint32_t b) { return (uint64_t{a} << 32) | b; }
  static uint32_t Hi(uint64_t k) { return static_cast<uint32_t>(k >> 32); }
  static uint32_t Lo(uint64_t k) { return static_cast<uint32_t>(k); }

  struct LessT {
    const std::vector<std::string>* t;
    bool operator()(const HeapEntry& x, const HeapEntry& y) const {
      if (x.count != y.count) return x.count < y.count;
      const std::string& xa = (*t)[x.a];
      const std::string& ya = (*t)[y.a];
      if (x.a != y.a) {
        const int c = xa.compare(ya);
        if (c != 0) return c < 0;
      }
      return (*t)[x.b].compare((*t)[y.b]) < 0;
    }
  };
  LessT Less() const { return LessT{&tokens_}; }
  void Push(const HeapEntry& e) { heap_.Push(e); }

  // The initial count: word w (of count c) holds pair (a, b) once more.
  void AddPair(uint32_t a, uint32_t b, int64_t c, uint32_t w);
  // Every occurrence of (a, b) becomes z; with x before it and y after, (x, a) and (b, y) lose the word's count and
  // (x, z) and (z, y) gain it. The changes are summed per neighbour in dense arrays during the scan and applied to
  // the pair map once per distinct neighbour: per occurrence that was four hash look-ups, each a likely cache miss.
  void MergeStep(uint32_t a, uint32_t b);
  // Adds each touched neighbour's sum to its new pair and records the words the pair is in (in scan order).
  template <typename KeyOf>
  void Gain(const Side& side, KeyOf key_of);
  // Subtracts each touched neighbour's sum from its old pair (never the pair being merged) and clears the side.
  template <typename KeyOf>
  void Lose(Side* side, uint64_t merging, KeyOf key_of);

  int64_t CountOfWord(uint32_t w) const { return static_cast<int64_t>(syms_[w + 2] | (uint64_t{syms_[w + 3]} << 32)); }

  HugeVector<uint32_t> syms_;    // word records (see kHeader)
  std::vector<uint32_t> words_;  // record offsets, only until the initial pair count
  PairCounts pairs_;
  QuadHeap<LessT> heap_{Less()};
  std::vector<uint32_t> new_pairs_;
  std::vector<uint32_t> where_scratch_;  // the merged pair's word list during MergeStep
  Side left_, right_;                    // (x, a) -> (x, z) by x, and (b, y) -> (z, y) by y
  // Per touched neighbour token: the index of its new pair (Gain).
  std::vector<uint32_t> pair_of_;
};

}  // namespace lmkit::bpe::train
