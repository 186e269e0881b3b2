#include "lmkit/bpe/train/train_files.h"

#include "lmkit/bpe/files/tokenizer_writer.h"
#include "lmkit/bpe/train/counts_file.h"
#include "lmkit/bpe/train/pretoken_table.h"
#include "lmkit/common/output_check.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/dist/bpe_train.h"
#include "lmkit/dist/comm.h"

namespace lmkit::bpe {

namespace {

// The table and stats of the counts files, checked to be one complete set made with `given` specials (when any).
Status ReadCounts(const TrainFilesRequest& req, PretokenTable* table, BpeTrainOptions* options, BpeTrainStats* stats) {
  std::vector<CountsHeader> headers;
  for (const auto& path : req.counts) {
    LMKIT_ASSIGN_OR_RETURN(CountsHeader h, ReadCountsFile(path, table));
    headers.push_back(std::move(h));
  }
  LMKIT_RETURN_IF_ERROR(CheckCountsSet(headers, req.counts));
  const CountsHeader& first = headers[0];
  if (first.pattern != PatternName(PretokPattern::kGpt2))
    return Status::InvalidInput(req.counts[0], "counted with pattern '" + first.pattern + "'; bpe train uses gpt2");
  if (!req.special_tokens.empty()) {
    LMKIT_ASSIGN_OR_RETURN(auto given, NormalizeSpecialTokens(req.special_tokens));
    if (given != first.specials)
      return Status::InvalidInput(
          req.counts[0], "counted with other special tokens than the " + Field("special_tokens") + " given here");
  }
  options->special_tokens = first.specials;
  stats->input_bytes = first.corpus_bytes;
  return Status::Ok();
}

}  // namespace

Result<TrainFilesResult> TrainFiles(const TrainFilesRequest& req, ProgressSink* progress) {
  // The three files replace their namesakes in out_dir: none may be an input or a counts file.
  std::vector<std::string> ins = req.corpus.inputs;
  ins.insert(ins.end(), req.counts.begin(), req.counts.end());
  for (const char* name : {"vocab.json", "merges.txt", "tokenizer.json"})
    LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput(ins, req.out_dir + "/" + name, "out_dir"));
  if (req.corpus.inputs.empty() == req.counts.empty())
    return Status::InvalidArgument("give either text " + Field("inputs") + " files or " + Field("counts") +
                                   " files (not both)");
  if (req.mpi && !dist::Built())
    return Status::InvalidArgument(Field("mpi") +
                                   ": this lmkit was built without MPI (install libopenmpi-dev, configure with "
                                   "-DLMKIT_MPI=ON)");
  if (req.mpi && !req.counts.empty())
    return Status::InvalidArgument(Field("mpi") + " counts text inputs; it does not take " + Field("counts"));
  BpeTrainOptions opt;
  opt.corpus = req.corpus;
  opt.vocab_size = req.vocab_size;
  opt.special_tokens = req.special_tokens;
  opt.threads = req.threads;
  if (req.block_bytes > 0) opt.block_bytes = req.block_bytes;

  TrainFilesResult rep;
  if (req.mpi) {
    LMKIT_ASSIGN_OR_RETURN(MpiTrainResult r, TrainBpeMpi(opt, req.out_dir, progress));
    rep.root = r.root;
    if (!r.root) return rep;
    rep.train = std::move(r.train);
    rep.write_seconds = r.write_seconds;
    rep.reduce_seconds = r.reduce_seconds;
    return rep;
  }
  if (!req.counts.empty()) {
    PretokenTable table;
    BpeTrainStats stats;
    LMKIT_RETURN_IF_ERROR(ReadCounts(req, &table, &opt, &stats));
    LMKIT_ASSIGN_OR_RETURN(rep.train, TrainBpeOnCounts(std::move(table), opt, stats, progress));
  } else {
    LMKIT_ASSIGN_OR_RETURN(rep.train, TrainBpe(opt, progress));
  }
  const double tw = MonotonicSeconds();
  LMKIT_RETURN_IF_ERROR(WriteTokenizerFiles(rep.train.model, req.out_dir));
  rep.write_seconds = MonotonicSeconds() - tw;
  return rep;
}

}  // namespace lmkit::bpe
