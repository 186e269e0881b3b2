// Performance notes (debmix.txt, GPT-2, one thread; docs/bpe-encoding.md "Where the time goes", and
// docs/benchmarks/bpe-encode.md):
// - Most pre-tokens of English text are whole tokens; the rest merge over two small flat arrays (ids, packed
//   rank|result per adjacent pair) with a linear min-scan, which beats a heap for the short pieces that reach it.
//   Pieces over kFlatMaxBytes switch to a heap so that a pathological input stays O(n log n).
// - Merge rules are looked up by id pair in an open-addressing table with a multiplicative hash (no byte hashing in
//   the inner loop).
// Instruction counts (callgrind, first 8 MB of debmix, whole run incl. 78 M of loading; 2-core Intel Xeon VM, lscpu
// model 167):
// - The loop inlines the ASCII pre-tokenizer (pretokenizer_ascii.h, letters eight bytes at a time) and calls the
//   general scanner only when it declines. Words only, with the cache of long pieces: 578 M -> 493 M; all ASCII
//   classes: 441 M -> 386 M.
// - Long pieces (23-512 bytes: rules of '=' and '-', indentation) are cached too: few distinct ones, but most of
//   MergeFlat's time, the flat loop being quadratic.
// - One cache for pieces of 2-16 bytes, tokens and merged pieces alike (ids inline), in front of the tokenizer's map
//   and of the merges; ids go through a pointer into a 16 KB block appended to the output in bulk (no capacity check
//   per id, no zero-filling ahead): 493 M -> 441 M.
// - That cache two-way with 32 k slots (1 MB) instead of direct-mapped 16 k (merges 66.5 k -> 57 k calls per 8 MB),
//   and a 4 k-slot cache of pair look-ups in front of the tokenizer's pair table: 386 M -> 376 M, 5% less CPU on
//   32 MB. What remains is mostly cache misses (perf): the pair table in the merge loop, the token table on misses.
//   Prefetching the two pair slots a merge will look up: +7 M instructions, about 2% less CPU.
// - The tokenizer's pair table has a Bloom filter in front (tokenizer.h): half the pairs that miss the pair cache have
//   no rule. Full debmix: gpt2 152 -> 164 MB/s, cl100k 134 -> 145, o200k 116 -> 125. Its token table too (half the
//   piece-cache misses are not tokens): gpt2 167 -> 175, cl100k 129 -> 143, o200k 117 -> 131.
// - The piece cache is sized for hits (4 MB): its misses, 6% of pieces, were ~48% of the time. Full debmix, best of
//   five: 1 MB 134 MB/s, 2 MB 143, 4 MB 149-157, 8 MB 150.
// - Tried and dropped: prefetching the piece cache sets of the pre-tokens ahead (perf puts ~20% of the time on that
//   cache's loads): 32 ahead in batches (+14% instructions, slower), 8 ahead in a ring (+22%, 9% slower), one ahead
//   (+10%, no gain); a 128 KB table of one-token pieces of <= 8 bytes in front of the piece cache (7% slower); a
//   32 k-slot pair cache (no gain over 4 k); merging without shifting, parts linked in place (+9 M instructions).
#include "lmkit/bpe/encode/encoder.h"

#include <algorithm>
#include <cstring>

#include "lmkit/bpe/pretokenize/pretokenizer_ascii.h"
#include "lmkit/bpe/pretokenize/unicode_classes.h"

namespace lmkit::bpe {

namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// True when a character-level word may be cut before every "▁" that follows another character without changing its
// ids: no token holds "▁" after another character (so no merge result, hence no symbol, ever spans such a point,
// and BPE on the pieces apart makes the whole's merges), "▁" is a token (never unk: no unk fuses across), and no
// whole-word shortcut (ignore_merges) looks at the word as one. SentencePiece-style vocabularies (Llama 2, Mistral
// v1/v3, Phi-3) are such; their segments (no pre-tokenizer) are otherwise one word each.
bool SplitsBeforeMetaspace(const Tokenizer& t) {
  if (!t.char_level() || t.whole_piece_shortcut() || t.TokenId(kMetaspace) == kNoId) return false;
  for (uint32_t id = 0; id < t.id_limit(); ++id) {
    std::string_view b;
    if (!t.TokenBytes(id, &b)) continue;
    for (size_t at = b.find(kMetaspace, 1); at != std::string_view::npos; at = b.find(kMetaspace, at + 1))
      if (at < kMetaspace.size() || b.substr(at - kMetaspace.size(), kMetaspace.size()) != kMetaspace) return false;
  }
  return true;
}

}  // namespace

Encoder::Encoder(const Tokenizer& tokenizer, size_t cache_slots)
    : tok_(tokenizer),
      pipeline_(tokenizer.pipeline()),
      char_level_(tokenizer.char_level()),
      affixes_(tokenizer.has_affixes()),
      ids_per_byte_(tokenizer.max_ids_per_byte()),
      own_rules_(SpecialRules::AllowAll(tokenizer)),
      pattern_(tokenizer.pattern()),
      shortcut_(tokenizer.whole_piece_shortcut()),
      split_meta_(SplitsBeforeMetaspace(tokenizer)) {
  size_t slots = 1;
  while (slots < cache_slots) slots *= 2;
  cache_mask_ = slots - 1;
  cache_.resize(slots);
  piece_mask_ = 8 * slots - 1;
  piece_cache_.resize(8 * slots);
  long_cache_.resize(kLongSlots);
  scratch_.resize(kScratchIds);
  pair_cache_.resize(kPairSlots);
}

void Encoder::Encode(std::string_view text, std::vector<uint32_t>* out) {
  if (pipeline_ != nullptr || tok_.has_added_flags()) return EncodeHf(text, out);
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
  if (pipeline_ != nullptr) return EncodeSegment(text, true, out);
  switch (pattern_) {
    case PretokPattern::kGpt2:
      return EncodeOrdinaryAs<PretokPattern::kGpt2>(text, out);
    case PretokPattern::kCl100k:
      return EncodeOrdinaryAs<PretokPattern::kCl100k>(text, out);
    case PretokPattern::kO200k:
      return EncodeOrdinaryAs<PretokPattern::kO200k>(text, out);
  }
}

template <PretokPattern P>
void Encoder::EncodeOrdinaryAs(std::string_view text, std::vector<uint32_t>* out) {
  const char* s = text.data();
  const size_t n = text.size();
  uint32_t* const buf = scratch_.data();
  uint32_t* const limit = buf + scratch_.size();
  uint32_t* w = buf;
  size_t pos = 0;
  while (pos < n) {
    size_t end = ascii::AsciiPretokenEnd<P>(s, pos, n);
    if (end == 0) end = NextPretokenEndGeneral(P, text, pos);
    const std::string_view piece(s + pos, end - pos);
    pos = end;
    if (static_cast<size_t>(limit - w) < piece.size() + kOutSlack) {
      out->insert(out->end(), buf, w);
      w = buf;
      if (piece.size() + kOutSlack > scratch_.size()) {
        EncodePiece(piece, out);
        continue;
      }
    }
    w = EncodePieceTo(piece, w);
  }
  out->insert(out->end(), buf, w);
}

namespace {

// Rust's char::is_alphanumeric, which Hugging Face's single_word tests (letters and numbers).
bool IsWordChar(uint32_t cp) {
  const CharClass c = CharClassOf(cp);
  return IsLetterClass(c) || c == kClassNumber;
}

// The code point ending at `end` (> 0) of text.
uint32_t CodePointBefore(std::string_view text, size_t end) {
  size_t k = end - 1;
  while (k > 0 && end - k < 4 && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
  return DecodeUtf8At(text, k).cp;
}

}  // namespace

void Encoder::EncodeHf(std::string_view text, std::vector<uint32_t>* out) {
  const SpecialRules& rules = special_rules();
  const SpecialTokenSplitter& splitter = rules.allowed();
  size_t pos = 0;     // start of the ordinary text not yet encoded
  size_t search = 0;  // where the next match may start
  SpecialTokenSplitter::Match m;
  while (search < text.size() && !splitter.empty() && splitter.FindNext(text, search, &m)) {
    const uint32_t id = rules.allowed_id(m.index);
    const Tokenizer::AddedFlags f = tok_.added_flags(id);
    size_t begin = m.begin, end = m.begin + m.length;
    if (f.single_word) {
      const bool left_ok = begin == 0 || !IsWordChar(CodePointBefore(text, begin));
      const bool right_ok = end >= text.size() || !IsWordChar(DecodeUtf8At(text, end).cp);
      if (!left_ok || !right_ok) {
        search = end;  // Hugging Face skips the match; its text stays ordinary
        continue;
      }
    }
    if (f.lstrip)
      while (begin > pos) {
        const uint32_t cp = CodePointBefore(text, begin);
        if (!IsUnicodeWhiteSpace(cp)) break;
        size_t k = begin - 1;
        while (k > pos && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
        begin = k;
      }
    if (f.rstrip)
      while (end < text.size()) {
        const DecodedChar d = DecodeUtf8At(text, end);
        if (!IsUnicodeWhiteSpace(d.cp)) break;
        end += d.len;
      }
    if (begin > pos) EncodeSegment(text.substr(pos, begin - pos), pos == 0, out);
    out->push_back(id);
    pos = search = end;
  }
  if (pos < text.size()) EncodeSegment(text.substr(pos), pos == 0, out);
}

void Encoder::EncodeSegment(std::string_view text, bool at_start, std::vector<uint32_t>* out) {
  if (pipeline_ == nullptr) {
    EncodeOrdinary(text, out);
    return;
  }
  // Hugging Face sees valid UTF-8 only; here each ill-formed byte is a word of its own and the runs between are
  // segments.
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size()) {
      const DecodedChar d = DecodeUtf8At(text, j);
      if (d.cp == kInvalidCodePoint) break;
      j += d.len;
    }
    if (j > i) EncodeValidSegment(text.substr(i, j - i), at_start && i == 0, out);
    if (j < text.size()) EncodePiece(text.substr(j, 1), out), ++j;
    i = j;
  }
}

void Encoder::EncodeValidSegment(std::string_view text, bool at_start, std::vector<uint32_t>* out) {
  std::string_view t = text;
  if (pipeline_->has_normalizer()) {
    pipeline_->Normalize(text, &norm_);
    t = norm_;
  }
  if (pipeline_->pre_tokenizer.empty()) {
    if (!split_meta_) {
      if (!t.empty()) EncodePiece(t, out);
      return;
    }
    // The segment is one word; cut before each "▁" that follows another character (SplitsBeforeMetaspace): short
    // pieces reach the piece cache instead of one heap merge over the segment (Llama 2 on debmix: 85% of the time
    // in MergeHeapTo before).
    constexpr std::string_view kMeta = kMetaspace;
    size_t begin = 0;
    for (size_t at = t.find(kMeta, 1); at != std::string_view::npos; at = t.find(kMeta, at + kMeta.size())) {
      if (at >= kMeta.size() && t.substr(at - kMeta.size(), kMeta.size()) == kMeta) continue;
      EncodePiece(t.substr(begin, at - begin), out);
      begin = at;
    }
    EncodePiece(t.substr(begin), out);
    return;
  }
  pipeline_->PreTokenize(t, at_start, &pre_);
  for (size_t k = 0; k < pre_.words.size(); ++k) {
    const uint32_t frozen = tok_.has_frozen_words() ? tok_.FrozenWordId(pre_.word(k)) : kNoId;
    if (frozen != kNoId) {
      out->push_back(frozen);
    } else {
      EncodePiece(pre_.word(k), out);
    }
  }
}

size_t Encoder::ByteIds(std::string_view piece, uint32_t* ids) const {
  size_t m = 0;
  for (char c : piece) {
    ids[m] = tok_.ByteId(static_cast<uint8_t>(c));
    m += ids[m] != kNoId;  // a byte that never occurs in UTF-8 and that the vocabulary lacks (Tokenizer::ByteId)
  }
  return m;
}

size_t Encoder::CharIds(std::string_view piece, uint32_t* ids) const {
  const uint32_t unk = tok_.unk_id();
  const bool fuse = tok_.fuse_unk();
  size_t m = 0;
  bool prev_unk = false;
  for (size_t i = 0; i < piece.size();) {
    const size_t len = DecodeUtf8At(piece, i).len;
    uint32_t id = len == 1 ? tok_.ByteId(static_cast<uint8_t>(piece[i])) : tok_.TokenId(piece.substr(i, len));
    if (id == kNoId && len > 1) {
      bool all = tok_.byte_fallback();
      for (size_t k = 0; k < len && all; ++k) all = tok_.fallback_id(static_cast<uint8_t>(piece[i + k])) != kNoId;
      if (all) {
        for (size_t k = 0; k < len; ++k) ids[m++] = tok_.fallback_id(static_cast<uint8_t>(piece[i + k]));
        prev_unk = false;
        i += len;
        continue;
      }
      id = unk;
    }
    i += len;
    if (id == kNoId) continue;  // no unk token: Hugging Face drops the character
    if (id == unk && fuse && prev_unk) continue;
    ids[m++] = id;
    prev_unk = id == unk;
  }
  return m;
}

size_t Encoder::AffixIds(std::string_view piece, uint32_t* ids) {
  const uint32_t unk = tok_.unk_id();
  size_t m = 0;
  bool prev_unk = false;
  for (size_t i = 0; i < piece.size();) {
    const size_t len = char_level_ ? DecodeUtf8At(piece, i).len : 1;
    affix_buf_.clear();
    if (i > 0) affix_buf_ += tok_.subword_prefix();
    affix_buf_.append(piece.substr(i, len));
    i += len;
    if (i == piece.size()) affix_buf_ += tok_.subword_suffix();
    uint32_t id = tok_.TokenId(affix_buf_);
    if (id == kNoId && tok_.byte_fallback()) {
      // Hugging Face falls back to the bytes of the affixed symbol, prefix and suffix included.
      bool all = true;
      for (size_t k = 0; k < affix_buf_.size() && all; ++k)
        all = tok_.fallback_id(static_cast<uint8_t>(affix_buf_[k])) != kNoId;
      if (all) {
        for (char c : affix_buf_) ids[m++] = tok_.fallback_id(static_cast<uint8_t>(c));
        prev_unk = false;
        continue;
      }
    }
    if (id == kNoId) id = unk;
    if (id == kNoId) continue;  // no unk token: Hugging Face drops the symbol
    if (id == unk && tok_.fuse_unk() && prev_unk) continue;
    ids[m++] = id;
    prev_unk = id == unk;
  }
  return m;
}

template <typename To>
void Encoder::AppendVia(std::string_view piece, std::vector<uint32_t>* out, To to) {
  const size_t used = out->size();
  out->resize(used + piece.size() * ids_per_byte_ + kOutSlack);
  out->resize(static_cast<size_t>((this->*to)(piece, out->data() + used) - out->data()));
}

void Encoder::EncodePiece(std::string_view piece, std::vector<uint32_t>* out) {
  if (piece.empty()) return;
  AppendVia(piece, out, &Encoder::EncodePieceTo);
}
void Encoder::MergeFlat(std::string_view piece, std::vector<uint32_t>* out) {
  AppendVia(piece, out, &Encoder::MergeFlatTo);
}
void Encoder::MergeHeap(std::string_view piece, std::vector<uint32_t>* out) {
  AppendVia(piece, out, &Encoder::MergeHeapTo);
}

inline uint32_t* Encoder::EncodePieceTo(std::string_view piece, uint32_t* w) {
  const size_t len = piece.size();
  if (affixes_ && len == 1) return MergeFlatTo(piece, w);  // the character takes its suffix
  if (len == 1) {
    *w = tok_.ByteId(static_cast<uint8_t>(piece[0]));
    return w + (*w != kNoId);  // kNoId: a char-level tokenizer without the character, unk or fallback
  }
  if (len > kPieceMaxBytes) return EncodeUncached(piece, w);
  PieceKey key;
  MakeKey(piece.data(), len, &key);
  return EncodeKeyed(piece, key, w);
}

inline void Encoder::MakeKey(const char* p, size_t len, PieceKey* key) {
  uint64_t k0, k1 = 0;
  if (len <= 8) {
    k0 = detail::LoadUpTo8(p, len);
  } else {
    std::memcpy(&k0, p, 8);
    k1 = detail::LoadUpTo8(p + 8, len - 8);
  }
  const uint64_t h = ((k0 ^ (k1 * 0x9E3779B97F4A7C15ull)) + len) * 0xBF58476D1CE4E5B9ull;
  key->k0 = k0;
  key->k1 = k1;
  key->set = piece_cache_[(h >> 40) & piece_mask_].way;
}

inline uint32_t* Encoder::EncodeKeyed(std::string_view piece, const PieceKey& key, uint32_t* w) {
  const size_t len = piece.size();
  const uint64_t k0 = key.k0, k1 = key.k1;
  PieceEntry* set = key.set;
  // Two ways: the most recently used entry of a set first.
  if (!(set[0].k0 == k0 && set[0].k1 == k1 && set[0].len == len)) {
    if (set[1].k0 == k0 && set[1].k1 == k1 && set[1].len == len) {
      std::swap(set[0], set[1]);
    } else {
      uint32_t* end = EncodeUncached(piece, w);
      const size_t nids = static_cast<size_t>(end - w);
      if (nids <= kPieceIds) {
        set[1] = set[0];
        PieceEntry& e = set[0];
        e.k0 = k0;
        e.k1 = k1;
        e.len = static_cast<uint8_t>(len);
        e.nids = static_cast<uint8_t>(nids);
        for (size_t i = 0; i < nids; ++i) e.ids[i] = w[i];
      }
      return end;
    }
  }
  static_assert(kPieceIds <= kOutSlack);
  w[0] = set[0].ids[0];
  w[1] = set[0].ids[1];
  w[2] = set[0].ids[2];
  return w + set[0].nids;
}

uint32_t* Encoder::EncodeUncached(std::string_view piece, uint32_t* w) {
  if (shortcut_) {
    const uint32_t id = tok_.TokenId(piece);
    if (id != kNoId) {
      *w = id;
      return w + 1;
    }
  }
  const size_t len = piece.size();
  if (len > kCacheKeyBytes) {
    static_assert(kLongMaxBytes > kFlatMaxBytes);
    if (len > kLongMaxBytes) return MergeHeapTo(piece, w);
    const uint64_t hash = detail::HashBytes(piece.data(), len);
    LongEntry& e = long_cache_[hash & (kLongSlots - 1)];
    if (e.hash == hash && e.key == piece) {
      std::memcpy(w, e.ids.data(), e.ids.size() * sizeof(uint32_t));
      return w + e.ids.size();
    }
    uint32_t* end = len > kFlatMaxBytes ? MergeHeapTo(piece, w) : MergeFlatTo(piece, w);
    e.hash = hash;
    e.key.assign(piece);
    e.ids.assign(w, end);
    return end;
  }
  const uint64_t hash = detail::HashBytes(piece.data(), len);
  if (CacheLookup(piece, hash, &w)) return w;
  uint32_t* end = MergeFlatTo(piece, w);
  // Short results live in piece_cache_ (its caller stores them).
  const size_t nids = static_cast<size_t>(end - w);
  if (len > kPieceMaxBytes || nids > kPieceIds) CacheStore(piece, hash, w, nids);
  return end;
}

bool Encoder::CacheLookup(std::string_view piece, uint64_t hash, uint32_t** w) const {
  const CacheEntry& e = cache_[hash & cache_mask_];
  if (e.len != piece.size() || e.hash != hash || std::memcmp(e.key, piece.data(), piece.size()) != 0) return false;
  for (size_t i = 0; i < e.nids; ++i) (*w)[i] = e.ids[i];
  *w += e.nids;
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

inline size_t Encoder::PairSlot(uint64_t key) {
  return static_cast<size_t>(((key * 0x9E3779B97F4A7C15ull) >> 52) & (kPairSlots - 1));
}

inline uint64_t Encoder::PairRank(uint32_t left, uint32_t right) {
  const uint64_t key = (uint64_t{left} << 32) | right;
  PairEntry& e = pair_cache_[PairSlot(key)];
  if (e.key != key) {
    e.key = key;
    e.packed = tok_.Merge(left, right);
  }
  return e.packed;
}

inline void Encoder::PrefetchPair(uint32_t left, uint32_t right) const {
  const uint64_t key = (uint64_t{left} << 32) | right;
  if (pair_cache_[PairSlot(key)].key != key) tok_.PrefetchMerge(left, right);
}

uint32_t* Encoder::MergeFlatTo(std::string_view piece, uint32_t* w) {
  size_t m = piece.size() * ids_per_byte_;
  if (ids_.size() < m) ids_.resize(m);
  if (ranks_.size() < m) ranks_.resize(m);
  uint32_t* ids = ids_.data();
  uint64_t* ranks = ranks_.data();
  if (affixes_) {
    m = AffixIds(piece, ids);
  } else if (char_level_) {
    m = CharIds(piece, ids);
  } else {
    m = ByteIds(piece, ids);
  }
  for (size_t i = 0; i + 1 < m; ++i) ranks[i] = PairRank(ids[i], ids[i + 1]);
  while (m > 1) {
    // The lowest rank, leftmost first; the rank alone decides (SentencePiece models give several rules one rank).
    uint64_t best = kNoPair;
    size_t at = 0;
    for (size_t i = 0; i + 1 < m; ++i) {
      if ((ranks[i] >> 32) < (best >> 32)) {
        best = ranks[i];
        at = i;
      }
    }
    if (best == kNoPair) break;
    ids[at] = static_cast<uint32_t>(best);
    // The two pairs to look up next are most likely misses in the tokenizer's table: start both loads now, so that
    // they overlap with each other and with the copies below.
    if (at + 2 < m) PrefetchPair(ids[at], ids[at + 2]);
    if (at > 0) PrefetchPair(ids[at - 1], ids[at]);
    // Remove ids[at + 1] and the pair (at + 1, at + 2); the pairs touching `at` are recomputed.
    // Plain loops: the arrays are a few elements long and a libc call costs more than the copy.
    for (size_t i = at + 1; i + 1 < m; ++i) ids[i] = ids[i + 1];
    for (size_t i = at + 1; i + 2 < m; ++i) ranks[i] = ranks[i + 1];
    --m;
    if (at + 1 < m) ranks[at] = PairRank(ids[at], ids[at + 1]);
    if (at > 0) ranks[at - 1] = PairRank(ids[at - 1], ids[at]);
  }
  for (size_t i = 0; i < m; ++i) w[i] = ids[i];
  return w + m;
}

uint32_t* Encoder::MergeHeapTo(std::string_view piece, uint32_t* w) {
  size_t n = piece.size() * ids_per_byte_;
  constexpr uint32_t kEnd = 0xFFFFFFFFu;
  ids_.resize(n);
  next_.resize(n);
  prev_.resize(n);
  heap_.clear();
  if (affixes_) {
    n = AffixIds(piece, ids_.data());
  } else if (char_level_) {
    n = CharIds(piece, ids_.data());
  } else {
    n = ByteIds(piece, ids_.data());
  }
  for (size_t i = 0; i < n; ++i) {
    next_[i] = i + 1 < n ? static_cast<uint32_t>(i + 1) : kEnd;
    prev_[i] = i > 0 ? static_cast<uint32_t>(i - 1) : kEnd;
  }
  // Min-heap on (rank, position): the lowest rank, leftmost first, exactly as the flat scan.
  auto greater = [](const std::pair<uint64_t, uint32_t>& a, const std::pair<uint64_t, uint32_t>& b) { return a > b; };
  auto push = [&](uint32_t pos) {
    uint32_t nx = next_[pos];
    if (nx == kEnd) return;
    uint64_t r = tok_.Merge(ids_[pos], ids_[nx]);
    if (r == kNoPair) return;
    heap_.emplace_back(r >> 32, pos);
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
    if (nx == kEnd) continue;
    const uint64_t packed = tok_.Merge(ids_[pos], ids_[nx]);
    if (packed == kNoPair || (packed >> 32) != r) continue;
    ids_[pos] = static_cast<uint32_t>(packed);
    ids_[nx] = kNoId;
    next_[pos] = next_[nx];
    if (next_[nx] != kEnd) prev_[next_[nx]] = pos;
    push(pos);
    if (prev_[pos] != kEnd) push(prev_[pos]);
  }
  for (uint32_t i = 0; i != kEnd && n > 0; i = next_[i]) *w++ = ids_[i];
  return w;
}

}  // namespace lmkit::bpe
