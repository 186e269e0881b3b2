// Pre-token -> count table used by BPE training, by the counts files (counts_file.h) and by the MPI reduction.
//
// Contract: an open-addressing hash table from pre-token bytes (never empty) to a uint64 count. Add() adds to a count,
// CountSpan() pre-tokenizes a span with the GPT-2 pattern and counts every pre-token, Absorb() adds another table's
// counts, ForEach() visits entries in insertion (entry-id) order. Counts are sums, so the contents do not depend on the
// order of additions (entry ids do). Not thread-safe; one table per worker thread.
// Performance notes: see counter.cpp (16-byte slots with the first 8 key bytes inline, dense counts, prefetched
// look-ups 8 pre-tokens behind the scanner).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/bpe/pretokenize/pretokenizer.h"
#include "lmkit/bpe/pretokenize/pretokenizer_ascii.h"
#include "lmkit/common/huge_pages.h"

namespace lmkit::bpe {

namespace table_detail {

inline uint64_t HashBytes(const char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0x9FB21C651E98DF25ull;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0x9FB21C651E98DF25ull;
    h ^= h >> 29;
  }
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

// Bytes [8, len) of two keys of length len > 8 are equal. Compares 8-byte words, the last one ending at len (it may
// overlap the word before it or the first 8 bytes, which the caller compared): no byte outside either key is read,
// and there is no call (libc's memcmp for these 9-30 byte tails was 4-5% of a training run's samples).
inline bool SameTail(const char* x, const char* y, size_t len) {
  uint64_t u, v;
  for (size_t i = 8; i + 8 < len; i += 8) {
    std::memcpy(&u, x + i, 8);
    std::memcpy(&v, y + i, 8);
    if (u != v) return false;
  }
  std::memcpy(&u, x + len - 8, 8);
  std::memcpy(&v, y + len - 8, 8);
  return u == v;
}

inline uint64_t Mix64(uint64_t h) {
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

// Pre-token -> count, open addressing with linear probing. A slot is 16 bytes: the key's first 8 bytes inline, its
// length and a dense entry id. Most pre-tokens are <= 8 bytes, so a probe compares them without touching other memory;
// longer keys compare the rest in `arena_`. Counts live in a dense array indexed by entry id: frequent pre-tokens are
// seen first, get small ids, and their counters share a few hot cache lines.
}  // namespace table_detail

// Cache-line aligned: one table per counting thread sits in a vector, and neighbours must not share a line.
class alignas(64) PretokenTable {
 public:
  struct Slot {
    uint64_t prefix = 0;  // first min(len, 8) bytes, zero-padded
    uint32_t len = 0;     // 0 = empty (pre-tokens are never empty)
    uint32_t id = 0;
  };

  PretokenTable() { slots_.resize(1 << 12); }

  static uint64_t Hash(uint64_t prefix, const char* p, size_t len) {
    if (len <= 8) return table_detail::Mix64((prefix ^ (uint64_t{len} << 56)) * 0x9E3779B97F4A7C15ull);
    return table_detail::HashBytes(p, len);
  }

  // Adds `count` to the entry for `key` (non-empty).
  void Add(std::string_view key, uint64_t count) {
    uint64_t prefix = 0;
    std::memcpy(&prefix, key.data(), key.size() < 8 ? key.size() : 8);
    Add(key.data(), key.size(), prefix, Hash(prefix, key.data(), key.size()), count);
  }

  // `p` points at the whole key; it is only read when len > 8. Returns the entry id.
  uint32_t Add(const char* p, size_t len, uint64_t prefix, uint64_t h, uint64_t count) {
    const size_t mask = slots_.size() - 1;
    size_t i = h & mask;
    for (;;) {
      Slot& s = slots_[i];
      if (s.len == 0) {
        s.prefix = prefix;
        s.len = static_cast<uint32_t>(len);
        s.id = static_cast<uint32_t>(counts_.size());
        counts_.push_back(count);
        offs_.push_back(arena_.size());
        if (len > 8) arena_.append(p, len);
        const uint32_t id = s.id;
        if (counts_.size() * 2 > slots_.size()) Grow();
        return id;
      }
      if (s.prefix == prefix && s.len == len &&
          (len <= 8 || table_detail::SameTail(arena_.data() + offs_[s.id], p, len))) {
        counts_[s.id] += count;
        return s.id;
      }
      i = (i + 1) & mask;
    }
  }

  // Pre-tokenizes `span` and counts its pre-tokens. The table look-ups run kAhead pre-tokens behind the scanner, with
  // the slot of each pending pre-token prefetched when it is found, so the cache miss of a look-up overlaps with the
  // scanning and hashing of the next ones (the look-up order, hence every entry id, is unchanged).
  void CountSpan(std::string_view span) {
    struct Pending {
      const char* p;
      uint64_t prefix;
      uint64_t h;
      size_t len;
    };
    constexpr size_t kAhead = 8;
    Pending ring[kAhead];
    size_t head = 0, pending = 0;
    const char* base = span.data();
    const size_t n = span.size();
    size_t pos = 0;
    while (pos < n) {
      size_t end = ascii::AsciiPretokenEnd<PretokPattern::kGpt2>(base, pos, n);  // inline, for most pre-tokens
      if (end == 0) end = NextPretokenEndGeneral(PretokPattern::kGpt2, span, pos);
      const size_t len = end - pos;
      uint64_t prefix = 0;
      if (pos + 8 <= n) {
        std::memcpy(&prefix, base + pos, 8);
        if (len < 8) prefix &= (uint64_t{1} << (8 * len)) - 1;  // little-endian: keep the first len bytes
      } else {
        std::memcpy(&prefix, base + pos, len < 8 ? len : 8);
      }
      const Pending next{base + pos, prefix, Hash(prefix, base + pos, len), len};
      __builtin_prefetch(&slots_[next.h & (slots_.size() - 1)]);
      pos = end;
      if (pending == kAhead) {
        const Pending& q = ring[head];
        Add(q.p, q.len, q.prefix, q.h, 1);
        ring[head] = next;
        head = (head + 1) % kAhead;
      } else {
        ring[(head + pending++) % kAhead] = next;
      }
    }
    for (size_t i = 0; i < pending; ++i) {
      const Pending& q = ring[(head + i) % kAhead];
      Add(q.p, q.len, q.prefix, q.h, 1);
    }
  }

  static constexpr size_t kNone = ~size_t{0};
  // The entry id of the key (as for Add), or kNone when the table lacks it. Reads only.
  size_t Find(const char* p, size_t len, uint64_t prefix, uint64_t h) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.len == 0) return kNone;
      if (s.prefix == prefix && s.len == len &&
          (len <= 8 || table_detail::SameTail(arena_.data() + offs_[s.id], p, len)))
        return s.id;
    }
  }

  // For o's slots [begin, end): adds the count of every key this table holds to its entry here, and appends the slot
  // index of every key it lacks to *missing (in slot order). Writes only counts: calls over disjoint slot ranges of
  // one `o` may run at the same time, as o's keys are distinct and no two calls add to one count. Look-ups are
  // pipelined behind prefetches (Pipelined).
  void AddFound(const PretokenTable& o, size_t begin, size_t end, std::vector<uint64_t>* missing) {
    struct Pending {
      uint64_t hash;
      size_t slot;
    };
    auto look_up = [&](const Pending& q) {
      const Slot& s = o.slots_[q.slot];
      const size_t id = Find(o.KeyAt(s), s.len, s.prefix, q.hash);
      if (id == kNone)
        missing->push_back(q.slot);
      else
        counts_[id] += o.counts_[s.id];
    };
    size_t i = begin;
    Pipelined<Pending>(
        [&](Pending* e) {
          while (i < end && o.slots_[i].len == 0) ++i;
          if (i == end) return false;
          const Slot& s = o.slots_[i];
          *e = Pending{Hash(s.prefix, o.KeyAt(s), s.len), i++};
          return true;
        },
        look_up);
  }

  // Adds the entry in o's slot i, which must be full (a slot index from AddFound).
  void AddFrom(const PretokenTable& o, size_t i) {
    const Slot& s = o.slots_[i];
    const char* key = o.KeyAt(s);
    Add(key, s.len, s.prefix, Hash(s.prefix, key, s.len), o.counts_[s.id]);
  }

  // Calls fn(key bytes, count) for the entry in slot i, which must be full (a slot index from AddFound).
  template <typename Fn>
  void VisitSlot(size_t i, Fn&& fn) const {
    const Slot& s = slots_[i];
    if (s.len > 8) {
      fn(std::string_view(KeyAt(s), s.len), counts_[s.id]);
    } else {
      char tmp[8];
      std::memcpy(tmp, &s.prefix, 8);
      fn(std::string_view(tmp, s.len), counts_[s.id]);
    }
  }
  size_t slot_count() const { return slots_.size(); }

  // Calls fn(key bytes, count) for every entry, in entry-id order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    std::vector<uint64_t> prefix(counts_.size());
    std::vector<uint32_t> lens(counts_.size());
    for (const Slot& s : slots_) {
      if (s.len == 0) continue;
      prefix[s.id] = s.prefix;
      lens[s.id] = s.len;
    }
    char tmp[8];
    for (size_t id = 0; id < counts_.size(); ++id) {
      if (lens[id] > 8) {
        fn(std::string_view(arena_.data() + offs_[id], lens[id]), counts_[id]);
      } else {
        std::memcpy(tmp, &prefix[id], 8);
        fn(std::string_view(tmp, lens[id]), counts_[id]);
      }
    }
  }

  // An entry for AddPrefetched: `key` is only read when len > 8.
  struct Entry {
    const char* key = nullptr;
    uint64_t len = 0, prefix = 0, hash = 0, count = 0;
  };
  // Adds the entries next(&entry) produces until it returns false, in that order (so entry ids are as with plain Add
  // calls), each look-up pipelined behind the prefetch of its slot (Pipelined) so that the cache misses of a bulk
  // merge overlap.
  template <typename Next>
  void AddPrefetched(Next&& next) {
    Pipelined<Entry>(next, [&](const Entry& e) { Add(e.key, e.len, e.prefix, e.hash, e.count); });
  }

  // Adds every entry of `o`, in o's slot order, after making room for both tables (one rehash at most instead of one
  // per doubling).
  void Absorb(const PretokenTable& o) {
    Reserve(size() + o.size());
    size_t i = 0;
    AddPrefetched([&](Entry* e) {
      while (i < o.slots_.size() && o.slots_[i].len == 0) ++i;
      if (i == o.slots_.size()) return false;
      const Slot& s = o.slots_[i++];
      e->key = s.len > 8 ? o.arena_.data() + o.offs_[s.id] : nullptr;
      e->len = s.len;
      e->prefix = s.prefix;
      e->hash = Hash(s.prefix, e->key, s.len);
      e->count = o.counts_[s.id];
      return true;
    });
  }

  // Makes room for `entries` entries in all, so adding up to that many never grows the table.
  void Reserve(size_t entries) {
    size_t want = slots_.size();
    while (entries * 2 > want) want *= 2;
    if (want != slots_.size()) Rehash(want);
    counts_.reserve(entries);
    offs_.reserve(entries);
  }
  // Prefetches the first slot a key with hash `h` probes (for callers that pipeline their Add calls).
  void Prefetch(uint64_t h) const { __builtin_prefetch(&slots_[h & (slots_.size() - 1)]); }

  size_t size() const { return counts_.size(); }
  size_t key_bytes() const { return arena_.size() + counts_.size() * 8; }

 private:
  // Takes items from next(&item) until it returns false, prefetches each one's first slot (item.hash) as it comes
  // and calls done(item) kAhead items later, in order: the cache misses of the look-ups overlap.
  template <typename Item, typename Next, typename Done>
  void Pipelined(Next&& next, Done&& done) const {
    constexpr size_t kAhead = 8;
    Item ring[kAhead];
    size_t n = 0;
    for (Item e; next(&e); ++n) {
      Prefetch(e.hash);
      Item& slot = ring[n % kAhead];
      if (n >= kAhead) done(slot);
      slot = e;
    }
    for (size_t i = n > kAhead ? n - kAhead : 0; i < n; ++i) done(ring[i % kAhead]);
  }

  // The key bytes of a full slot when they live in the arena (len > 8), else nullptr.
  const char* KeyAt(const Slot& s) const { return s.len > 8 ? arena_.data() + offs_[s.id] : nullptr; }
  void Grow() { Rehash(slots_.size() * 2); }
  void Rehash(size_t new_slots) {
    HugeVector<Slot> old(new_slots);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.len == 0) continue;
      size_t i = Hash(s.prefix, s.len > 8 ? arena_.data() + offs_[s.id] : nullptr, s.len) & mask;
      while (slots_[i].len != 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  HugeVector<Slot> slots_;
  HugeVector<uint64_t> counts_;
  HugeVector<uint64_t> offs_;  // arena offset per entry (meaningful when len > 8)
  std::string arena_;
};

}  // namespace lmkit::bpe
