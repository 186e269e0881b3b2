// `lmkit bpe train`: a tokenizer trained from a corpus, from the counts files of CountShard, or by an MPI job, and
// written as vocab.json, merges.txt and tokenizer.json (tokenizer_writer.h).
//
// Contract: TrainFiles takes exactly one of `corpus.inputs` and `counts`. From a corpus it is TrainBpe; with `mpi`
// the same training by all ranks of an MPI job (dist/bpe_train.h; only rank 0 trains, writes and reports:
// other ranks get root = false); from counts files it checks that they belong together (CheckCountsSet), were counted
// with the gpt2 pattern and, when special_tokens are given, with those (else it takes the files' specials). The files
// are byte-identical whichever way they were computed. Errors: kInvalidArgument naming fields (inputs and counts both
// or neither, mpi with counts or in a build without MPI), the counts files' kInvalidInput naming the file, TrainBpe's,
// and the writer's (nothing is replaced in out_dir on failure).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lmkit/bpe/train/trainer.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/io/corpus.h"

namespace lmkit::bpe {

struct TrainFilesRequest {
  io::CorpusOptions corpus;         // the corpus to train on (no inputs: train on `counts`)
  std::vector<std::string> counts;  // counts files of all N shards
  size_t vocab_size = 0;
  std::vector<std::string> special_tokens;
  unsigned threads = 1;
  size_t block_bytes = 0;  // 0: BpeTrainOptions' default
  bool mpi = false;
  std::string out_dir;
};

struct TrainFilesResult {
  bool root = true;  // false on MPI ranks other than 0, which report nothing else
  BpeTrainResult train;
  double write_seconds = 0;
  std::optional<double> reduce_seconds;  // MPI: waiting for and merging the other ranks' counts
};

Result<TrainFilesResult> TrainFiles(const TrainFilesRequest& request, ProgressSink* progress);

}  // namespace lmkit::bpe
