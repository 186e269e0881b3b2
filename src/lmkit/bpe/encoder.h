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
#include <string_view>
#include <utility>
#include <vector>

#include "lmkit/bpe/special_policy.h"
#include "lmkit/bpe/tokenizer.h"

namespace lmkit::bpe {

class Encoder {
 public:
  // `cache_slots` (a power of two) sizes the cache of merged pieces, 64 bytes a slot. Matches every special of the
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
  bool CacheLookup(std::string_view piece, uint64_t hash, std::vector<uint32_t>* out) const;
  void CacheStore(std::string_view piece, uint64_t hash, const uint32_t* ids, size_t n);

  const Tokenizer& tok_;
  SpecialRules own_rules_;
  const SpecialRules* rules_ = nullptr;
  PretokPattern pattern_;
  bool shortcut_;
  std::vector<uint32_t> ids_;
  std::vector<uint64_t> ranks_;
  std::vector<uint32_t> next_, prev_;
  std::vector<std::pair<uint64_t, uint32_t>> heap_;

  // A direct-mapped cache of recent pieces that needed merging (whole-token pieces never reach it). On 10 MB of
  // debmix, 17.5% of pieces need merging and ~78% of those hit here (4,096 slots: 77%, 16,384: 80%; 512 KB/thread).
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

  // Recent whole-token pieces of up to 8 bytes: bytes packed in `key`, checked together with `len`.
  static constexpr size_t kHotSlots = 8192;
  struct HotEntry {
    uint64_t key = 0;
    uint32_t len = 0;  // 0 = empty
    uint32_t id = 0;
  };
  std::vector<HotEntry> hot_;
};

}  // namespace lmkit::bpe
