// `lmkit bpe count`: the pre-token counts of one shard of a corpus, written as a counts file (counts_file.h) for
// TrainFiles' `counts` (docs/distributed.md).
//
// Contract: CountShard cuts shard `shard` of the corpus (shard.h; {0, 1} counts everything and may read stdin),
// counts it on `threads` threads and writes the counts file through AtomicFile (nothing at `output` on failure). The
// file's bytes do not depend on the thread count. Errors: those of the corpus, the specials (trainer.h) and the write.
#pragma once

#include <string>
#include <vector>

#include "lmkit/bpe/train/counts_file.h"
#include "lmkit/bpe/train/trainer.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/dist/shard.h"
#include "lmkit/io/corpus.h"

namespace lmkit::bpe {

struct CountShardRequest {
  io::CorpusOptions corpus;  // the same for every shard
  ShardSpec shard;
  std::vector<std::string> special_tokens;
  unsigned threads = 1;
  std::string output;  // the counts file
};

struct CountShardResult {
  CountsHeader header;  // shard, corpus size and range in the corpus' units, entries and total
  BpeTrainStats stats;  // bytes of text read, read and counting seconds
  double write_seconds = 0;
};

Result<CountShardResult> CountShard(const CountShardRequest& request, ProgressSink* progress);

}  // namespace lmkit::bpe
