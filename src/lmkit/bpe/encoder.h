// Encoding text into token ids: per pre-token BPE (tiktoken-exact), and a streaming driver that encodes an input of
// any size in chunks, in parallel, in bounded memory, with output identical to a whole-input encode.
//
// Contract:
// - Encoder (one per thread; cheap to make; not thread-safe, shares the immutable Tokenizer):
//   Encode(text) finds the tokenizer's enabled special tokens (leftmost occurrence first; among specials starting at
//   the same byte, the longest), encodes the text between them with EncodeOrdinary, and emits each special's id.
//   EncodeOrdinary cuts text into pre-tokens (pretokenizer.h, the tokenizer's pattern) and encodes each with
//   EncodePiece: a one-byte piece is its byte token; with the whole-piece shortcut a piece that is a token is that
//   token; otherwise the lowest-ranked adjacent pair is merged, leftmost first, until no rule applies.
//   Any bytes are accepted: byte-level BPE encodes invalid UTF-8 losslessly (decode gives the same bytes back); how
//   the pre-tokenizer groups such bytes is documented in docs/bpe-encoding.md.
// - EncodeStream reads `source` to its end, cuts it at safe points (LastSafeCut) into chunks of about
//   `chunk_bytes`, encodes them on `threads` worker threads (up to 2 × threads chunks in flight; the calling thread
//   reads and writes) and hands the ids to `sink` in input order, on the calling thread, so the output is the same
//   for every thread count and chunk size. Memory: the chunks in flight and their ids (bounded by
//   chunk_bytes × 2 × threads × ~2.5) plus any one stretch of input without a safe point (a single
//   pre-token, e.g. megabytes of text with no space or newline, must be held whole). Errors: the source's or the
//   sink's Status, unchanged.
// - LastSafeCut(text, from) returns the largest c in [max(from, 2), text.size() - 2] at which the text may be cut —
// encoding
//   text[0,c) and text[c,end) separately gives exactly the ids of the whole — or 0 when there is none. The rules
//   (proved for the gpt2, cl100k and o200k patterns in docs/bpe-encoding.md) look only at ASCII bytes:
//     "X\n|Y" with X printable non-space ASCII and Y an ASCII letter or digit, or "x| y" with x, y ASCII letters;
//   and no enabled special token occurrence may straddle c.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/bpe/tokenizer.h"
#include "lmkit/bpe/tokenizer_files.h"
#include "lmkit/common/atomic_file.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/io/token_dtype.h"

namespace lmkit::bpe {

class Encoder {
 public:
  // `cache_slots` (a power of two) sizes the cache of merged pieces, 64 bytes a slot.
  explicit Encoder(const Tokenizer& tokenizer, size_t cache_slots = kCacheSlots);

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

// Input for EncodeStream.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `capacity` bytes; 0 at the end. Errors name the input.
  virtual Result<size_t> Read(char* dst, size_t capacity) = 0;
  // Total size when known (a regular file), else 0; for progress only.
  virtual uint64_t SizeHint() const { return 0; }
};

// Output of EncodeStream: receives the ids in input order.
class TokenSink {
 public:
  virtual ~TokenSink() = default;
  virtual Status Write(const uint32_t* ids, size_t count) = 0;
  // Ids that fit uint16 (MPI pieces of a uint16 output); the default widens them for Write.
  virtual Status Write16(const uint16_t* ids, size_t count);
};

class StringSource final : public ByteSource {
 public:
  explicit StringSource(std::string_view s, size_t max_read = SIZE_MAX) : s_(s), max_read_(max_read) {}
  Result<size_t> Read(char* dst, size_t capacity) override;
  uint64_t SizeHint() const override { return s_.size(); }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  size_t max_read_;
};

// Reads a file descriptor (a file, a pipe, stdin); does not own it.
class FdSource final : public ByteSource {
 public:
  FdSource(int fd, std::string subject, uint64_t size_hint = 0)
      : fd_(fd), subject_(std::move(subject)), size_hint_(size_hint) {}
  Result<size_t> Read(char* dst, size_t capacity) override;
  uint64_t SizeHint() const override { return size_hint_; }

 private:
  int fd_;
  std::string subject_;
  uint64_t size_hint_;
};

class VectorSink final : public TokenSink {
 public:
  Status Write(const uint32_t* ids, size_t count) override {
    ids_.insert(ids_.end(), ids, ids + count);
    return Status::Ok();
  }
  std::vector<uint32_t>& ids() { return ids_; }

 private:
  std::vector<uint32_t> ids_;
};

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
};

struct StreamStats {
  uint64_t bytes = 0;
  uint64_t tokens = 0;
  uint64_t chunks = 0;
  uint64_t largest_chunk = 0;  // bytes; far above chunk_bytes means the input lacked safe cut points
};

Result<StreamStats> EncodeStream(const Tokenizer& tokenizer, ByteSource& source, TokenSink& sink,
                                 const StreamOptions& options, ProgressSink* progress);

size_t LastSafeCut(std::string_view text, size_t from, const std::vector<SpecialToken>& specials);

// The pattern part of the rule above, without special tokens: true when 2 <= c, c + 1 < text.size() and the bytes
// around c are "X\n|Y" or "x| y". Shared with the shard splitter (shard.h), which adds its own special-token rules.
bool IsPatternSafeCut(std::string_view text, size_t c);

// ---- `lmkit bpe encode`: files in, token files out ----

// Id file formats. bin: raw little-endian ids; npy: a 1-D .npy array; json: one array `[1,2,3]` and a newline;
// text: one token per line, `id<TAB>bytes` with the bytes written as a quoted string (docs/bpe-encoding.md).
enum class IdFormat { kBin, kNpy, kJson, kText };

Result<IdFormat> IdFormatFromName(std::string_view name);  // bin | npy | json | text; kInvalidArgument otherwise
std::string_view IdFormatName(IdFormat f);
// .npy → npy, .json → json, .txt → text, anything else → bin.
IdFormat IdFormatFromPath(const std::string& path);
// auto: uint16 when every id of the tokenizer fits, else uint32. Errors: kInvalidArgument for uint16 with larger ids.
Result<io::TokenDtype> ResolveDtype(io::TokenDtype requested, const Tokenizer& tokenizer);

// The token's bytes as a double-quoted string: printable ASCII as is (\" and \\ escaped), \n \r \t, other
// control bytes as \u00XX, valid UTF-8 sequences as is, any other byte as \xNN. Used by --format text.
std::string QuoteTokenBytes(std::string_view bytes);

// Where output bytes go: an AtomicFile (committed at the end) or a descriptor such as stdout (not owned).
class ByteOutput {
 public:
  static Result<ByteOutput> ToFile(const std::string& path);
  static ByteOutput ToFd(int fd, std::string name);
  Status Write(std::string_view bytes);
  Status Commit();  // flushes; renames a file into place
  const std::string& name() const { return name_; }

 private:
  std::optional<AtomicFile> file_;
  int fd_ = -1;
  std::string name_;
  std::string buffer_;
};

struct EncodeRequest {
  std::string tokenizer;
  TokenizerOptions tokenizer_options;
  std::string input = "-";
  std::string output;  // empty: write to stdout_fd
  int stdout_fd = 1;
  std::optional<IdFormat> format;  // default: from the output's extension, json on stdout
  io::TokenDtype dtype = io::TokenDtype::kAuto;
  unsigned threads = 1;
  size_t chunk_bytes = 0;
};

struct EncodeReport {
  std::string tokenizer;  // description
  std::string input;
  std::string output;
  IdFormat format = IdFormat::kJson;
  io::TokenDtype dtype = io::TokenDtype::kU32;
  unsigned threads = 1;
  uint64_t bytes = 0;
  uint64_t tokens = 0;
  uint64_t chunks = 0;
  uint64_t largest_chunk = 0;
  double load_seconds = 0;        // reading the tokenizer
  double encode_seconds = 0;      // reading, encoding and writing the input (wall clock)
  double encode_cpu_seconds = 0;  // CPU time of all threads over the same phase
  uint64_t peak_rss_bytes = 0;
};

// Loads the tokenizer, encodes `input` ("-" = stdin) with EncodeStream and writes the ids. Errors: the loader's, the
// input's (named), kInvalidArgument for npy on a descriptor (its header needs the count, so it needs a file).
Result<EncodeReport> EncodeFile(const EncodeRequest& request, ProgressSink* progress);

// ---- for drivers that produce the ids elsewhere (the MPI encoder, src/lmkit/mpi/) ----

// The output EncodeFile writes to, on its own: Write ids in order, then Commit once.
class IdOutput : public TokenSink {
 public:
  virtual Status Commit() = 0;
};

// Opens request.output (or request.stdout_fd when it is empty) for `format` and `dtype` exactly as EncodeFile does,
// so ids written here give the same bytes. Errors: as EncodeFile's for its output.
Result<std::unique_ptr<IdOutput>> OpenIdOutput(const EncodeRequest& request, const Tokenizer& tokenizer,
                                               IdFormat format, io::TokenDtype dtype);

}  // namespace lmkit::bpe
