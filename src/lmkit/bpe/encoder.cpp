// Performance notes (measured on debmix.txt, 130 MB, GPT-2, one thread; see docs/benchmarks/bpe-encode.md):
// - Most pre-tokens of English text are whole tokens: one hash lookup (BytesIdMap, a short-string hash and one
//   memcmp) settles them, as in tiktoken.
// - The rest merge over two small flat arrays (ids, packed rank|result per adjacent pair); a linear min-scan beats a
//   heap for the short pieces that reach it. Pieces over kFlatMaxBytes (long runs of spaces or symbols) switch to a
//   heap so that a pathological input stays O(n log n).
// - Merge rules are looked up by id pair in an open-addressing table with a multiplicative hash (no byte hashing in
//   the inner loop).
// - A small direct-mapped cache per thread remembers recent pieces that needed merging.
#include "lmkit/bpe/encoder.h"

#include <algorithm>
#include <cstring>

namespace lmkit::bpe {

Encoder::Encoder(const Tokenizer& tokenizer, size_t cache_slots)
    : tok_(tokenizer),
      own_rules_(SpecialRules::AllowAll(tokenizer)),
      pattern_(tokenizer.pattern()),
      shortcut_(tokenizer.whole_piece_shortcut()) {
  size_t slots = 1;
  while (slots < cache_slots) slots *= 2;
  cache_mask_ = slots - 1;
  cache_.resize(slots);
  hot_.resize(kHotSlots);
}

void Encoder::Encode(std::string_view text, std::vector<uint32_t>* out) {
  const SpecialRules& rules = special_rules();
  const SpecialTokenSplitter& splitter = rules.allowed();
  if (splitter.empty()) {
    EncodeOrdinary(text, out);
    return;
  }
  size_t pos = 0;
  SpecialTokenSplitter::Match m;
  while (pos < text.size() && splitter.FindNext(text, pos, &m)) {
    if (m.begin > pos) EncodeOrdinary(text.substr(pos, m.begin - pos), out);
    out->push_back(rules.allowed_id(m.index));
    pos = m.begin + m.length;
  }
  if (pos < text.size()) EncodeOrdinary(text.substr(pos), out);
}

void Encoder::EncodeOrdinary(std::string_view text, std::vector<uint32_t>* out) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = NextPretokenEnd(pattern_, text, pos);
    EncodePiece(text.substr(pos, end - pos), out);
    pos = end;
  }
}

void Encoder::EncodePiece(std::string_view piece, std::vector<uint32_t>* out) {
  if (piece.size() == 1) {
    out->push_back(tok_.ByteId(static_cast<uint8_t>(piece[0])));
    return;
  }
  if (shortcut_) {
    // Hot path: pieces of up to 8 bytes (most of them) are first looked up in a small per-thread table that stays
    // in L1/L2, keyed by their bytes packed in a word; the tokenizer's table (megabytes) is a cache miss away.
    if (piece.size() <= 8) {
      const uint64_t key = detail::LoadUpTo8(piece.data(), piece.size());
      HotEntry& e = hot_[(((key + piece.size()) * 0x9E3779B97F4A7C15ull) >> 40) & (kHotSlots - 1)];
      if (e.key == key && e.len == piece.size()) {
        out->push_back(e.id);
        return;
      }
      uint32_t id = tok_.TokenId(piece);
      if (id != kNoId) {
        e.key = key;
        e.len = static_cast<uint32_t>(piece.size());
        e.id = id;
        out->push_back(id);
        return;
      }
    } else {
      uint32_t id = tok_.TokenId(piece);
      if (id != kNoId) {
        out->push_back(id);
        return;
      }
    }
  }
  if (piece.size() > kFlatMaxBytes) {
    MergeHeap(piece, out);
    return;
  }
  const bool cacheable = piece.size() <= kCacheKeyBytes;
  uint64_t hash = 0;
  if (cacheable) {
    hash = detail::HashBytes(piece.data(), piece.size());
    if (CacheLookup(piece, hash, out)) return;
  }
  size_t before = out->size();
  MergeFlat(piece, out);
  if (cacheable) CacheStore(piece, hash, out->data() + before, out->size() - before);
}

bool Encoder::CacheLookup(std::string_view piece, uint64_t hash, std::vector<uint32_t>* out) const {
  const CacheEntry& e = cache_[hash & cache_mask_];
  if (e.len != piece.size() || e.hash != hash || std::memcmp(e.key, piece.data(), piece.size()) != 0) return false;
  out->insert(out->end(), e.ids, e.ids + e.nids);
  return true;
}

void Encoder::CacheStore(std::string_view piece, uint64_t hash, const uint32_t* ids, size_t n) {
  if (n > kCacheIds) return;
  CacheEntry& e = cache_[hash & cache_mask_];
  e.hash = hash;
  e.len = static_cast<uint8_t>(piece.size());
  e.nids = static_cast<uint8_t>(n);
  std::memcpy(e.key, piece.data(), piece.size());
  std::memcpy(e.ids, ids, n * sizeof(uint32_t));
}

void Encoder::MergeFlat(std::string_view piece, std::vector<uint32_t>* out) {
  size_t m = piece.size();
  ids_.resize(m);
  ranks_.resize(m);
  uint32_t* ids = ids_.data();
  uint64_t* ranks = ranks_.data();
  for (size_t i = 0; i < m; ++i) ids[i] = tok_.ByteId(static_cast<uint8_t>(piece[i]));
  for (size_t i = 0; i + 1 < m; ++i) ranks[i] = tok_.Merge(ids[i], ids[i + 1]);
  while (m > 1) {
    uint64_t best = kNoPair;
    size_t at = 0;
    for (size_t i = 0; i + 1 < m; ++i) {
      if (ranks[i] < best) {
        best = ranks[i];
        at = i;
      }
    }
    if (best == kNoPair) break;
    ids[at] = static_cast<uint32_t>(best);
    // Remove ids[at + 1] and the pair (at + 1, at + 2); the pairs touching `at` are recomputed.
    // Plain loops: the arrays are a few elements long and a libc call costs more than the copy.
    for (size_t i = at + 1; i + 1 < m; ++i) ids[i] = ids[i + 1];
    for (size_t i = at + 1; i + 2 < m; ++i) ranks[i] = ranks[i + 1];
    --m;
    if (at + 1 < m) ranks[at] = tok_.Merge(ids[at], ids[at + 1]);
    if (at > 0) ranks[at - 1] = tok_.Merge(ids[at - 1], ids[at]);
  }
  out->insert(out->end(), ids, ids + m);
}

void Encoder::MergeHeap(std::string_view piece, std::vector<uint32_t>* out) {
  const size_t n = piece.size();
  constexpr uint32_t kEnd = 0xFFFFFFFFu;
  ids_.resize(n);
  next_.resize(n);
  prev_.resize(n);
  heap_.clear();
  for (size_t i = 0; i < n; ++i) {
    ids_[i] = tok_.ByteId(static_cast<uint8_t>(piece[i]));
    next_[i] = i + 1 < n ? static_cast<uint32_t>(i + 1) : kEnd;
    prev_[i] = i > 0 ? static_cast<uint32_t>(i - 1) : kEnd;
  }
  // Min-heap on (packed rank|result, position): the lowest rank, leftmost first, exactly as the flat scan.
  auto greater = [](const std::pair<uint64_t, uint32_t>& a, const std::pair<uint64_t, uint32_t>& b) { return a > b; };
  auto push = [&](uint32_t pos) {
    uint32_t nx = next_[pos];
    if (nx == kEnd) return;
    uint64_t r = tok_.Merge(ids_[pos], ids_[nx]);
    if (r == kNoPair) return;
    heap_.emplace_back(r, pos);
    std::push_heap(heap_.begin(), heap_.end(), greater);
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<uint32_t>(i));
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), greater);
    auto [r, pos] = heap_.back();
    heap_.pop_back();
    // Stale entries: the left part was absorbed, or the pair at pos changed since the push.
    if (ids_[pos] == kNoId) continue;
    uint32_t nx = next_[pos];
    if (nx == kEnd || tok_.Merge(ids_[pos], ids_[nx]) != r) continue;
    ids_[pos] = static_cast<uint32_t>(r);
    ids_[nx] = kNoId;
    next_[pos] = next_[nx];
    if (next_[nx] != kEnd) prev_[next_[nx]] = pos;
    push(pos);
    if (prev_[pos] != kEnd) push(prev_[pos]);
  }
  for (uint32_t i = 0; i != kEnd && n > 0; i = next_[i]) out->push_back(ids_[i]);
}

}  // namespace lmkit::bpe
