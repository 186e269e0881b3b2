// `lmkit bpe train INPUT... --vocab-size N [--special-token TOK]... -o DIR`: binds the flags to a TrainFilesRequest,
// calls TrainFiles (a corpus; `--counts PART.counts...` of `lmkit bpe count`; or `--mpi` under mpirun, where only
// rank 0 prints) and prints a summary (text or --json). docs/distributed.md, docs/corpora.md.
#include <fmt/format.h>

#include "command.h"
#include "corpus_flags.h"
#include "lmkit/bpe/files/byte_unicode.h"
#include "lmkit/bpe/train/train_files.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/units.h"
#include "lmkit/present/bpe_json.h"

namespace lmkit::cli {

RunFn SetupBpeTrain(CLI::App& sub, const GlobalOptions& g) {
  struct Options {
    std::vector<std::string> inputs;
    size_t vocab_size = 0;
    std::vector<std::string> specials;
    std::string out_dir;
    std::vector<std::string> counts;
    bool mpi = false;
    size_t block_bytes = 0;
    CorpusFlags corpus;
  };
  auto o = std::make_shared<Options>();
  sub.add_option("inputs", o->inputs,
                 "corpus files to train on, read in order as one stream ('-' = stdin): text, JSONL or Parquet");
  sub.add_option("--vocab-size", o->vocab_size, "vocabulary size: special tokens + 256 bytes + merges")
      ->required()
      ->transform(DecimalCount());
  sub.add_option("--special-token", o->specials,
                 "a special token (repeatable): split out of the text before training, never merged; ids 0, 1, ...")
      ->allow_extra_args(false);  // one value per flag, so a following input path is not taken as a special
  sub.add_option("-o,--output", o->out_dir, "directory for vocab.json, merges.txt and tokenizer.json")->required();
  // Any number of values, so that a shell glob (--counts part-*.counts) passes every file.
  sub.add_option("--counts", o->counts, "train on the counts files of `lmkit bpe count` (all N shards) instead of text")
      ->expected(1, -1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub.add_option("--block-bytes", o->block_bytes, "input bytes read per block (default: 64 MiB)")
      ->transform(DecimalCount())
      ->group("");  // for experiments: the result does not depend on it
  sub.add_flag("--mpi", o->mpi, "run as one rank of an MPI job (mpirun -n P lmkit bpe train ... --mpi)");
  AddCorpusFlags(sub, &o->corpus);
  return [o, &g] {
    const std::string cmd = "bpe train";
    bpe::TrainFilesRequest req;
    auto corpus = CorpusOptionsFrom(o->corpus, o->inputs);
    if (!corpus.ok()) return ReportError(cmd, corpus.status(), BpeFlagNames());
    req.corpus = std::move(*corpus);
    req.counts = o->counts;
    req.vocab_size = o->vocab_size;
    req.special_tokens = o->specials;
    req.threads = g.ResolvedThreads();
    req.block_bytes = o->block_bytes;
    req.mpi = o->mpi;
    req.out_dir = o->out_dir;
    auto progress = MakeProgress(g);
    auto r = bpe::TrainFiles(req, progress.get());
    if (!r.ok()) return ReportError(cmd, r.status(), BpeFlagNames());
    if (!r->root) return static_cast<int>(kExitOk);  // rank 0 reports
    const auto& m = r->train.model;
    const auto& s = r->train.stats;
    const std::string& longest = m.vocab[s.longest_token_id];
    if (g.json) {
      PrintJson(present::TrainFilesJson(req, *r));
      return static_cast<int>(kExitOk);
    }
    std::string out;
    out += fmt::format("trained {} merges, vocabulary {} ({} special + 256 bytes + merges)\n", m.merges.size(),
                       m.vocab.size(), m.num_specials);
    out += fmt::format("input   {} , {} pre-tokens ({} unique)\n", FormatBytes(static_cast<double>(s.input_bytes)),
                       s.pretokens_total, s.pretokens_unique);
    out += fmt::format("time    read {:.2f} s, pre-tokenize+count {:.2f} s, merge {:.2f} s, write {:.2f} s\n",
                       s.read_seconds, s.count_seconds, s.merge_seconds, r->write_seconds);
    out += fmt::format("memory  peak RSS {}\n", FormatBytes(static_cast<double>(PeakRssBytes())));
    // A summary line, not the vocabulary: a token of a megabyte (one long word of the corpus) is cut.
    constexpr size_t kShown = 64;
    const std::string shown = bpe::BytesToPrintable(std::string_view(longest).substr(0, kShown));
    out += fmt::format("longest token id {} ({} bytes): {}{}\n", s.longest_token_id, longest.size(), shown,
                       longest.size() > kShown ? fmt::format(" ... ({} more bytes)", longest.size() - kShown) : "");
    out += fmt::format("wrote   {0}/vocab.json {0}/merges.txt {0}/tokenizer.json\n", o->out_dir);
    PrintText(out);
    return static_cast<int>(kExitOk);
  };
}

}  // namespace lmkit::cli
