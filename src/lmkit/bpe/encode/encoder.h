// Encoding text into token ids, one text at a time: per pre-token BPE, exactly tiktoken's.
//
// Contract: an Encoder is cheap to make, used by one thread at a time, and shares the immutable Tokenizer (which
// must outlive it).
// - Encode(text) finds the allowed special tokens (special_policy.h; by default all of the tokenizer's: leftmost
//   occurrence first, among those starting at one byte the longest), encodes the text between them with
//   EncodeOrdinary and emits each special's id. It does not look for disallowed specials: callers that have any ask
//   SpecialRules::FindDisallowed first (EncodeStream does).
// - EncodeOrdinary cuts text into pre-tokens (pretokenizer.h, the tokenizer's pattern) and encodes each with
//   EncodePiece: a one-byte piece is its byte token; with the whole-piece shortcut a piece that is a token is that
//   token; otherwise the lowest-ranked adjacent pair is merged, leftmost first, until no rule applies.
// - Any bytes are accepted: byte-level BPE encodes invalid UTF-8 losslessly (decode gives the same bytes back); how
//   the pre-tokenizer groups such bytes is documented in docs/bpe-encoding.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lmkit/bpe/encode/special_policy.h"
#include "lmkit/bpe/tokenizer.h"

namespace lmkit::bpe {

class Encoder {
 public:
  // `cache_slots` (a power of two) sizes the caches of pieces: that many 64-byte slots for merged pieces and 16
  // times as many 32-byte slots for short ones (4.5 MB per encoder at the default). Matches every special of the
  // tokenizer until set_special_rules says otherwise.
  explicit Encoder(const Tokenizer& tokenizer, size_t cache_slots = kCacheSlots);

  // The special-token rules Encode follows: `rules` (not owned; it must outlive their use), or with nullptr the
  // tokenizer's own (all allowed).
  void set_special_rules(const SpecialRules* rules) { rules_ = rules; }
  const SpecialRules& special_rules() const { return rules_ != nullptr ? *rules_ : own_rules_; }

  void Encode(std::string_view text, std::vector<uint32_t>* out);
  void EncodeOrdinary(std::string_view text, std::vector<uint32_t>* out);
  void EncodePiece(std::string_view piece, std::vector<uint32_t>* out);

  // The two merge loops, exposed so tests can hold them to each other: a flat vector scanned for the minimum
  // (fast for short pieces) and a heap over a linked list (O(n log n) for long ones). Both ignore the shortcut.
  void MergeFlat(std::string_view piece, std::vector<uint32_t>* out);
  void MergeHeap(std::string_view piece, std::vector<uint32_t>* out);

  // Pieces longer than this use MergeHeap.
  static constexpr size_t kFlatMaxBytes = 256;
  // Default size of the merged-piece cache; EncodeStream uses fewer slots with many threads.
  static constexpr size_t kCacheSlots = 8192;

 private:
  // The internal loops write ids through a pointer into a buffer that has room for them: a piece of n bytes never
  // yields more than n ids (n * ids_per_byte_ with subword affixes, whose tokenizers always have a pipeline and so
  // never reach EncodeOrdinaryAs), and writers may store up to kOutSlack ids past the ones they report.
  static constexpr size_t kOutSlack = 4;
  // Runs `to` (one of the ...To loops) into room appended to *out, then trims *out to the ids it wrote.
  template <typename To>
  void AppendVia(std::string_view piece, std::vector<uint32_t>* out, To to);
  // EncodeOrdinary writes ids here and appends them to its output in blocks: the block stays in L1, and the output
  // vector is neither checked per id nor zeroed ahead (as resize would).
  static constexpr size_t kScratchIds = 4096;
  std::vector<uint32_t> scratch_;
  template <PretokPattern P>
  void EncodeOrdinaryAs(std::string_view text, std::vector<uint32_t>* out);
  // The tokenizer.json path (tokenizer.pipeline() or added-token flags): added tokens with their flags, then per
  // segment the normalizer, the pre-tokenizer and the model. `at_start`: the segment starts the input.
  void EncodeHf(std::string_view text, std::vector<uint32_t>* out);
  void EncodeSegment(std::string_view text, bool at_start, std::vector<uint32_t>* out);
  void EncodeValidSegment(std::string_view text, bool at_start, std::vector<uint32_t>* out);
  // A char-level tokenizer's first symbols of `piece` (tokenizer.h set_char_level); returns their count.
  size_t CharIds(std::string_view piece, uint32_t* ids) const;
  // A byte-level tokenizer's byte tokens of `piece`, without the bytes it has none for; returns their count.
  size_t ByteIds(std::string_view piece, uint32_t* ids) const;
  // The first symbols with the tokenizer's subword prefix and suffix (Tokenizer::set_subword_affixes); at most
  // piece.size() * tok_.max_ids_per_byte() of them.
  size_t AffixIds(std::string_view piece, uint32_t* ids);
  std::string affix_buf_;
  // Each returns the end of the ids it wrote at `w`.
  uint32_t* EncodePieceTo(std::string_view piece, uint32_t* w);
  struct PieceKey;
  void MakeKey(const char* p, size_t len, PieceKey* key);  // 2 <= len <= kPieceMaxBytes
  uint32_t* EncodeKeyed(std::string_view piece, const PieceKey& key, uint32_t* w);
  uint32_t* EncodeUncached(std::string_view piece, uint32_t* w);
  uint32_t* MergeFlatTo(std::string_view piece, uint32_t* w);
  uint32_t* MergeHeapTo(std::string_view piece, uint32_t* w);
  bool CacheLookup(std::string_view piece, uint64_t hash, uint32_t** w) const;
  void CacheStore(std::string_view piece, uint64_t hash, const uint32_t* ids, size_t n);

  // tok_.Merge through a small direct-mapped cache of recent pairs (the tokenizer's pair table is megabytes).
  uint64_t PairRank(uint32_t left, uint32_t right);
  void PrefetchPair(uint32_t left, uint32_t right) const;
  static size_t PairSlot(uint64_t key);  // the pair cache's slot of an id pair (left << 32 | right)
  static constexpr size_t kPairSlots = 4096;
  struct PairEntry {
    uint64_t key = ~uint64_t{0};  // (left << 32) | right; no pair of valid ids has this key
    uint64_t packed = kNoPair;
  };
  std::vector<PairEntry> pair_cache_;

  const Tokenizer& tok_;
  const Pipeline* pipeline_;
  bool char_level_;
  bool affixes_;
  size_t ids_per_byte_;  // tok_.max_ids_per_byte()
  std::string norm_;
  PreTokenized pre_;
  SpecialRules own_rules_;
  const SpecialRules* rules_ = nullptr;
  PretokPattern pattern_;
  bool shortcut_;
  bool split_meta_;  // cut a character-level segment before each "▁" (encoder.cpp SplitsBeforeMetaspace)
  std::vector<uint32_t> ids_;
  std::vector<uint64_t> ranks_;
  std::vector<uint32_t> next_, prev_;
  std::vector<std::pair<uint64_t, uint32_t>> heap_;

  // Recent pieces of 2 to 16 bytes (nearly all pre-tokens), whole tokens or merged, with their up to three ids: the
  // bytes packed in two words are the key, checked together with `len`. Two-way set associative, most recent first.
  // A miss costs a look-up in the tokenizer's tables (megabytes, a cache miss each) and often a merge, ~270 ns on
  // the benchmark VM, so this cache is sized for hits (4 MB by default) rather than for L2.
  static constexpr size_t kPieceMaxBytes = 16;
  static constexpr size_t kPieceIds = 3;
  struct PieceEntry {
    uint64_t k0 = 0, k1 = 0;
    uint8_t len = 0;  // 0 = empty
    uint8_t nids = 0;
    uint32_t ids[kPieceIds] = {};
  };
  static_assert(sizeof(PieceEntry) == 32);
  // A set is one cache line.
  struct alignas(64) PieceSet {
    PieceEntry way[2];
  };
  // A piece's key and its two-way set in piece_cache_.
  struct PieceKey {
    uint64_t k0, k1;
    PieceEntry* set;
  };
  size_t piece_mask_;
  std::vector<PieceSet> piece_cache_;

  // A direct-mapped cache of pieces that needed merging and do not fit piece_cache_ (longer, or more ids).
  size_t cache_mask_;
  static constexpr size_t kCacheKeyBytes = 22;
  static constexpr size_t kCacheIds = 7;
  struct CacheEntry {
    uint64_t hash = 0;
    uint8_t len = 0;  // 0 = empty
    uint8_t nids = 0;
    char key[kCacheKeyBytes];
    uint32_t ids[kCacheIds];
  };
  std::vector<CacheEntry> cache_;

  // Pieces too long for cache_ (rules of '=' or '-', indentation): few distinct ones, each costly to merge (the flat
  // loop is quadratic). On 8 MB of debmix, 4,934 such pieces needing a merge are 463 distinct ones.
  static constexpr size_t kLongSlots = 256;
  static constexpr size_t kLongMaxBytes = 512;
  struct LongEntry {
    uint64_t hash = 0;
    std::string key;  // empty = empty slot
    std::vector<uint32_t> ids;
  };
  std::vector<LongEntry> long_cache_;
};

}  // namespace lmkit::bpe
