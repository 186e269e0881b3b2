// The BPE merger's pair table (merger.h): pair key (a << 32 | b) -> a dense index, and per index the pair's exact
// count, its word list and its key. Open addressing with linear probing in flat arrays, kept at most half full.
//
// Contract: indexes are given in insertion order (0, 1, 2, ...) and never change; ~0 is not a valid key (no token id
// is 2^32 - 1). Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lmkit/bpe/train/word_list.h"
#include "lmkit/common/huge_pages.h"

namespace lmkit::bpe::train {

class PairCounts {
 public:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  PairCounts() {
    keys_.assign(1 << 16, kEmpty);
    vals_.resize(1 << 16);
  }
  // Returns the pair's index, creating it (with *inserted = true, count 0 and an empty word list) if absent.
  uint32_t FindOrInsert(uint64_t key, bool* inserted) {
    size_t i = Mix(key) & (keys_.size() - 1);
    for (;;) {
      if (keys_[i] == key) {
        *inserted = false;
        return vals_[i];
      }
      if (keys_[i] == kEmpty) {
        keys_[i] = key;
        vals_[i] = static_cast<uint32_t>(count_.size());
        count_.push_back(0);
        where_.emplace_back();
        key_of_.push_back(key);
        *inserted = true;
        const uint32_t v = vals_[i];
        if (++used_ * 2 > keys_.size()) Grow();
        return v;
      }
      i = (i + 1) & (keys_.size() - 1);
    }
  }
  // The pair's count, 0 when absent.
  int64_t CountOf(uint64_t key) const {
    size_t i = Mix(key) & (keys_.size() - 1);
    for (;;) {
      if (keys_[i] == key) return count_[vals_[i]];
      if (keys_[i] == kEmpty) return 0;
      i = (i + 1) & (keys_.size() - 1);
    }
  }
  // By pair index: the count, the words the pair was counted in, the key.
  HugeVector<int64_t> count_;
  HugeVector<WordList> where_;
  HugeVector<uint64_t> key_of_;

 private:
  static uint64_t Mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xFF51AFD7ED558CCDull;
    k ^= k >> 33;
    return k;
  }
  void Grow() {
    HugeVector<uint64_t> ok(keys_.size() * 2, kEmpty);
    HugeVector<uint32_t> ov(keys_.size() * 2);
    ok.swap(keys_);
    ov.swap(vals_);
    const size_t mask = keys_.size() - 1;
    for (size_t j = 0; j < ok.size(); ++j) {
      if (ok[j] == kEmpty) continue;
      size_t i = Mix(ok[j]) & mask;
      while (keys_[i] != kEmpty) i = (i + 1) & mask;
      keys_[i] = ok[j];
      vals_[i] = ov[j];
    }
  }
  HugeVector<uint64_t> keys_;
  HugeVector<uint32_t> vals_;
  size_t used_ = 0;
};

}  // namespace lmkit::bpe::train
