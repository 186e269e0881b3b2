// A loaded byte-level BPE tokenizer: ordinary tokens (byte strings ⇄ ids), merge rules, special tokens and the
// pre-tokenization pattern. The readers in tokenizer_files.h fill it; encoder.h and decoder.h use it.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/bpe/pretokenize/hf_pipeline.h"
#include "lmkit/bpe/pretokenize/pretokenizer.h"
#include "lmkit/bpe/pretokenize/special_tokens.h"
#include "lmkit/common/status.h"

namespace lmkit::bpe {

inline constexpr uint32_t kNoId = 0xFFFFFFFFu;
// The largest token id a tokenizer may use. Ids index dense tables (a file naming id 2^31 would otherwise ask for
// 16 GB); real vocabularies stay under 1 M (o200k: 200 k, Gemma 3: 262 k).
inline constexpr uint32_t kMaxTokenId = (1u << 24) - 1;
// A pair lookup result packed as (rank << 32) | result_id, so that comparing packed values compares ranks first.
inline constexpr uint64_t kNoPair = ~uint64_t{0};

namespace detail {
__extension__ typedef unsigned __int128 U128;
inline uint64_t Mum(uint64_t a, uint64_t b) {
  U128 r = static_cast<U128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}
// The first n <= 8 bytes of p, little-endian, zero-padded, without reading past p + n and without a call to a
// variable-length memcpy (two overlapping fixed-size loads).
inline uint64_t LoadUpTo8(const char* p, size_t n) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  if (n >= 4) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    return uint64_t{lo} | (uint64_t{hi} << (8 * (n - 4)));
  }
  if (n == 0) return 0;
  return uint64_t{u[0]} | (uint64_t{u[n / 2]} << (8 * (n / 2))) | (uint64_t{u[n - 1]} << (8 * (n - 1)));
}

// A fast non-cryptographic hash for short byte strings (most pre-tokens are under 16 bytes).
inline uint64_t HashBytes(const char* p, size_t n) {
  constexpr uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull, k2 = 0x8ebc6af09c88c6e3ull;
  uint64_t a = 0, b = 0;
  if (n <= 8) return Mum(LoadUpTo8(p, n) ^ k0, n ^ k1);
  if (n <= 16) {
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + n - 8, 8);
    return Mum(a ^ k0, b ^ k1 ^ n);
  }
  uint64_t h = n ^ k2;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    std::memcpy(&a, p + i, 8);
    std::memcpy(&b, p + i + 8, 8);
    h = Mum(a ^ k0 ^ h, b ^ k1);
  }
  std::memcpy(&a, p + n - 16, 8);
  std::memcpy(&b, p + n - 8, 8);
  return Mum(a ^ k2 ^ h, b ^ k0);
}

// The maps' Bloom filter: 8 bits per table slot; a key's hash times a constant picks one 64-bit word (its top bits)
// and two bits in it, so a key that is surely absent costs one load from a small, cached array.
class SlotFilter {
 public:
  explicit SlotFilter(size_t slots = 0) { Reset(slots); }
  // Empties the filter and sizes it for a table of `slots` slots (0, or a power of two of at least 8).
  void Reset(size_t slots) {
    words_.assign(slots / 8, 0);
    shift_ = words_.empty() ? 64 : 64 - static_cast<unsigned>(std::countr_zero(words_.size()));
  }
  void Add(uint64_t h) { words_[Word(h)] |= Bits(h); }
  // False: no key with hash h was added. True: perhaps one was.
  bool MayContain(uint64_t h) const { return (words_[Word(h)] & Bits(h)) == Bits(h); }
  void Prefetch(uint64_t h) const { __builtin_prefetch(&words_[Word(h)]); }

 private:
  static constexpr uint64_t kMul = 0xD6E8FEB86659FD93ull;
  size_t Word(uint64_t h) const { return static_cast<size_t>((h * kMul) >> shift_); }
  static uint64_t Bits(uint64_t h) {
    const uint64_t f = h * kMul;
    return (uint64_t{1} << ((f >> 8) & 63)) | (uint64_t{1} << ((f >> 14) & 63));
  }
  std::vector<uint64_t> words_;
  unsigned shift_ = 64;
};
}  // namespace detail

// Open-addressing hash map from byte strings (kept in one arena) to ids, with a Bloom filter in front (as PairMap's:
// an encoder's misses are as often pieces that are not tokens, answered without a miss on the table). Not
// thread-safe for writes; concurrent Find() calls are fine.
class BytesIdMap {
 public:
  // False when `key` is already present (the map is unchanged).
  bool Insert(std::string_view key, uint32_t id);
  uint32_t Find(std::string_view key) const {
    if (slots_.empty()) return kNoId;
    return FindHashed(key, detail::HashBytes(key.data(), key.size()));
  }
  // Find with h = detail::HashBytes(key): a caller that hashes several keys first can Prefetch them all.
  uint32_t FindHashed(std::string_view key, uint64_t h) const {
    if (slots_.empty()) return kNoId;
    const size_t n = key.size();
    const uint64_t prefix = detail::LoadUpTo8(key.data(), n < 8 ? n : 8);
    if (!filter_.MayContain(h)) return kNoId;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id == kNoId) return kNoId;
      // The first 8 bytes live in the slot, so keys of up to 8 bytes (most pre-tokens) never touch the arena.
      if (s.hash == h && s.len == n && s.prefix == prefix &&
          (n <= 8 || std::memcmp(arena_.data() + s.offset + 8, key.data() + 8, n - 8) == 0))
        return s.id;
    }
  }
  // A hint that FindHashed(key, h) comes soon (starts loading its filter word and first slot); needs a non-empty map.
  void Prefetch(uint64_t h) const {
    if (slots_.empty()) return;
    filter_.Prefetch(h);
    __builtin_prefetch(&slots_[h & mask_]);
  }
  void Reserve(size_t count);
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint64_t prefix = 0;
    uint32_t offset = 0;
    uint32_t len = 0;
    uint32_t id = kNoId;
  };
  void Grow();
  void Rehash(size_t cap);  // cap: a power of two above twice the size
  std::vector<Slot> slots_;
  std::string arena_;
  size_t mask_ = 0;
  size_t size_ = 0;
  detail::SlotFilter filter_;  // sized with slots_
};

// Open-addressing hash map from an id pair to a packed (rank, result) value, with a Bloom filter in front: most pairs
// an encoder asks for have no rule, and the filter (8 bits per slot, two bits per pair in one word; a few percent
// false positives) answers them from cache instead of a miss on the table.
class PairMap {
 public:
  void Reserve(size_t count);
  // Keeps the lower rank when the pair is already present.
  void Insert(uint32_t left, uint32_t right, uint64_t packed);
  // Insert of every {(left << 32) | right, packed}, sized once and with the slots loaded ahead (a table larger than
  // the caches costs one miss per rule otherwise).
  void InsertMany(const std::vector<std::pair<uint64_t, uint64_t>>& rules);
  uint64_t Find(uint32_t left, uint32_t right) const {
    const uint64_t key = (uint64_t{left} << 32) | right;
    if (!filter_.MayContain(key)) return kNoPair;
    for (size_t i = Index(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return s.value;
      if (s.key == kEmpty) return kNoPair;
    }
  }
  // Starts loading what Find(left, right) reads first (filter word and slot); a hint only.
  void Prefetch(uint32_t left, uint32_t right) const {
    const uint64_t key = (uint64_t{left} << 32) | right;
    filter_.Prefetch(key);
    __builtin_prefetch(&slots_[Index(key)]);
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    uint64_t value = kNoPair;
  };
  size_t Index(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  void Grow();
  void Rehash(size_t cap);  // cap: a power of two
  std::vector<Slot> slots_ = std::vector<Slot>(16);
  size_t mask_ = 15;
  unsigned shift_ = 60;
  size_t size_ = 0;
  detail::SlotFilter filter_{16};  // sized with slots_
};

struct SpecialToken {
  std::string text;
  uint32_t id = kNoId;
};

// Built by one thread (the Add* calls, then Finish); after Finish() immutable and safe to share between threads.
class Tokenizer {
 public:
  // ---- building (tokenizer_files.cpp, tests) ----
  void ReserveTokens(size_t count);
  // An ordinary token. Every one of the 256 single bytes must be one (byte-level BPE then encodes any input); ids need
  // not be dense. Errors: kInvalidInput when the bytes or the id is already an ordinary token, or the id is too large.
  Status AddToken(std::string_view bytes, uint32_t id);
  // The rule (left, right) → result with `rank`; the encoder applies the lowest-ranked pair, leftmost first.
  // Merges-based files add their list as is (rank = line). Errors: kInvalidInput when an id is not an ordinary token
  // or result is not left + right (less right's subword prefix, set_subword_affixes).
  Status AddMerge(uint32_t left, uint32_t right, uint32_t rank, uint32_t result);
  // Sizes the merge table for `count` rules in all (one allocation instead of doublings).
  void ReserveMerges(size_t count) { merges_.Reserve(count); }
  // For rank files, which carry no merges: for every token t and every cut t = x + y with x, y tokens, the rule
  // (x, y) → t ranked id(t) — exactly tiktoken's "merge the adjacent pair whose concatenation has the lowest rank".
  void AddAllSplitsAsMerges();
  // A special token defined by the file; `enabled` makes it one of enabled_specials(). Errors: empty text, a text
  // defined twice, an id too large.
  Status AddSpecial(std::string text, uint32_t id, bool enabled);
  // Enables a known special, or promotes an ordinary token (e.g. "<|endoftext|>" of a GPT-2 vocab.json) to one.
  // Errors: kNotFound (names the token) otherwise.
  Status EnableSpecial(std::string_view text);
  void set_pattern(PretokPattern p) { pattern_ = p; }
  // When on (tiktoken files), a pre-token that is itself a token encodes to that token without merging, as tiktoken
  // does. Merges-based files keep it off unless they ask for it (HF `ignore_merges`): their merge list alone defines
  // the result.
  void set_whole_piece_shortcut(bool on) { shortcut_ = on; }
  void set_description(std::string d) { description_ = std::move(d); }

  // ---- Hugging Face tokenizer.json models (tokenizer_json.cpp) ----
  // The normalizer and pre-tokenizer the encoder runs instead of `pattern` (null: the pattern alone).
  void set_pipeline(std::shared_ptr<const Pipeline> p) { pipeline_ = std::move(p); }
  // Character-level BPE (SentencePiece-style vocabularies, tokens are UTF-8 text): a word starts as its characters
  // (a character that is no token: its <0xXX> byte tokens with byte_fallback, else `unk`, consecutive unks fused with
  // fuse_unk, else dropped), not as its bytes. Then the bytes need not all be tokens.
  void set_char_level(bool byte_fallback, uint32_t unk, bool fuse_unk) {
    char_level_ = true;
    byte_fallback_ = byte_fallback;
    unk_ = unk;
    fuse_unk_ = fuse_unk;
  }
  // Hugging Face BPE's continuing_subword_prefix / end_of_word_suffix (set before the merges): a word's first
  // symbols are its characters (bytes when byte-level), each but the first looked up with `prefix` before it, the last
  // with `suffix` after it; a merge (a, b) makes a + b less b's first prefix.size() bytes. `unk` (kNoId: none) stands
  // for a symbol that is no token, fused when fuse_unk.
  void set_subword_affixes(std::string prefix, std::string suffix, uint32_t unk, bool fuse_unk) {
    prefix_ = std::move(prefix);
    suffix_ = std::move(suffix);
    unk_ = unk;
    fuse_unk_ = fuse_unk;
  }
  // A word the pre-tokenizer isolates that encodes to `id` as a whole, never merged (SentencePiece's user-defined
  // pieces). Errors: kInvalidInput when the word is one already.
  Status AddFrozenWord(std::string_view word, uint32_t id) {
    if (!frozen_.Insert(word, id)) return Status::InvalidInput("", "word " + std::string(word) + " is frozen twice");
    return Status::Ok();
  }
  bool has_frozen_words() const { return frozen_.size() > 0; }
  uint32_t FrozenWordId(std::string_view word) const { return frozen_.Find(word); }
  bool has_affixes() const { return !prefix_.empty() || !suffix_.empty(); }
  const std::string& subword_prefix() const { return prefix_; }
  const std::string& subword_suffix() const { return suffix_; }
  // The most ids one input byte can give (a character's byte fallback includes its prefix and suffix bytes).
  size_t max_ids_per_byte() const { return 1 + prefix_.size() + suffix_.size(); }
  // The byte-fallback token <0xXX> of byte b: decodes to that byte, never looked up as text. Errors as AddToken's.
  Status AddByteFallback(uint8_t b, uint32_t id);
  // An added token's matching rules (Hugging Face's AddedToken): whitespace before (lstrip) or after (rstrip) joins
  // the match; single_word matches only between non-word characters.
  struct AddedFlags {
    bool lstrip = false, rstrip = false, single_word = false;
  };
  void set_added_flags(uint32_t id, AddedFlags f);
  // How decoding rewrites token text (Hugging Face's decoders): `metaspace` (e.g. "▁") becomes ' ', except in the
  // first token, where metaspace_drop_first drops it (Metaspace decoder); up to strip_leading spaces at the very start
  // of the output are removed (Fuse + Strip); fallback_as_text writes a byte-fallback token as its "<0xXX>" text (no
  // ByteFallback decoder). A non-empty decode_error makes decoding fail with it.
  struct DecodeRules {
    std::string metaspace;
    bool metaspace_drop_first = false;
    size_t strip_leading = 0;
    bool fallback_as_text = false;
    bool byte_fallback_decoder = false;
    // SentencePiece's DecodeIds (a .model): a special (CONTROL) piece writes nothing, the unknown piece writes
    // unk_surface, and metaspace_drop_first drops one leading metaspace of the first piece after none but CONTROL
    // ones — with sp_drop_while_empty (remove_extra_whitespaces), of every piece while nothing is written yet.
    bool sentencepiece = false;
    bool sp_drop_while_empty = false;
    std::string unk_surface;
    std::string decode_error;
    bool active() const {
      return !metaspace.empty() || strip_leading > 0 || fallback_as_text || sentencepiece || !decode_error.empty();
    }
  };
  void set_decode_rules(DecodeRules r) { decode_rules_ = std::move(r); }
  // The ids the post-processor adds around one sequence (TemplateProcessing's "single"), for --add-special-tokens.
  void set_template(std::vector<uint32_t> prefix, std::vector<uint32_t> suffix) {
    template_prefix_ = std::move(prefix);
    template_suffix_ = std::move(suffix);
    has_template_ = true;
  }
  // Checks that every byte that can occur in UTF-8 is a token (byte-level) and builds the decode table. Errors:
  // kInvalidInput naming the missing byte, or a special whose id collides with a different ordinary token.
  Status Finish();

  // ---- use ----
  uint32_t ByteId(uint8_t b) const { return byte_ids_[b]; }
  // The id of the ordinary token with exactly these bytes, or kNoId.
  uint32_t TokenId(std::string_view bytes) const { return tokens_.Find(bytes); }
  // TokenId with h = detail::HashBytes(bytes), and a hint that it comes soon (readers batch their look-ups).
  uint32_t TokenIdHashed(std::string_view bytes, uint64_t h) const { return tokens_.FindHashed(bytes, h); }
  void PrefetchToken(uint64_t h) const { tokens_.Prefetch(h); }
  // Packed (rank << 32 | result) of the merge rule for (left, right), or kNoPair.
  uint64_t Merge(uint32_t left, uint32_t right) const { return merges_.Find(left, right); }
  // A hint that Merge(left, right) comes soon (starts loading its slot).
  void PrefetchMerge(uint32_t left, uint32_t right) const { merges_.Prefetch(left, right); }
  // The bytes of an ordinary or special token; false when `id` is unknown.
  bool TokenBytes(uint32_t id, std::string_view* bytes) const {
    if (id >= decode_.size() || decode_[id].len == kNoId) return false;
    *bytes = std::string_view(decode_arena_.data() + decode_[id].offset, decode_[id].len);
    return true;
  }
  uint32_t id_limit() const { return static_cast<uint32_t>(decode_.size()); }
  size_t ordinary_count() const { return tokens_.size(); }
  size_t merge_count() const { return merges_.size(); }
  size_t max_token_bytes() const { return max_token_bytes_; }
  // The specials the file or its metadata defines.
  const std::vector<SpecialToken>& known_specials() const { return known_specials_; }
  // The specials the encoder may match (longest first): the tokenizer's special tokens as special_policy.h sees them.
  const std::vector<SpecialToken>& enabled_specials() const { return enabled_specials_; }
  // Matches enabled_specials() (index i of a match is enabled_specials()[i]).
  const SpecialTokenSplitter& splitter() const { return splitter_; }
  PretokPattern pattern() const { return pattern_; }
  bool whole_piece_shortcut() const { return shortcut_; }
  const std::string& description() const { return description_; }
  const Pipeline* pipeline() const { return pipeline_.get(); }
  bool char_level() const { return char_level_; }
  bool byte_fallback() const { return byte_fallback_; }
  uint32_t fallback_id(uint8_t b) const { return fallback_ids_[b]; }
  // The byte whose fallback token is `id`, or -1.
  int FallbackByteOf(uint32_t id) const {
    for (int b = 0; b < 256 && byte_fallback_; ++b)
      if (fallback_ids_[b] == id) return b;
    return -1;
  }
  uint32_t unk_id() const { return unk_; }
  // An ordinary token (byte-fallback tokens included), not a special one.
  bool is_ordinary(uint32_t id) const { return IsOrdinary(id); }
  bool fuse_unk() const { return fuse_unk_; }
  bool has_added_flags() const { return !added_flags_.empty(); }
  // The flags of added token `id` (all false when none were set).
  AddedFlags added_flags(uint32_t id) const {
    for (const auto& [i, f] : added_flags_)
      if (i == id) return f;
    return {};
  }
  const DecodeRules& decode_rules() const { return decode_rules_; }
  bool has_template() const { return has_template_; }
  const std::vector<uint32_t>& template_prefix() const { return template_prefix_; }
  const std::vector<uint32_t>& template_suffix() const { return template_suffix_; }
  // True when decode(encode(text)) == text for every text (byte-level, no normalizer, no rewriting step, no added
  // token that takes in the whitespace around it).
  bool lossless() const {
    for (const auto& [id, f] : added_flags_)
      if (f.lstrip || f.rstrip) return false;
    return !char_level_ && (pipeline_ == nullptr || pipeline_->lossless());
  }
  // Where pretokenize/cut_rules.h may cut this tokenizer's input into chunks that encode as the whole does: the
  // word-start rules for the three hand-written patterns alone; the newline-letter rule (and the end of an added
  // token) for a byte-level tokenizer.json pipeline that Pipeline::newline_cut_safe accepts, or for added-token
  // flags; only the end of an added token (IsSpecialEndCut) for other pipelines, unless Metaspace's "first" scheme
  // tells the input's start apart (Pipeline::special_end_cut_safe); else nowhere (one piece per input).
  enum class CutRule { kNone, kWordStart, kNewlineLetter, kSpecialEnd };
  CutRule cut_rule() const {
    if (pipeline_ == nullptr && !char_level_)
      return added_flags_.empty() ? CutRule::kWordStart : CutRule::kNewlineLetter;
    if (pipeline_ != nullptr && !char_level_ && pipeline_->newline_cut_safe()) return CutRule::kNewlineLetter;
    return pipeline_ == nullptr || pipeline_->special_end_cut_safe() ? CutRule::kSpecialEnd : CutRule::kNone;
  }

 private:
  struct Span {
    uint32_t offset = 0;
    uint32_t len = kNoId;
  };
  bool IsOrdinary(uint32_t id) const { return id < ordinary_.size() && ordinary_[id].len != kNoId; }
  BytesIdMap tokens_;
  PairMap merges_;
  std::vector<Span> ordinary_;  // id → bytes in token_arena_ (len kNoId: not an ordinary token)
  std::string token_arena_;
  std::vector<SpecialToken> known_specials_;
  std::vector<SpecialToken> enabled_specials_;
  SpecialTokenSplitter splitter_;
  // char-level: the character's token, its fallback, unk, or kNoId (dropped); byte-level: the byte's token, or kNoId
  // (dropped) for a byte that never occurs in UTF-8 and that the vocabulary lacks.
  uint32_t byte_ids_[256];
  std::vector<Span> decode_;
  std::string decode_arena_;
  size_t max_token_bytes_ = 0;
  PretokPattern pattern_ = PretokPattern::kGpt2;
  bool shortcut_ = false;
  std::string description_;
  std::shared_ptr<const Pipeline> pipeline_;
  bool char_level_ = false, byte_fallback_ = false, fuse_unk_ = false;
  uint32_t unk_ = kNoId;
  std::string prefix_, suffix_;
  BytesIdMap frozen_;
  std::vector<uint32_t> fallback_ids_ = std::vector<uint32_t>(256, kNoId);
  std::vector<std::pair<uint32_t, AddedFlags>> added_flags_;
  DecodeRules decode_rules_;
  bool has_template_ = false;
  std::vector<uint32_t> template_prefix_, template_suffix_;
};

}  // namespace lmkit::bpe
