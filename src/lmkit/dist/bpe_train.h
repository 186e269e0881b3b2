// `lmkit bpe train --mpi`: the training of TrainBpe computed by all ranks of an MPI job (dist/comm.h;
// docs/distributed.md).
//
// Contract: collective (every rank calls it with the same arguments). The corpus is cut into size x 8 work pieces
// at shard cuts (shard.h) handed out at run time (dist/work_queue.h); each rank counts its pieces on
// options.threads threads into one table (RangeCounter); the tables are summed over a binomial tree (log2 P rounds);
// rank 0 trains and writes vocab.json, merges.txt and tokenizer.json to out_dir, byte-identical to TrainBpe +
// WriteTokenizerFiles (counts are sums). Only rank 0's result is meaningful (root = true); other ranks return after
// handing over their counts. An error on any rank is reported by every rank (each with its own message, or "another
// MPI rank failed"): after an error a rank keeps claiming pieces without working on them, so no rank waits forever.
// Errors: as TrainBpe's, and dist::Comm::Start's (kUnsupported without MPI).
#pragma once

#include <cstdint>
#include <string>

#include "lmkit/bpe/train/trainer.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"

namespace lmkit::bpe {

struct MpiTrainResult {
  int rank = 0;
  int size = 1;
  bool root = true;
  BpeTrainResult train;       // root only
  double reduce_seconds = 0;  // root: waiting for and merging the other ranks' counts
  uint64_t reduce_bytes = 0;  // root: bytes of counts received
  double write_seconds = 0;
};

Result<MpiTrainResult> TrainBpeMpi(const BpeTrainOptions& options, const std::string& out_dir, ProgressSink* progress);

}  // namespace lmkit::bpe
