// Performance notes (shared 2-core machine, debmix.txt 130 MB, vocab 30,000; docs/benchmarks/bpe.md; counting's are
// in counter.cpp):
//  - the merge loop was bound by cache misses on four parallel per-word arrays (44% of its samples on one load);
//    packing [len, stamp, count, symbols] into one record took the merger from 28% to 21% of the run's samples.
//  - merge step (perf, debmix vocab 30,000, 1 thread): 30% of the loop's samples were the first touch of each word
//    record and 17% one compare of std::pop_heap's binary heap, both cache misses. Prefetching words 8 ahead in the
//    pair's word list, a 4-ary heap, and summing a step's count changes per neighbour token before touching the pair
//    map (once per distinct neighbour instead of four look-ups per occurrence): merge 0.63 s -> 0.42-0.47 s.
//  - pair word lists with two words inline (WordList): 1.5 M vectors cost a malloc each and 30 ms of free() at the
//    end; the 2-thread run 1.19-1.23 s -> 1.10-1.15 s.
//  - tried, no gain: splitting a step's word list across the pool (the visits are latency-bound; an atomic claim per
//    word serialised them, and a split by memory region did no better); prefetching 16 or 32 words ahead.
#include "lmkit/bpe/train/merger.h"

namespace lmkit::bpe::train {

Merger::Merger(const CountsView& counts) {
  tokens_.reserve(1024);
  for (int b = 0; b < 256; ++b) tokens_.emplace_back(1, static_cast<char>(b));
  syms_.reserve(counts.key_bytes() + kHeader * counts.size());
  counts.ForEach([&](std::string_view key, uint64_t count) {
    if (key.size() < 2) return;  // a single byte has no pair and never changes
    words_.push_back(static_cast<uint32_t>(syms_.size()));
    syms_.push_back(static_cast<uint32_t>(key.size()));
    syms_.push_back(0);
    syms_.push_back(static_cast<uint32_t>(count));
    syms_.push_back(static_cast<uint32_t>(count >> 32));
    for (unsigned char c : key) syms_.push_back(c);
  });
}

void Merger::Run(size_t max_merges, ProgressSink* progress) {
  if (max_merges == 0) return;
  for (uint32_t w : words_) {
    const uint32_t* s = &syms_[w + kHeader];
    const uint32_t len = syms_[w];
    const int64_t c = CountOfWord(w);
    for (uint32_t i = 0; i + 1 < len; ++i) AddPair(s[i], s[i + 1], c, w);
  }
  std::vector<uint32_t>().swap(words_);
  heap_.Reserve(pairs_.count_.size() + 1024);
  for (size_t i = 0; i < pairs_.count_.size(); ++i)
    if (pairs_.count_[i] > 0) heap_.Append({pairs_.count_[i], Hi(pairs_.key_of_[i]), Lo(pairs_.key_of_[i])});
  heap_.Heapify();
  new_pairs_.clear();
  if (progress) progress->Begin("merging", max_merges, "merges");
  while (merges_.size() < max_merges && !heap_.empty()) {
    const HeapEntry e = heap_.Pop();
    const uint64_t key = Key(e.a, e.b);
    const int64_t cur = pairs_.CountOf(key);
    if (cur != e.count) {
      if (cur > 0) Push({cur, e.a, e.b});
      continue;
    }
    if (cur <= 0) continue;
    MergeStep(e.a, e.b);
    if (progress && (merges_.size() & 255) == 0) progress->Update(merges_.size());
  }
  if (progress) progress->Finish();
}

void Merger::AddPair(uint32_t a, uint32_t b, int64_t c, uint32_t w) {
  bool inserted;
  const uint32_t idx = pairs_.FindOrInsert(Key(a, b), &inserted);
  pairs_.count_[idx] += c;
  pairs_.where_[idx].AddOnce(w);
}

template <typename KeyOf>
void Merger::Gain(const Side& side, KeyOf key_of) {
  for (uint32_t t : side.touched) {
    bool inserted;
    const uint32_t idx = pairs_.FindOrInsert(key_of(t), &inserted);
    pairs_.count_[idx] += side.sum[t];
    if (inserted) new_pairs_.push_back(idx);
    pair_of_[t] = idx;
  }
  for (const auto& [t, w] : side.words) pairs_.where_[pair_of_[t]].AddOnce(w);
}

template <typename KeyOf>
void Merger::Lose(Side* side, uint64_t merging, KeyOf key_of) {
  for (uint32_t t : side->touched) {
    const uint64_t k = key_of(t);
    if (k == merging) continue;
    bool inserted;
    const uint32_t idx = pairs_.FindOrInsert(k, &inserted);
    pairs_.count_[idx] -= side->sum[t];
    if (inserted) new_pairs_.push_back(idx);
  }
  side->Clear();
}

void Merger::MergeStep(uint32_t a, uint32_t b) {
  const uint32_t z = static_cast<uint32_t>(tokens_.size());
  tokens_.push_back(tokens_[a] + tokens_[b]);
  merges_.emplace_back(a, b);
  const uint64_t key = Key(a, b);
  bool inserted;
  const uint32_t idx = pairs_.FindOrInsert(key, &inserted);
  std::vector<uint32_t>& where = where_scratch_;
  pairs_.where_[idx].TakeInto(&where);
  pairs_.count_[idx] = 0;
  const uint32_t step = static_cast<uint32_t>(merges_.size());
  if (pair_of_.size() < tokens_.size()) {
    pair_of_.resize(tokens_.size() * 2, 0);
    left_.Resize(pair_of_.size());
    right_.Resize(pair_of_.size());
  }
  new_pairs_.clear();
  // Visiting a word is a cache miss on its record (30% of the merge loop's samples): fetch a few words ahead.
  constexpr size_t kAhead = 8;
  for (size_t k = 0; k < where.size(); ++k) {
    if (k + kAhead < where.size()) __builtin_prefetch(&syms_[where[k + kAhead]]);
    const uint32_t w = where[k];
    if (syms_[w + 1] == step) continue;
    syms_[w + 1] = step;
    uint32_t* s = &syms_[w + kHeader];
    const uint32_t len = syms_[w];
    const int64_t c = CountOfWord(w);
    uint32_t out = 0;
    uint32_t i = 0;
    while (i < len) {
      if (i + 1 < len && s[i] == a && s[i + 1] == b) {
        if (out > 0) left_.Note(s[out - 1], c, w);
        if (i + 2 < len) right_.Note(s[i + 2], c, w);
        s[out++] = z;
        i += 2;
      } else {
        s[out++] = s[i++];
      }
    }
    syms_[w] = out;
  }
  // Gains first: they insert the pairs with z, so a loss on (z, a) (a run "a b a b") finds its pair.
  Gain(left_, [z](uint32_t x) { return Key(x, z); });
  Gain(right_, [z](uint32_t y) { return Key(z, y); });
  Lose(&left_, key, [a](uint32_t x) { return Key(x, a); });
  Lose(&right_, key, [b](uint32_t y) { return Key(b, y); });
  for (uint32_t p : new_pairs_)
    if (pairs_.count_[p] > 0) Push({pairs_.count_[p], Hi(pairs_.key_of_[p]), Lo(pairs_.key_of_[p])});
}

}  // namespace lmkit::bpe::train
