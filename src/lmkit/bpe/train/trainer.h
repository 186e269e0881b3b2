// Byte-level BPE training with CS336 semantics (see docs/bpe.md and the reference in tests/data/bpe/PROVENANCE.md).
//
// Contract: TrainBpe reads the corpus (io/corpus.h: text files concatenated, or JSONL/Parquet documents joined by
// the separator, by default the first special token) as one byte stream, splits it on the
// special tokens (leftmost, longest first; SpecialTokenSplitter), pre-tokenizes each ordinary span with the GPT-2
// pattern (NextPretokenEnd), counts pre-tokens, then repeatedly merges the most frequent adjacent pair of tokens
// (counts weighted by pre-token frequency; ties to the lexicographically greater pair (bytes(a), bytes(b)); occurrences
// merged left to right without overlap) until the vocabulary has `vocab_size` entries or no pair occurs.
// Ids: specials first (in the order given, duplicates and empty strings dropped), then the 256 byte values, then one
// id per merge in merge order. Inputs are streamed in blocks (memory grows with the number of unique pre-tokens, not
// with input size) and counted on `threads` threads; the result is identical for every thread count.
// Errors: kInvalidArgument (vocab_size below specials + 256; a special token that is empty, one byte long or not valid
// UTF-8; the corpus options), kNotFound/kIo/kInvalidInput for inputs (subject = path), kUnsupported past 4 G symbols of
// distinct pre-tokens.
// `progress` may be null. Thread-safe per call (no shared state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/io/corpus.h"

namespace lmkit::bpe {

struct BpeTrainOptions {
  io::CorpusOptions corpus;  // inputs ("-" = stdin), their format; documents' separator (default: the first special)
  size_t vocab_size = 0;
  std::vector<std::string> special_tokens;
  unsigned threads = 1;
  size_t block_bytes = size_t{64} << 20;  // streaming block; smaller values only change speed, never the result
};

struct BpeModel {
  std::vector<std::string> vocab;                     // id -> token bytes (specials, 256 bytes, merged tokens)
  std::vector<std::pair<uint32_t, uint32_t>> merges;  // in rank order, as ids into vocab
  size_t num_specials = 0;                            // vocab[0 .. num_specials) are the special tokens
};

struct BpeTrainStats {
  uint64_t input_bytes = 0;
  uint64_t pretokens_total = 0;
  uint64_t pretokens_unique = 0;
  double read_seconds = 0;   // time blocked reading input
  double count_seconds = 0;  // special split + pre-tokenize + count (wall, excluding reads)
  double merge_seconds = 0;
  uint32_t longest_token_id = 0;  // the longest non-special token (smallest id among equals)
};

struct BpeTrainResult {
  BpeModel model;
  BpeTrainStats stats;
};

Result<BpeTrainResult> TrainBpe(const BpeTrainOptions& options, ProgressSink* progress);

// ---- the two halves of TrainBpe, for sharded and MPI training (docs/distributed.md) ----

class PretokenTable;  // pretoken_table.h

struct BpeCountOptions {
  io::CorpusOptions corpus;                 // as for training; "-" = stdin only without a range
  std::vector<std::string> special_tokens;  // as for training
  unsigned threads = 1;
  size_t block_bytes = size_t{64} << 20;
  uint64_t begin = 0;         // the range [begin, end) of the corpus to count, in its units (io/corpus.h)
  uint64_t end = UINT64_MAX;  // UINT64_MAX: to the end
};

// The corpus a BPE job (training, counting, encoding) reads: JSONL/Parquet documents are joined by
// corpus.doc_separator, else by the first of `specials`. Errors: Corpus::Create's; for documents with neither, one
// naming both fields.
Result<io::Corpus> OpenBpeCorpus(const io::CorpusOptions& corpus, const std::vector<std::string>& specials);

// Counts the pre-tokens of [begin, end) of the corpus and adds them to *table; adds the bytes of text read to
// stats->input_bytes, and to read_seconds and count_seconds. The counts of ranges that meet at shard cuts (shard.h)
// add up to the counts of the whole corpus. Errors as TrainBpe's (specials, inputs).
Status CountPretokens(const BpeCountOptions& options, PretokenTable* table, BpeTrainStats* stats,
                      ProgressSink* progress);

// Counts several ranges of the same corpus into one set of per-thread tables, keeping them and the read buffer
// between ranges (CountPretokens counts one range and reduces at once). For the MPI driver, which counts work pieces
// handed out at run time. Not thread-safe: one thread at a time.
class RangeCounter {
 public:
  // options.begin/end are ignored. Errors as CountPretokens' (inputs, specials).
  static Result<std::unique_ptr<RangeCounter>> Create(const BpeCountOptions& options);
  ~RangeCounter();
  // Counts [begin, end) (end = UINT64_MAX: to the end) and adds to stats' input_bytes, read_seconds, count_seconds.
  Status Count(uint64_t begin, uint64_t end, BpeTrainStats* stats, ProgressSink* progress);
  // The corpus being counted and the special tokens it is split on (what shard ranges are computed from).
  io::Corpus& corpus();
  const std::vector<std::string>& specials() const;
  // Adds everything counted so far to *table; the counter is spent afterwards.
  void Finish(PretokenTable* table);

 private:
  RangeCounter();
  // TrainBpe hands the per-thread tables to the merger as they are, without Finish's union.
  friend Result<BpeTrainResult> TrainBpe(const BpeTrainOptions& options, ProgressSink* progress);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Checks special tokens as TrainBpe does (kInvalidArgument) and returns them with empty strings and duplicates dropped.
Result<std::vector<std::string>> NormalizeSpecialTokens(const std::vector<std::string>& given);
// Checks the special tokens and the vocabulary size as TrainBpe does (kInvalidArgument) and returns the normalized
// special tokens.
Result<std::vector<std::string>> CheckedSpecials(const BpeTrainOptions& options);

// Merges on counted pre-tokens (options.corpus ignored; options.special_tokens must be those the counts were made
// with). stats' counting fields are reported as given. Consumes the table.
Result<BpeTrainResult> TrainBpeOnCounts(PretokenTable&& table, const BpeTrainOptions& options, BpeTrainStats stats,
                                        ProgressSink* progress);

// The same training on an in-memory text (options.corpus is ignored). For tests and library users.
Result<BpeTrainResult> TrainBpeOnText(std::string_view text, const BpeTrainOptions& options);

}  // namespace lmkit::bpe
