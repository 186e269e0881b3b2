#include "lmkit/bpe/tokenizer.h"

#include <algorithm>
#include <bit>
#include <cstdio>

#include "lmkit/common/json.h"

namespace lmkit::bpe {

namespace {

// A token's bytes for an error message: JSON-quoted, so newlines, quotes and invalid UTF-8 cannot break the one line.
std::string QuotedToken(std::string_view bytes) { return DumpJson(Json(std::string(bytes)), -1); }

}  // namespace

// ---- BytesIdMap ----

bool BytesIdMap::Insert(std::string_view key, uint32_t id) {
  if ((size_ + 1) * 2 > slots_.size()) Grow();
  uint64_t h = detail::HashBytes(key.data(), key.size());
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.id == kNoId) {
      s.hash = h;
      s.prefix = detail::LoadUpTo8(key.data(), key.size() < 8 ? key.size() : 8);
      s.offset = static_cast<uint32_t>(arena_.size());
      s.len = static_cast<uint32_t>(key.size());
      s.id = id;
      arena_.append(key);
      ++size_;
      filter_.Add(h);
      return true;
    }
    if (s.hash == h && s.len == key.size() && std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0)
      return false;
  }
}

void BytesIdMap::Reserve(size_t count) {
  if (slots_.size() >= count * 2) return;
  size_t cap = 1024;
  while (cap < count * 2) cap *= 2;
  Rehash(cap);
}

void BytesIdMap::Grow() { Rehash(slots_.empty() ? 1024 : slots_.size() * 2); }

void BytesIdMap::Rehash(size_t cap) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  filter_.Reset(cap);
  for (const Slot& s : old) {
    if (s.id == kNoId) continue;
    filter_.Add(s.hash);
    size_t i = s.hash & mask_;
    while (slots_[i].id != kNoId) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

// ---- PairMap ----

void PairMap::Insert(uint32_t left, uint32_t right, uint64_t packed) {
  if ((size_ + 1) * 2 > slots_.size()) Grow();
  const uint64_t key = (uint64_t{left} << 32) | right;
  for (size_t i = Index(key);; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) {
      s.value = std::min(s.value, packed);
      return;
    }
    if (s.key == kEmpty) {
      s.key = key;
      s.value = packed;
      ++size_;
      filter_.Add(key);
      return;
    }
  }
}

void PairMap::InsertMany(const std::vector<std::pair<uint64_t, uint64_t>>& rules) {
  Reserve(size_ + rules.size());
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < rules.size(); ++i) {
    if (i + kAhead < rules.size()) {
      const uint64_t k = rules[i + kAhead].first;
      filter_.Prefetch(k);
      __builtin_prefetch(&slots_[Index(k)]);
    }
    Insert(static_cast<uint32_t>(rules[i].first >> 32), static_cast<uint32_t>(rules[i].first), rules[i].second);
  }
}

void PairMap::Reserve(size_t count) {
  // One rehash to the final size: doubling step by step touched twice the memory, and fresh pages cost a fault each
  // (GPT-2's ~100 k pairs: 14 doublings were a quarter of the tokenizer's load time on the benchmark VM).
  size_t cap = slots_.size();
  while (cap < count * 2) cap *= 2;
  if (cap != slots_.size()) Rehash(cap);
}

void PairMap::Grow() { Rehash(slots_.size() * 2); }

void PairMap::Rehash(size_t cap) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  shift_ = 64 - static_cast<unsigned>(std::countr_zero(cap));  // Index takes the top log2(cap) bits of the hash
  filter_.Reset(cap);
  for (const Slot& s : old) {
    if (s.key == kEmpty) continue;
    filter_.Add(s.key);
    for (size_t i = Index(s.key);; i = (i + 1) & mask_) {
      if (slots_[i].key == kEmpty) {
        slots_[i] = s;
        break;
      }
    }
  }
}

// ---- Tokenizer ----

void Tokenizer::ReserveTokens(size_t count) { tokens_.Reserve(count); }

Status Tokenizer::AddByteFallback(uint8_t b, uint32_t id) {
  if (id > kMaxTokenId)
    return Status::InvalidInput(
        "", "token id " + std::to_string(id) + " is above lmkit's limit of " + std::to_string(kMaxTokenId));
  if (IsOrdinary(id)) return Status::InvalidInput("", "token id " + std::to_string(id) + " is defined twice");
  if (fallback_ids_[b] != kNoId)
    return Status::InvalidInput("", "byte-fallback token of byte " + std::to_string(b) + " is defined twice");
  fallback_ids_[b] = id;
  if (id >= ordinary_.size()) ordinary_.resize(size_t{id} + 1);
  ordinary_[id] = {static_cast<uint32_t>(token_arena_.size()), 1};
  token_arena_.push_back(static_cast<char>(b));
  return Status::Ok();
}

void Tokenizer::set_added_flags(uint32_t id, AddedFlags f) {
  if (f.lstrip || f.rstrip || f.single_word) added_flags_.emplace_back(id, f);
}

Status Tokenizer::AddToken(std::string_view bytes, uint32_t id) {
  if (id > kMaxTokenId)
    return Status::InvalidInput(
        "", "token id " + std::to_string(id) + " is above lmkit's limit of " + std::to_string(kMaxTokenId));
  if (bytes.empty()) return Status::InvalidInput("", "empty token (id " + std::to_string(id) + ")");
  if (IsOrdinary(id)) return Status::InvalidInput("", "token id " + std::to_string(id) + " is defined twice");
  if (!tokens_.Insert(bytes, id))
    return Status::InvalidInput("", "token with id " + std::to_string(id) + " repeats the bytes of token " +
                                        std::to_string(tokens_.Find(bytes)));
  if (id >= ordinary_.size()) ordinary_.resize(size_t{id} + 1);
  ordinary_[id] = {static_cast<uint32_t>(token_arena_.size()), static_cast<uint32_t>(bytes.size())};
  token_arena_.append(bytes);
  max_token_bytes_ = std::max(max_token_bytes_, bytes.size());
  return Status::Ok();
}

Status Tokenizer::AddMerge(uint32_t left, uint32_t right, uint32_t rank, uint32_t result) {
  for (uint32_t id : {left, right, result})
    if (!IsOrdinary(id)) return Status::InvalidInput("", "merge uses unknown token id " + std::to_string(id));
  const Span &l = ordinary_[left], &r = ordinary_[right], &res = ordinary_[result];
  const uint32_t strip = static_cast<uint32_t>(prefix_.size());
  if (r.len < strip || res.len != l.len + r.len - strip ||
      std::memcmp(token_arena_.data() + res.offset, token_arena_.data() + l.offset, l.len) != 0 ||
      std::memcmp(token_arena_.data() + res.offset + l.len, token_arena_.data() + r.offset + strip, r.len - strip) != 0)
    return Status::InvalidInput("", "merge result " + std::to_string(result) + " is not the concatenation of " +
                                        std::to_string(left) + " and " + std::to_string(right));
  merges_.Insert(left, right, (uint64_t{rank} << 32) | result);
  return Status::Ok();
}

void Tokenizer::AddAllSplitsAsMerges() {
  // The rules go to a flat list first and into the pair table in one sized pass (InsertMany). Each token's cuts are
  // hashed and their slots prefetched before any is looked up, so that the table's cache misses overlap (Tekken's
  // 131 k tokens: ~1.5 M look-ups into an 8 MB table).
  std::vector<std::pair<uint64_t, uint64_t>> rules;
  rules.reserve(tokens_.size() * 3);
  std::vector<uint64_t> hashes;
  for (uint32_t id = 0; id < ordinary_.size(); ++id) {
    const Span& sp = ordinary_[id];
    if (sp.len == kNoId || sp.len < 2) continue;
    std::string_view t(token_arena_.data() + sp.offset, sp.len);
    const size_t cuts = t.size() - 1;
    hashes.resize(2 * cuts);
    for (size_t c = 1; c < t.size(); ++c) {
      hashes[2 * (c - 1)] = detail::HashBytes(t.data(), c);
      hashes[2 * (c - 1) + 1] = detail::HashBytes(t.data() + c, t.size() - c);
      tokens_.Prefetch(hashes[2 * (c - 1)]);
      tokens_.Prefetch(hashes[2 * (c - 1) + 1]);
    }
    for (size_t c = 1; c < t.size(); ++c) {
      const uint32_t x = tokens_.FindHashed(t.substr(0, c), hashes[2 * (c - 1)]);
      if (x == kNoId) continue;
      const uint32_t y = tokens_.FindHashed(t.substr(c), hashes[2 * (c - 1) + 1]);
      if (y == kNoId) continue;
      rules.emplace_back((uint64_t{x} << 32) | y, (uint64_t{id} << 32) | id);
    }
  }
  merges_.InsertMany(rules);
}

Status Tokenizer::AddSpecial(std::string text, uint32_t id, bool enabled) {
  if (text.empty()) return Status::InvalidInput("", "empty special token");
  if (id > kMaxTokenId)
    return Status::InvalidInput("", "special token " + QuotedToken(text) + ": id " + std::to_string(id) +
                                        " is above lmkit's limit of " + std::to_string(kMaxTokenId));
  for (auto& s : known_specials_)
    if (s.text == text) return Status::InvalidInput("", "special token " + QuotedToken(text) + " is defined twice");
  known_specials_.push_back({text, id});
  if (enabled) return EnableSpecial(text);
  return Status::Ok();
}

Status Tokenizer::EnableSpecial(std::string_view text) {
  for (auto& s : enabled_specials_)
    if (s.text == text) return Status::Ok();
  for (auto& s : known_specials_) {
    if (s.text == text) {
      enabled_specials_.push_back(s);
      return Status::Ok();
    }
  }
  uint32_t id = tokens_.Find(text);
  if (id == kNoId || text.empty())
    return Status::NotFound(std::string(text), "not a special token or a token of this tokenizer");
  enabled_specials_.push_back({std::string(text), id});
  return Status::Ok();
}

Status Tokenizer::Finish() {
  for (int b = 0; b < 256 && char_level_; ++b) {
    const char c = static_cast<char>(b);
    byte_ids_[b] = b < 0x80 ? tokens_.Find(std::string_view(&c, 1)) : kNoId;
    if (byte_ids_[b] == kNoId && byte_fallback_) byte_ids_[b] = fallback_ids_[b];
    if (byte_ids_[b] == kNoId) byte_ids_[b] = unk_;
  }
  for (int b = 0; b < 256 && !char_level_; ++b) {
    char c = static_cast<char>(b);
    byte_ids_[b] = tokens_.Find(std::string_view(&c, 1));
    // GPT-NeoX's and DeepSeek LLM's vocabularies lack the bytes that never occur in UTF-8, Falcon's tokenizer.json
    // (a pipeline) also some control bytes and 0xF2: such a byte is dropped, as Hugging Face drops a character its BPE
    // vocabulary lacks (the encoder skips kNoId bytes). Other files, and a vocabulary without a printable ASCII byte,
    // are no byte-level vocabulary.
    const bool never_in_utf8 = b == 0xC0 || b == 0xC1 || b >= 0xF5;
    const bool hf_drops = pipeline_ != nullptr && (b < 0x20 || b > 0x7E);
    if (byte_ids_[b] == kNoId && !never_in_utf8 && !hf_drops) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", b);
      return Status::InvalidInput(
          "", std::string("the vocabulary has no token for byte ") + hex + " (not a byte-level BPE vocabulary)");
    }
  }
  uint32_t limit = static_cast<uint32_t>(ordinary_.size());
  for (const auto& s : known_specials_) limit = std::max(limit, s.id + 1);
  for (const auto& s : enabled_specials_) limit = std::max(limit, s.id + 1);
  decode_.assign(limit, Span{});
  decode_arena_ = token_arena_;
  for (uint32_t id = 0; id < ordinary_.size(); ++id) decode_[id] = ordinary_[id];
  auto add_special = [&](const SpecialToken& s) -> Status {
    if (IsOrdinary(s.id)) {
      std::string_view b(token_arena_.data() + ordinary_[s.id].offset, ordinary_[s.id].len);
      if (b != s.text)
        return Status::InvalidInput("", "special token " + QuotedToken(s.text) + ": id " + std::to_string(s.id) +
                                            " is already the ordinary token of other bytes");
      return Status::Ok();
    }
    if (decode_[s.id].len != kNoId) {
      std::string_view b(decode_arena_.data() + decode_[s.id].offset, decode_[s.id].len);
      if (b != s.text)
        return Status::InvalidInput(
            "", "special token " + QuotedToken(s.text) + ": id " + std::to_string(s.id) + " is used twice");
      return Status::Ok();
    }
    decode_[s.id] = {static_cast<uint32_t>(decode_arena_.size()), static_cast<uint32_t>(s.text.size())};
    decode_arena_ += s.text;
    return Status::Ok();
  };
  for (const auto& s : known_specials_) LMKIT_RETURN_IF_ERROR(add_special(s));
  for (const auto& s : enabled_specials_) LMKIT_RETURN_IF_ERROR(add_special(s));
  // Longest first: at a position where several specials match, the longest wins.
  std::stable_sort(enabled_specials_.begin(), enabled_specials_.end(),
                   [](const SpecialToken& a, const SpecialToken& b) { return a.text.size() > b.text.size(); });
  std::vector<std::string> texts;
  for (const auto& s : enabled_specials_) texts.push_back(s.text);
  splitter_ = SpecialTokenSplitter(texts);
  return Status::Ok();
}

}  // namespace lmkit::bpe
