// Encoding an input of any size: cut into chunks at safe points, encoded in parallel, in bounded memory, with output
// identical to a whole-input encode.
//
// Contract: EncodeStream reads `source` to its end, cuts it at safe points (IsWordStartCutOutsideSpecials, cut_rules.h)
// into chunks of about `chunk_bytes`, encodes them on `threads` worker threads (up to 2 × threads chunks in flight; the
// calling thread reads and writes) and hands the ids to `sink` in input order, on the calling thread, so the output is
// the same for every thread count and chunk size. Special tokens follow options.specials (default: every special of the
// tokenizer allowed). Memory: the chunks in flight and their ids (bounded by chunk_bytes × 2 × threads × ~2.5) plus any
// one stretch of input without a safe point (a single pre-token, e.g. megabytes of text with no space or newline, must
// be held whole). Errors: the source's or the sink's Status, unchanged; for the first disallowed special in the input,
// DisallowedSpecialError with its offset from the start of the input and no subject (the caller names the input);
// ids before it have been written to the sink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/encode/special_policy.h"
#include "lmkit/bpe/encode/token_sink.h"
#include "lmkit/bpe/tokenizer.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/io/byte_source.h"

namespace lmkit::bpe {

// What EncodeStream reads (io/byte_source.h: text files, decompressed streams, joined corpus documents).
using io::ByteSource;
using io::FdSource;
using io::StringSource;

// Encoders and stream buffers kept from one EncodeStream call to the next (StreamOptions::encoders), so that the
// encoders' caches of merged pieces stay warm and the text and id buffers stay mapped: encoding 8 MiB pieces with a
// fresh encoder each cost 40% more than one stream (MPI work pieces), and fresh buffers cost a page fault per 4 KiB
// (about 17 us each on the benchmark VM).
// Not thread-safe; one pool per caller, used by one EncodeStream at a time, with one tokenizer.
class EncoderPool {
 public:
  explicit EncoderPool(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}
  // Encoder i, made with `cache_slots` on first use (later calls keep its size).
  Encoder& Get(size_t i, size_t cache_slots);
  const Tokenizer& tokenizer() const { return *tokenizer_; }

  // One chunk in flight in EncodeStream. Cache-line aligned: workers push ids into neighbouring slots at the same
  // time, and sharing a line between two of them cost a third more CPU with 2 threads (false sharing).
  struct alignas(64) Slot {
    std::string text;
    std::vector<uint32_t> ids;
    std::optional<DisallowedSpecial> disallowed;  // found in `text` (then `ids` is not filled)
  };
  // At least n slots (kept, with their capacity, between calls; contents unspecified).
  std::vector<Slot>& Slots(size_t n) {
    if (slots_.size() < n) slots_.resize(n);
    return slots_;
  }
  // The chunker's carry-over buffer (contents unspecified).
  std::string& Carry() { return carry_; }

 private:
  // Cache-line aligned: the workers of one stream update their encoders' scratch vectors at the same time.
  struct alignas(64) Aligned {
    Aligned(const Tokenizer& t, size_t slots) : encoder(t, slots) {}
    Encoder encoder;
  };
  const Tokenizer* tokenizer_;
  std::deque<Aligned> encoders_;  // a deque: references stay valid as it grows
  std::vector<Slot> slots_;
  std::string carry_;
};

struct StreamOptions {
  unsigned threads = 1;
  size_t chunk_bytes = 0;           // 0: 1 MiB, smaller with many threads so that chunks in flight stay under 16 MiB
  EncoderPool* encoders = nullptr;  // optional: encoders to reuse (see EncoderPool)
  const SpecialRules* specials = nullptr;  // optional: which specials are matched or refused (default: all matched)
};

struct StreamStats {
  uint64_t bytes = 0;
  uint64_t tokens = 0;
  uint64_t chunks = 0;
  uint64_t largest_chunk = 0;  // bytes; far above chunk_bytes means the input lacked safe cut points
};

Result<StreamStats> EncodeStream(const Tokenizer& tokenizer, ByteSource& source, TokenSink& sink,
                                 const StreamOptions& options, ProgressSink* progress);

}  // namespace lmkit::bpe
