#include "lmkit/bpe/encode/encode_stream.h"

#include <algorithm>
#include <cctype>

#include "lmkit/bpe/pretokenize/cut_rules.h"
#include "lmkit/common/ordered_pipeline.h"
#include "lmkit/common/thread_start.h"

namespace lmkit::bpe {

namespace {

// Cuts the input into chunks. Each chunk owns its bytes: the reader fills a chunk's buffer with the carry-over of
// the previous cut plus fresh input, cuts it at the last safe point within `chunk` bytes (else the first one after),
// and moves the bytes past the cut into the next buffer. Only that short tail is copied twice.
class Chunker {
 public:
  // `carry` is a buffer the caller keeps (its contents are discarded here).
  // `rule`: the tokenizer's (tokenizer.h cut_rule); kNone makes the input one chunk. `enders`: the added tokens a
  // chunk may end with under kNewlineLetter and kSpecialEnd (IsSpecialEndCut).
  Chunker(ByteSource& source, size_t chunk, const std::vector<SpecialToken>& specials, std::string& carry,
          Tokenizer::CutRule rule, std::vector<SpecialToken> enders)
      : source_(source),
        chunk_(chunk),
        read_block_(std::clamp<size_t>(chunk, 4096, size_t{1} << 20)),
        specials_(specials),
        carry_(carry),
        cut_(rule != Tokenizer::CutRule::kNone),
        rule_(rule),
        enders_(std::move(enders)) {
    for (const auto& e : enders_) ender_last_[static_cast<unsigned char>(e.text.back())] = true;
    for (const auto& s : specials) look_ = std::max(look_, s.text.size());
    carry_.clear();
  }

  // Fills *out with the next chunk (reusing its capacity); false at the end of the input.
  Result<bool> Next(std::string* out) {
    out->swap(carry_);
    carry_.clear();
    std::string& buf = *out;
    LMKIT_RETURN_IF_ERROR(Fill(&buf, chunk_ + look_ + 1));
    if (buf.empty()) return false;
    size_t c = 0;
    if (!cut_) {
      while (!eof_) LMKIT_RETURN_IF_ERROR(Fill(&buf, buf.size() + read_block_));
      return true;
    }
    if (buf.size() > chunk_ + look_) {
      for (size_t k = chunk_; k >= 2 && c == 0; --k)
        if (IsCut(buf, k)) c = k;
      for (size_t pos = chunk_ + 1; c == 0; ++pos) {
        LMKIT_RETURN_IF_ERROR(Fill(&buf, pos + look_ + 1));
        if (buf.size() <= pos + look_) break;
        if (IsCut(buf, pos)) c = pos;
      }
    }
    if (c != 0) {
      carry_.assign(buf, c, std::string::npos);
      buf.resize(c);
    }
    return true;
  }

 private:
  bool IsCut(std::string_view buf, size_t c) const {
    switch (rule_) {
      case Tokenizer::CutRule::kWordStart:
        return IsWordStartCutOutsideSpecials(buf, c, specials_);
      case Tokenizer::CutRule::kNewlineLetter:
        return IsNewlineLetterCutOutsideSpecials(buf, c, specials_) || MaybeSpecialEnd(buf, c);
      case Tokenizer::CutRule::kSpecialEnd:
        return MaybeSpecialEnd(buf, c);
      case Tokenizer::CutRule::kNone:
        break;
    }
    return false;
  }

  // IsSpecialEndCut, after a look at the byte before c (Mistral v3 has 770 added tokens to compare otherwise, at
  // every position the cut search passes).
  bool MaybeSpecialEnd(std::string_view buf, size_t c) const {
    return c > 0 && c <= buf.size() && ender_last_[static_cast<unsigned char>(buf[c - 1])] &&
           IsSpecialEndCut(buf, c, enders_, specials_);
  }

  Status Fill(std::string* buf, size_t want) {
    while (!eof_ && buf->size() < want) {
      const size_t old = buf->size();
      const size_t block = std::max(read_block_, want - old);
      buf->resize(old + block);
      auto got = source_.Read(buf->data() + old, block);
      if (!got.ok()) {
        buf->resize(old);
        return got.status();
      }
      buf->resize(old + *got);
      if (*got == 0) eof_ = true;
    }
    return Status::Ok();
  }

  ByteSource& source_;
  size_t chunk_;
  size_t read_block_;
  const std::vector<SpecialToken>& specials_;
  size_t look_ = 2;  // bytes a cut decision needs beyond the cut
  std::string& carry_;
  bool cut_;
  Tokenizer::CutRule rule_;
  std::vector<SpecialToken> enders_;
  bool ender_last_[256] = {};  // the last bytes of enders_
  bool eof_ = false;
};

}  // namespace

// Performance notes (2 threads, debmix; docs/benchmarks/bpe-encode.md): an earlier version read a window of chunks,
// encoded them with a parallel-for and wrote them, all in lock step, and two threads gave only 1.4-1.5x one. Most of
// that was false sharing, not the lock step: the workers' id vectors and encoders sat next to each other and their
// headers (written on every push) shared cache lines, so two threads spent a third more CPU than one. With slots and
// encoders cache-line aligned they spend the same CPU as one thread (1.79-2.19x wall in three idle runs, where two
// independent processes reach 1.87-2.00x). The calling thread only reads and writes; `threads` workers take chunks as
// soon as they are read, and results are written in input order as soon as the oldest one is done
// (RunOrderedPipeline).
Encoder& EncoderPool::Get(size_t i, size_t cache_slots) {
  while (encoders_.size() <= i) encoders_.emplace_back(*tokenizer_, cache_slots);
  return encoders_[i].encoder;
}

Result<StreamStats> EncodeStream(const Tokenizer& tokenizer, ByteSource& source, TokenSink& sink,
                                 const StreamOptions& options, ProgressSink* progress) {
  const unsigned threads = std::clamp(options.threads, 1u, kMaxThreads);
  size_t chunk = options.chunk_bytes;
  // Input in flight stays under 16 MiB (its ids add ~1.5 bytes per input byte): 1 MiB chunks up to 8 threads.
  if (chunk == 0) chunk = std::clamp<size_t>((size_t{16} << 20) / (2 * threads), size_t{64} << 10, size_t{1} << 20);
  StreamStats stats;
  if (progress != nullptr) progress->Begin("encoding", source.SizeHint(), "B");
  const SpecialRules own_rules = options.specials ? SpecialRules() : SpecialRules::AllowAll(tokenizer);
  const SpecialRules& rules = options.specials ? *options.specials : own_rules;

  // Encoders come from options.encoders when given (their caches stay warm from call to call), else are made here.
  EncoderPool local_pool(tokenizer);
  EncoderPool& pool = options.encoders ? *options.encoders : local_pool;
  if (&pool.tokenizer() != &tokenizer) return Status::Internal("EncodeStream: encoder pool of another tokenizer");
  // No chunk cut may split an allowed or a disallowed special.
  // Added tokens a chunk may end with: matched whatever surrounds them (no lstrip, rstrip, single_word) and ending in
  // a byte that no flag of a following token reads as whitespace or a word character.
  std::vector<SpecialToken> enders;
  for (const SpecialToken& s : rules.watched()) {
    const Tokenizer::AddedFlags f = tokenizer.added_flags(s.id);
    const unsigned char last = s.text.empty() ? 0 : static_cast<unsigned char>(s.text.back());
    if (!f.lstrip && !f.rstrip && !f.single_word && last >= 0x21 && last <= 0x7E && !std::isalnum(last))
      enders.push_back(s);
  }
  Chunker chunker(source, chunk, rules.watched(), pool.Carry(), tokenizer.cut_rule(), std::move(enders));

  // One thread: the calling thread reads, encodes and writes. More: `threads` workers encode.
  PipelineOptions po;
  po.workers = threads == 1 ? 0 : threads;
  // Per-thread caches shrink with more threads so that memory stays bounded at any thread count: 4.6 MB per encoder
  // up to 2 threads, 1.2 MB up to 16 (debmix, gpt2, 8 threads: peak RSS 88 MB, 116 MB with 4.6 MB each), 0.3 MB
  // beyond. The large cache is worth ~15% on one thread (docs/bpe-encoding.md).
  const size_t cache_slots = threads <= 2    ? Encoder::kCacheSlots
                             : threads <= 16 ? Encoder::kCacheSlots / 4
                                             : Encoder::kCacheSlots / 16;
  std::vector<EncoderPool::Slot>& slots = pool.Slots(PipelineRing(po));
  // Encoders are made on this thread, before their worker starts, for the same reason as the id buffers below. They
  // point at `rules` only for this call (it may die with it; a pool's encoders live on).
  std::vector<Encoder*> encoders(std::max(1u, po.workers), nullptr);
  auto prepare = [&](unsigned w) {
    encoders[w] = &pool.Get(w, cache_slots);
    encoders[w]->set_special_rules(&rules);
  };
  struct Unbind {
    std::vector<Encoder*>& encoders;
    ~Unbind() {
      for (Encoder* e : encoders)
        if (e != nullptr) e->set_special_rules(nullptr);
    }
  } unbind{encoders};
  if (po.workers == 0) prepare(0);

  PipelineStages stages;
  stages.prepare_worker = prepare;
  stages.produce = [&](size_t i) -> Result<bool> {
    EncoderPool::Slot& slot = slots[i];
    LMKIT_ASSIGN_OR_RETURN(bool more, chunker.Next(&slot.text));
    // Reserved on this thread, so id vectors do not grow in per-thread malloc arenas (which would inflate the
    // resident set with every thread added).
    if (more && po.workers > 0) slot.ids.reserve(slot.text.size() / 2 + 16);
    return more;
  };
  // A disallowed special in a chunk is recorded instead of encoding it (consume reports the first one, in order).
  stages.work = [&](size_t i, unsigned w) {
    EncoderPool::Slot& slot = slots[i];
    slot.ids.clear();
    slot.disallowed.reset();
    if (rules.has_disallowed()) slot.disallowed = rules.FindDisallowed(slot.text);
    if (!slot.disallowed) encoders[w]->Encode(slot.text, &slot.ids);
    return Status::Ok();
  };
  stages.consume = [&](size_t i) -> Result<bool> {
    const EncoderPool::Slot& slot = slots[i];
    if (slot.disallowed) {
      DisallowedSpecial at = *slot.disallowed;
      at.offset += stats.bytes;
      return DisallowedSpecialError("", at);
    }
    LMKIT_RETURN_IF_ERROR(sink.Write(slot.ids.data(), slot.ids.size()));
    stats.bytes += slot.text.size();
    stats.tokens += slot.ids.size();
    stats.largest_chunk = std::max<uint64_t>(stats.largest_chunk, slot.text.size());
    ++stats.chunks;
    if (progress != nullptr) progress->Update(stats.bytes);
    return true;
  };
  LMKIT_RETURN_IF_ERROR(RunOrderedPipeline(po, stages).status());
  if (progress != nullptr) progress->Finish();
  return stats;
}

}  // namespace lmkit::bpe
