// Shards: cutting a corpus (io/corpus.h: text files concatenated, or JSONL/Parquet documents joined) into N ranges
// that N independent jobs (scheduler tasks, MPI ranks) can count or encode, with results identical to one pass over
// the whole corpus (docs/distributed.md).
//
// Contract: a shard cut is a byte offset c (0 < c < total) of the concatenated inputs where the text can be split
// without changing any special-token match or pre-token on either side: IsWordStartOrSpecialEndCut
// (bpe/pretokenize/cut_rules.h), a document boundary such as the end of "<|endoftext|>" or the start of a word.
// Offsets 0 and total are always cuts. Shard k of n is [Cut(k·total/n), Cut((k+1)·total/n)) in the corpus' units
// (bytes of text or JSONL, column bytes of Parquet row groups), where Cut(t) is the first cut at or after t that is
// also a document boundary (Corpus::FirstCut; total when there is none), so the n ranges are disjoint, cover the
// corpus exactly once, and every job computes the same boundaries from the files alone. A shard may be empty (tiny
// inputs, text without cuts, fewer row groups than shards).
// Errors: kInvalidArgument for a bad "K/N" (naming Field("shard")) or an input that is not a regular file (stdin
// cannot be sharded), the corpus' errors for inputs (subject = path). Thread-safe except ComputeShardRange (it reads
// through the corpus).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/io/corpus.h"

namespace lmkit::bpe {

struct ShardSpec {
  uint64_t k = 0;
  uint64_t n = 1;
};

// "K/N" with 0 <= K < N, N >= 1.
Result<ShardSpec> ParseShardSpec(std::string_view text);

struct ShardRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t total = 0;  // the whole corpus, in its units
};

// The shard boundaries of an in-memory text: n+1 offsets, first 0, last text.size(). For tests and library users.
std::vector<uint64_t> ShardCutsOfText(std::string_view text, uint64_t n, const std::vector<std::string>& specials);

// Shard `spec` of the corpus (regular files), cut for `specials` (normalized, as the counting splits on them).
Result<ShardRange> ComputeShardRange(io::Corpus& corpus, ShardSpec spec, const std::vector<std::string>& specials);

}  // namespace lmkit::bpe
