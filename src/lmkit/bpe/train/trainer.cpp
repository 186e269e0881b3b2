// BPE training (see trainer.h for the contract and docs/bpe.md for the algorithm).
//
// Phase 1, counting. Input is read in blocks of options.block_bytes. A block is cut at a point that is a boundary for
// both the special-token split and the GPT-2 pre-tokenizer, and the tail after it is carried into the next block:
//   - the end of a special-token match whose start is at least max_special_len before the block end (so the
//     longest-match decision there cannot depend on bytes not read yet), or
//   - a "safe" pre-token boundary x after that: text[x-1] is an ASCII letter and text[x] is ' ' or '\n'. Every GPT-2
//     pre-token containing text[x-1] ends at x (letter runs and contractions stop at a non-letter), and the scanner
//     only looks forward, so cutting there changes no pre-token.
// Ordinary spans of a block are cut again at safe boundaries into ~1 MiB work items, counted on the thread pool into
// one open-addressing table per worker (key bytes in a per-worker arena). Tables are merged at the end; counts are
// sums, so the result does not depend on which worker counted what.
// Phase 2, merging (STYLE.md item 10): words are flat arrays of ids; pair counts are exact int64 in a flat hash map
// (key = a<<32|b); each pair keeps the list of words it was ever counted in (appended on increments, so it may hold
// stale or repeated entries, filtered per step with a stamp); a 4-ary max-heap ordered by (count, bytes(a), bytes(b))
// is validated lazily: a popped entry whose count is stale is re-pushed with its current count. Every pair whose count
// can rise in a step contains the new token, so pushing the new pairs after each step keeps the invariant "each live
// pair has a heap entry with count >= its current count", which makes the first valid pop the true maximum.
//
// Performance notes (shared 2-core machine, debmix.txt 130 MB, vocab 30,000, 2 threads; docs/benchmarks/bpe.md):
//  - whole run 4.9 s CPU, 165 MB peak RSS, against HF tokenizers' 50.6 s CPU, 548 MB in the same session.
//  - the scanner pre-tokenizer instead of PCRE2-JIT (5-7x faster per byte, pretokenizer.cpp) moved counting from
//    regex-bound to hash-table-bound; perf then showed ~70% of the table's time on the first slot load (a cache miss).
//    16-byte slots with the key's first 8 bytes inline (was 32-byte slots comparing keys in an arena) and dense
//    counts removed most memcmp calls (10% -> 4% of samples).
//  - the merge loop was bound by cache misses on four parallel per-word arrays (44% of its samples on one load);
//    packing [len, stamp, count, symbols] into one record took the merger from 28% to 21% of the run's samples.
//  - look-ups run 8 pre-tokens behind the scanner with the slot prefetched (CountSpan): counting-only CPU time
//    2.19 s -> 1.62 s (debmix, 1 thread, A/B alternated twice); 16 behind measured no better.
//  - tried: a 4096-entry direct-mapped cache of short pre-tokens in front of the table; no measurable gain on this
//    (heavily loaded) machine, so it was left out.
//  - merge step (perf, debmix vocab 30,000, 1 thread): 30% of the loop's samples were the first touch of each word
//    record and 17% one compare of std::pop_heap's binary heap, both cache misses. Prefetching words 8 ahead in the
//    pair's word list, a 4-ary heap, and summing a step's count changes per neighbour token before touching the pair
//    map (once per distinct neighbour instead of four look-ups per occurrence): merge 0.63 s -> 0.42-0.47 s.
//  - pair word lists with two words inline (WordList): 1.5 M vectors cost a malloc each and 30 ms of free() at the
//    end; the 2-thread run 1.19-1.23 s -> 1.10-1.15 s.
//  - the large arrays (pre-token tables, read buffers, word records, pair map, heap) on transparent huge pages
//    (common/huge_pages.h): page faults 79 k -> 20 k, CPU 3.22 s -> 2.88 s, wall 2.41 s -> 2.13 s (perf stat -r 3,
//    2-vCPU AMD EPYC VM, where a 4 KiB fault costs microseconds).
//  - training no longer builds the union of the per-thread tables (0.16-0.27 s on one thread: a rehash, then an
//    insert per new key): the second table's keys are looked up in the first on all threads and the merger reads the
//    first table plus the second's missing keys (CountsView). 2-thread run, median of 6 alternated: 2.49 s -> 2.33 s.
//    Tried first, no gain: building the union on all threads, each filling one stretch of its slots (every thread
//    must hash every entry to find its stretch, and those reads miss the cache).
//  - tried, no gain: splitting a step's word list across the pool (the visits are latency-bound; an atomic claim per
//    word serialised them, and a split by memory region did no better); prefetching 16 or 32 words ahead.
#include "lmkit/bpe/train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "lmkit/bpe/pretokenize/ascii_runs.h"
#include "lmkit/bpe/pretokenize/pretokenizer.h"
#include "lmkit/bpe/pretokenize/special_tokens.h"
#include "lmkit/bpe/pretokenize/unicode_classes.h"
#include "lmkit/bpe/train/pretoken_table.h"
#include "lmkit/common/huge_pages.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/common/thread_start.h"

namespace lmkit::bpe {

namespace {

inline bool IsSafeCut(std::string_view t, size_t x) {
  return x > 0 && x < t.size() && ascii::IsLetter(static_cast<unsigned char>(t[x - 1])) &&
         (t[x] == ' ' || t[x] == '\n');
}

// The last safe pre-token boundary x with lo < x <= hi (and x < t.size()), or 0 when there is none.
size_t LastSafeCut(std::string_view t, size_t lo, size_t hi) {
  hi = std::min(hi, t.size() == 0 ? 0 : t.size() - 1);
  for (size_t x = hi; x > lo; --x)
    if (IsSafeCut(t, x)) return x;
  return 0;
}

// Cuts [begin, end) of `t` (an ordinary span) into pieces of about `target` bytes at safe boundaries.
void CutSpan(std::string_view t, size_t begin, size_t end, size_t target, std::vector<std::string_view>* items) {
  while (end - begin > target + target / 2) {
    size_t x = LastSafeCut(t.substr(0, end), begin + target / 2, begin + target);
    if (x == 0) {
      for (size_t y = begin + target + 1; y < end; ++y)
        if (IsSafeCut(t.substr(0, end), y)) {
          x = y;
          break;
        }
      if (x == 0) break;
    }
    items->push_back(t.substr(begin, x - begin));
    begin = x;
  }
  if (end > begin) items->push_back(t.substr(begin, end - begin));
}

// The counted pre-tokens as the merger reads them: every key of `table`, then the keys in slots `rest_slots` of `rest`
// (a second table's keys that `table` lacks; the counts of its other keys were added to `table`), so that training
// never builds the union of the per-thread tables (see the performance notes above).
struct CountsView {
  PretokenTable* table = nullptr;
  PretokenTable* rest = nullptr;
  std::vector<uint64_t> rest_slots;

  size_t size() const { return table->size() + rest_slots.size(); }
  // An upper bound of the key bytes (for reserving).
  size_t key_bytes() const { return table->key_bytes() + (rest != nullptr ? rest->key_bytes() : 0); }
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    table->ForEach(fn);
    for (uint64_t slot : rest_slots) rest->VisitSlot(slot, fn);
  }
  // Frees both tables.
  void Release() {
    *table = PretokenTable();
    if (rest != nullptr) *rest = PretokenTable();
    rest_slots = {};
  }
};

// Counting state shared by the streamed and in-memory entry points.
class Counter {
 public:
  Counter(const SpecialTokenSplitter& splitter, unsigned threads)
      : splitter_(splitter), pool_(std::max(1u, threads)), tables_(pool_.size()) {}

  // Counts text[0, cut): the caller guarantees cut is a boundary (see the file comment).
  void CountBlock(std::string_view text) {
    items_.clear();
    splitter_.Split(text, [&](const SpecialTokenSplitter::Piece& p) {
      if (p.special_index >= 0) return;
      const size_t b = static_cast<size_t>(p.text.data() - text.data());
      CutSpan(text, b, b + p.text.size(), kItemBytes, &items_);
    });
    if (pool_.size() == 1) {
      for (auto item : items_) tables_[0].CountSpan(item);
      return;
    }
    pool_.ParallelFor(items_.size(), [&](size_t i, unsigned w) { tables_[w].CountSpan(items_[i]); });
  }

  // The counts of all tables as one view (the tables stay here until view.Release()). Tables beyond the second are
  // first absorbed into the second; then the second's keys are looked up in the first on all threads.
  CountsView ReduceView() {
    CountsView view;
    view.table = &tables_[0];
    if (tables_.size() == 1) return view;
    for (size_t i = 2; i < tables_.size(); ++i) {
      tables_[1].Absorb(tables_[i]);
      tables_[i] = PretokenTable();
    }
    const PretokenTable& rest = tables_[1];
    const size_t parts = pool_.size(), n = rest.slot_count();
    std::vector<std::vector<uint64_t>> missing(parts);
    pool_.ParallelFor(
        parts, [&](size_t p, unsigned) { tables_[0].AddFound(rest, n * p / parts, n * (p + 1) / parts, &missing[p]); });
    view.rest = &tables_[1];
    for (const auto& m : missing) view.rest_slots.insert(view.rest_slots.end(), m.begin(), m.end());
    return view;
  }

  // All counts in one table (tables_[0]).
  PretokenTable& Reduce() {
    CountsView view = ReduceView();
    if (view.rest != nullptr) {
      PretokenTable& all = *view.table;
      all.Reserve(view.size());
      for (uint64_t slot : view.rest_slots) all.AddFrom(*view.rest, slot);
      *view.rest = PretokenTable();
    }
    return tables_[0];
  }

 private:
  static constexpr size_t kItemBytes = size_t{1} << 20;
  const SpecialTokenSplitter& splitter_;
  ThreadPool pool_;
  std::vector<PretokenTable> tables_;
  std::vector<std::string_view> items_;
};

// Where a block may be cut (see the file comment); 0 when nowhere.
size_t BlockCut(std::string_view text, const SpecialTokenSplitter& splitter) {
  const size_t max_len = splitter.max_length();
  if (text.size() <= max_len) return 0;
  const size_t limit = text.size() - max_len;  // matches starting at or before this are final
  size_t last_end = 0;
  SpecialTokenSplitter::Match m;
  size_t pos = 0;
  while (splitter.FindNext(text, pos, &m) && m.begin <= limit) {
    last_end = m.begin + m.length;
    pos = last_end;
  }
  const size_t x = LastSafeCut(text, last_end, limit);
  return std::max(x, last_end);
}

// ---- merging -----------------------------------------------------------------------------------------------------

// A pair's word list: up to two word ids inline, more on the heap. Most pairs are in one or two words, and a
// std::vector each (1.5 M of them on debmix at vocab 30,000) cost a malloc per pair and 30 ms of free() at the end.
class WordList {
 public:
  WordList() = default;
  WordList(WordList&& o) noexcept : size_(o.size_), cap_(o.cap_), u_(o.u_) { o.Reset(); }
  WordList& operator=(WordList&& o) noexcept {
    if (this != &o) {
      Free();
      size_ = o.size_;
      cap_ = o.cap_;
      u_ = o.u_;
      o.Reset();
    }
    return *this;
  }
  WordList(const WordList&) = delete;
  WordList& operator=(const WordList&) = delete;
  ~WordList() { Free(); }

  // Appends w unless it is already the last entry (a word adds a pair once per step).
  void AddOnce(uint32_t w) {
    if (size_ > 0 && data()[size_ - 1] == w) return;
    if (size_ == cap_) Grow();
    data()[size_++] = w;
  }
  // Moves the entries into *out (replacing its contents) and empties the list.
  void TakeInto(std::vector<uint32_t>* out) {
    out->assign(data(), data() + size_);
    Free();
    Reset();
  }

 private:
  static constexpr uint32_t kInline = 2;
  uint32_t* data() { return cap_ > kInline ? u_.heap : u_.inline_ids; }
  void Grow() {
    const uint32_t cap = cap_ * 2;
    auto* heap = static_cast<uint32_t*>(std::malloc(sizeof(uint32_t) * cap));
    if (heap == nullptr) throw std::bad_alloc();
    std::memcpy(heap, data(), sizeof(uint32_t) * size_);
    Free();
    u_.heap = heap;
    cap_ = cap;
  }
  void Free() {
    if (cap_ > kInline) std::free(u_.heap);
  }
  void Reset() {
    size_ = 0;
    cap_ = kInline;
  }
  uint32_t size_ = 0, cap_ = kInline;
  union {
    uint32_t inline_ids[kInline];
    uint32_t* heap;
  } u_{};
};

class PairMap {
 public:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  PairMap() {
    keys_.assign(1 << 16, kEmpty);
    vals_.resize(1 << 16);
  }
  // Returns the pair's index, creating it (with *inserted = true) if absent.
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
  int64_t CountOf(uint64_t key) const {
    size_t i = Mix(key) & (keys_.size() - 1);
    for (;;) {
      if (keys_[i] == key) return count_[vals_[i]];
      if (keys_[i] == kEmpty) return 0;
      i = (i + 1) & (keys_.size() - 1);
    }
  }
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

  explicit Merger(const CountsView& counts) {
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

  // False when the words do not fit 32-bit offsets (more than 4 G symbols of unique pre-tokens).
  bool ok() const { return syms_.size() < (uint64_t{1} << 32); }

  // Runs up to `max_merges` merges.
  void Run(size_t max_merges, ProgressSink* progress) {
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
  void AddPair(uint32_t a, uint32_t b, int64_t c, uint32_t w) {
    bool inserted;
    const uint32_t idx = pairs_.FindOrInsert(Key(a, b), &inserted);
    pairs_.count_[idx] += c;
    pairs_.where_[idx].AddOnce(w);
  }

  // Every occurrence of (a, b) becomes z; with x before it and y after, (x, a) and (b, y) lose the word's count and
  // (x, z) and (z, y) gain it. The changes are summed per neighbour in dense arrays during the scan and applied to
  // the pair map once per distinct neighbour: per occurrence that was four hash look-ups, each a likely cache miss.
  void MergeStep(uint32_t a, uint32_t b) {
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

  // Adds each touched neighbour's sum to its new pair and records the words the pair is in (in scan order).
  template <typename KeyOf>
  void Gain(const Side& side, KeyOf key_of) {
    for (uint32_t t : side.touched) {
      bool inserted;
      const uint32_t idx = pairs_.FindOrInsert(key_of(t), &inserted);
      pairs_.count_[idx] += side.sum[t];
      if (inserted) new_pairs_.push_back(idx);
      pair_of_[t] = idx;
    }
    for (const auto& [t, w] : side.words) pairs_.where_[pair_of_[t]].AddOnce(w);
  }

  // Subtracts each touched neighbour's sum from its old pair (never the pair being merged) and clears the side.
  template <typename KeyOf>
  void Lose(Side* side, uint64_t merging, KeyOf key_of) {
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

  int64_t CountOfWord(uint32_t w) const { return static_cast<int64_t>(syms_[w + 2] | (uint64_t{syms_[w + 3]} << 32)); }

  HugeVector<uint32_t> syms_;    // word records (see kHeader)
  std::vector<uint32_t> words_;  // record offsets, only until the initial pair count
  PairMap pairs_;
  QuadHeap<LessT> heap_{Less()};
  std::vector<uint32_t> new_pairs_;
  std::vector<uint32_t> where_scratch_;  // the merged pair's word list during MergeStep
  Side left_, right_;                    // (x, a) -> (x, z) by x, and (b, y) -> (z, y) by y
  // Per touched neighbour token: the index of its new pair (Gain).
  std::vector<uint32_t> pair_of_;
};

Status CheckVocabSize(const std::vector<std::string>& specials, const BpeTrainOptions& o) {
  if (o.vocab_size < specials.size() + 256)
    return Status::InvalidArgument(
        fmt::format("{} {} is below the {} tokens every vocabulary starts with ({} special + 256 bytes)",
                    Field("vocab_size"), o.vocab_size, specials.size() + 256, specials.size()));
  return Status::Ok();
}

Result<BpeTrainResult> Finish(const std::vector<std::string>& specials, CountsView& counts, const BpeTrainOptions& o,
                              BpeTrainStats stats, ProgressSink* progress);

}  // namespace

Result<std::vector<std::string>> CheckedSpecials(const BpeTrainOptions& o) {
  LMKIT_ASSIGN_OR_RETURN(auto specials, NormalizeSpecialTokens(o.special_tokens));
  LMKIT_RETURN_IF_ERROR(CheckVocabSize(specials, o));
  return specials;
}

Result<std::vector<std::string>> NormalizeSpecialTokens(const std::vector<std::string>& given) {
  std::vector<std::string> specials;
  for (const auto& s : given) {
    if (s.empty()) return Status::InvalidArgument("a special token must not be empty");
    if (s.size() == 1)
      return Status::InvalidArgument(
          fmt::format("special token '{}' is a single byte, which is already a token of its own", s));
    for (size_t i = 0; i < s.size();) {
      const DecodedChar d = DecodeUtf8At(s, i);
      if (d.cp == kInvalidCodePoint)
        return Status::InvalidArgument("special tokens must be valid UTF-8 (tokenizer.json is JSON)");
      i += d.len;
    }
    if (std::find(specials.begin(), specials.end(), s) == specials.end()) specials.push_back(s);
  }
  return specials;
}

namespace {

Result<BpeTrainResult> Finish(const std::vector<std::string>& specials, CountsView& counts, const BpeTrainOptions& o,
                              BpeTrainStats stats, ProgressSink* progress) {
  stats.pretokens_unique = counts.size();
  counts.ForEach([&](std::string_view, uint64_t count) { stats.pretokens_total += count; });
  const double t0 = MonotonicSeconds();
  Merger merger(counts);
  if (!merger.ok())
    return Status::Unsupported("", "more than 4 G bytes of distinct pre-tokens; the merger indexes words with 32 bits");
  counts.Release();  // the words now live in the merger
  merger.Run(o.vocab_size - specials.size() - 256, progress);
  stats.merge_seconds = MonotonicSeconds() - t0;

  BpeTrainResult r;
  const uint32_t k = static_cast<uint32_t>(specials.size());
  r.model.num_specials = k;
  r.model.vocab = specials;
  for (auto& t : merger.tokens_) r.model.vocab.push_back(std::move(t));
  for (const auto& [a, b] : merger.merges_) r.model.merges.emplace_back(a + k, b + k);
  uint32_t best = k;  // the longest non-special token (smallest id among equals)
  for (uint32_t i = k + 1; i < r.model.vocab.size(); ++i)
    if (r.model.vocab[i].size() > r.model.vocab[best].size()) best = i;
  stats.longest_token_id = best;
  r.stats = stats;
  return r;
}

}  // namespace

Result<BpeTrainResult> TrainBpeOnText(std::string_view text, const BpeTrainOptions& options) {
  LMKIT_ASSIGN_OR_RETURN(auto specials, CheckedSpecials(options));
  SpecialTokenSplitter splitter(specials);
  Counter counter(splitter, options.threads);
  BpeTrainStats stats;
  stats.input_bytes = text.size();
  const double t0 = MonotonicSeconds();
  counter.CountBlock(text);
  CountsView counts = counter.ReduceView();
  stats.count_seconds = MonotonicSeconds() - t0;
  return Finish(specials, counts, options, stats, nullptr);
}

struct RangeCounter::Impl {
  Impl(const BpeCountOptions& o, std::vector<std::string> sp, io::Corpus c)
      : options(o), specials(std::move(sp)), corpus(std::move(c)), splitter(specials), counter(splitter, o.threads) {}
  BpeCountOptions options;
  std::vector<std::string> specials;
  io::Corpus corpus;
  SpecialTokenSplitter splitter;
  Counter counter;
  // Left uninitialised (no zero-fill of a block that a small input never touches) and kept between ranges. It holds
  // the carried tail of the previous block followed by newly read bytes, and doubles when a block has no boundary.
  HugeBuffer buf;
  size_t cap = 0;
  HugeBuffer buf2;  // the next block, read on a second thread while `buf` is counted
  size_t cap2 = 0;

  // After the last range: the read buffers go before the tables are merged.
  void FreeBuffers() {
    buf = HugeBuffer();
    buf2 = HugeBuffer();
  }
};

Result<io::Corpus> OpenBpeCorpus(const io::CorpusOptions& corpus, const std::vector<std::string>& specials) {
  if (specials.empty() && corpus.doc_separator.empty() && io::HasDocuments(corpus))
    return Status::InvalidArgument("JSONL and Parquet documents are joined by a separator: give " +
                                   Field("special_tokens") + " (the first one joins them) or " +
                                   Field("doc_separator"));
  return io::Corpus::Create(corpus, specials.empty() ? std::string_view() : std::string_view(specials.front()));
}

Result<std::unique_ptr<RangeCounter>> RangeCounter::Create(const BpeCountOptions& options) {
  LMKIT_ASSIGN_OR_RETURN(auto specials, NormalizeSpecialTokens(options.special_tokens));
  LMKIT_ASSIGN_OR_RETURN(io::Corpus corpus, OpenBpeCorpus(options.corpus, specials));
  std::unique_ptr<RangeCounter> rc(new RangeCounter());
  rc->impl_ = std::make_unique<Impl>(options, std::move(specials), std::move(corpus));
  return rc;
}

RangeCounter::RangeCounter() = default;
RangeCounter::~RangeCounter() = default;

io::Corpus& RangeCounter::corpus() { return impl_->corpus; }
const std::vector<std::string>& RangeCounter::specials() const { return impl_->specials; }

namespace {

// Reads `src` into dst until `cap` bytes or its end (a source may return less than asked before its end).
Status Fill(io::ByteSource& src, char* dst, size_t cap, size_t* got, bool* eof) {
  *got = 0;
  while (*got < cap) {
    LMKIT_ASSIGN_OR_RETURN(size_t n, src.Read(dst + *got, cap - *got));
    if (n == 0) {
      *eof = true;
      break;
    }
    *got += n;
  }
  return Status::Ok();
}

// Grows a block buffer to `cap` bytes, keeping its first `keep`.
void Grow(HugeBuffer* buf, size_t* cap, size_t want, size_t keep) {
  if (*cap >= want && *buf) return;
  HugeBuffer bigger(want);
  if (keep > 0) std::memcpy(bigger.get(), buf->get(), keep);
  *buf = std::move(bigger);
  *cap = want;
}

}  // namespace

// Reading costs CPU: decompression and JSON parsing (about a third of counting's instructions for .jsonl.zst), the
// copy out of a pipe that waits for the writer (2-3 s of a 2 GB run through stdin), and even a regular file's copy
// from the page cache (0.13-0.2 s of 130 MB, serial, on the 2-vCPU benchmark VM). So the next block is always read
// on a second thread while the current one is counted, in two buffers of half the block size each: the memory stays
// that of one block, and a one-thread count of debmix went from 2.1-2.3 s to 1.8-2.1 s wall.
Status RangeCounter::Count(uint64_t begin, uint64_t end, BpeTrainStats* stats, ProgressSink* progress) {
  Impl& m = *impl_;
  if (begin > end) return Status::InvalidArgument("byte range ends before it begins");
  LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<io::ByteSource> in, m.corpus.Open(begin, end));
  // The size to show: the range, or what the source knows (regular text files; 0 for stdin and documents).
  if (progress) progress->Begin("counting", end != UINT64_MAX ? end - begin : in->SizeHint(), "B");
  const size_t block = std::max<size_t>(m.options.block_bytes / 2, 4096);
  Grow(&m.buf, &m.cap, block, 0);
  Grow(&m.buf2, &m.cap2, block, 0);
  size_t len = 0;
  uint64_t read_total = 0;
  const double t_start = MonotonicSeconds();
  double read_seconds = 0;
  bool eof = false;
  auto read_more = [&]() -> Status {  // into the current buffer, after its `len` bytes, on this thread
    if (len == m.cap) Grow(&m.buf, &m.cap, m.cap * 2, len);
    const double tr = MonotonicSeconds();
    size_t got = 0;
    LMKIT_RETURN_IF_ERROR(Fill(*in, m.buf.get() + len, m.cap - len, &got, &eof));
    read_seconds += MonotonicSeconds() - tr;
    len += got;
    read_total += got;
    return Status::Ok();
  };
  LMKIT_RETURN_IF_ERROR(read_more());
  while (len > 0) {
    const std::string_view text(m.buf.get(), len);
    const size_t cut = eof ? len : BlockCut(text, m.splitter);
    if (cut == 0) {  // no boundary yet: read more into the same buffer
      LMKIT_RETURN_IF_ERROR(read_more());
      continue;
    }
    const size_t tail = len - cut;
    if (!eof) {
      Grow(&m.buf2, &m.cap2, m.cap, 0);
      std::memcpy(m.buf2.get(), m.buf.get() + cut, tail);
      size_t got = 0;
      bool next_eof = false;
      Status read = Status::Ok();
      SideThread reader([&] { read = Fill(*in, m.buf2.get() + tail, m.cap2 - tail, &got, &next_eof); });
      m.counter.CountBlock(text.substr(0, cut));
      const double tr = MonotonicSeconds();
      reader.Join();
      read_seconds += MonotonicSeconds() - tr;
      LMKIT_RETURN_IF_ERROR(read);
      std::swap(m.buf, m.buf2);
      std::swap(m.cap, m.cap2);
      len = tail + got;
      read_total += got;
      eof = next_eof;
    } else {
      m.counter.CountBlock(text.substr(0, cut));
      len = tail;  // 0: at the end of the input the cut is the whole buffer
    }
    if (progress) progress->Update(read_total - len);
  }
  if (progress) progress->Finish();
  stats->input_bytes += read_total;
  stats->read_seconds += read_seconds;
  stats->count_seconds += MonotonicSeconds() - t_start - read_seconds;
  return Status::Ok();
}

void RangeCounter::Finish(PretokenTable* table) {
  impl_->FreeBuffers();
  PretokenTable& counted = impl_->counter.Reduce();
  if (table->size() == 0)
    *table = std::move(counted);
  else
    table->Absorb(counted);
}

Status CountPretokens(const BpeCountOptions& options, PretokenTable* table, BpeTrainStats* stats,
                      ProgressSink* progress) {
  LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<RangeCounter> rc, RangeCounter::Create(options));
  LMKIT_RETURN_IF_ERROR(rc->Count(options.begin, options.end, stats, progress));
  // The reduction of the per-thread tables is part of counting.
  const double t_reduce = MonotonicSeconds();
  rc->Finish(table);
  stats->count_seconds += MonotonicSeconds() - t_reduce;
  return Status::Ok();
}

Result<BpeTrainResult> TrainBpeOnCounts(PretokenTable&& table, const BpeTrainOptions& options, BpeTrainStats stats,
                                        ProgressSink* progress) {
  LMKIT_ASSIGN_OR_RETURN(auto specials, CheckedSpecials(options));
  PretokenTable t = std::move(table);
  CountsView counts;
  counts.table = &t;
  return Finish(specials, counts, options, stats, progress);
}

Result<BpeTrainResult> TrainBpe(const BpeTrainOptions& options, ProgressSink* progress) {
  if (options.corpus.inputs.empty()) return Status::InvalidArgument("no input files");
  LMKIT_ASSIGN_OR_RETURN(auto specials, CheckedSpecials(options));
  BpeCountOptions co;
  co.corpus = options.corpus;
  co.special_tokens = options.special_tokens;
  co.threads = options.threads;
  co.block_bytes = options.block_bytes;
  BpeTrainStats stats;
  LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<RangeCounter> rc, RangeCounter::Create(co));
  LMKIT_RETURN_IF_ERROR(rc->Count(co.begin, co.end, &stats, progress));
  // As CountPretokens, but the merger reads the per-thread tables without their union (CountsView).
  const double t_reduce = MonotonicSeconds();
  rc->impl_->FreeBuffers();
  CountsView counts = rc->impl_->counter.ReduceView();
  stats.count_seconds += MonotonicSeconds() - t_reduce;
  return Finish(specials, counts, options, stats, progress);
}

}  // namespace lmkit::bpe
