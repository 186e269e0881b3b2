// `lmkit bpe train INPUT... --vocab-size N [--special-token TOK]... -o DIR`: binds the flags to BpeTrainOptions, calls
// TrainBpe then WriteTokenizerFiles, and prints a summary (text or --json).
// `--counts PART.counts...` trains on the counts of `lmkit bpe count` instead of text (ReadCountsFile, CheckCountsSet,
// TrainBpeOnCounts); `--mpi` runs under mpirun (TrainBpeMpi; only rank 0 prints). docs/distributed.md.
#include <fmt/format.h>

#include "commands.h"
#include "lmkit/bpe/byte_unicode.h"
#include "lmkit/bpe/counts_file.h"
#include "lmkit/bpe/pretoken_table.h"
#include "lmkit/bpe/tokenizer_writer.h"
#include "lmkit/bpe/trainer.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/mpi/bpe_mpi.h"

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
  };
  auto o = std::make_shared<Options>();
  sub.add_option("inputs", o->inputs, "text files to train on, read in order as one stream ('-' = stdin)");
  sub.add_option("--vocab-size", o->vocab_size, "vocabulary size: special tokens + 256 bytes + merges")
      ->required()
      ->transform(DecimalCount());
  sub.add_option("--special-token", o->specials,
                 "a special token (repeatable): split out of the text before training, never merged; ids 0, 1, ...")
      ->allow_extra_args(false);  // one value per flag, so a following input path is not taken as a special
  sub.add_option("-o,--output", o->out_dir, "directory for vocab.json, merges.txt and tokenizer.json")->required();
  sub.add_option("--counts", o->counts, "train on the counts files of `lmkit bpe count` (all N shards) instead of text")
      ->allow_extra_args(false)
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub.add_option("--block-bytes", o->block_bytes, "input bytes read per block (default 64 MiB)")
      ->transform(DecimalCount())
      ->group("");  // for experiments: the result does not depend on it
  sub.add_flag("--mpi", o->mpi, "run as one rank of an MPI job (mpirun -n P lmkit bpe train ... --mpi)");
  return [o, &g] {
    const std::string cmd = "bpe train";
    bpe::BpeTrainOptions opt;
    opt.inputs = o->inputs;
    opt.vocab_size = o->vocab_size;
    opt.special_tokens = o->specials;
    opt.threads = g.ResolvedThreads();
    if (o->block_bytes > 0) opt.block_bytes = o->block_bytes;
    if (o->inputs.empty() == o->counts.empty())
      return UsageError(cmd, "give either text INPUT files or --counts files (not both)");
    if (o->mpi && !mpi::MpiBuilt())
      return UsageError(cmd,
                        "--mpi: this lmkit was built without MPI (install libopenmpi-dev, configure with "
                        "-DLMKIT_MPI=ON)");
    if (o->mpi && !o->counts.empty()) return UsageError(cmd, "--mpi counts text inputs; it does not take --counts");
    // The three files replace their namesakes in the output directory: none may be a text input or a counts file.
    std::vector<std::string> ins = o->inputs;
    ins.insert(ins.end(), o->counts.begin(), o->counts.end());
    for (const char* name : {"vocab.json", "merges.txt", "tokenizer.json"})
      if (Status st = CheckOutputIsNotAnInput(ins, o->out_dir + "/" + name); !st.ok()) return ReportError(cmd, st);
    auto progress = MakeProgress(g);
    Result<bpe::BpeTrainResult> trained = Status::Internal("not trained");
    double write_s = 0;
    double reduce_s = -1;  // MPI only
    if (o->mpi) {
      auto r = mpi::TrainBpeMpi(opt, o->out_dir, progress.get());
      if (!r.ok()) return ReportError(cmd, r.status());
      if (!r->root) return static_cast<int>(kExitOk);  // rank 0 reports
      write_s = r->write_seconds;
      reduce_s = r->reduce_seconds;
      trained = std::move(r->train);
    } else {
      if (!o->counts.empty()) {
        bpe::PretokenTable table;
        std::vector<bpe::CountsHeader> headers;
        for (const auto& path : o->counts) {
          auto h = bpe::ReadCountsFile(path, &table);
          if (!h.ok()) return ReportError(cmd, h.status());
          headers.push_back(std::move(*h));
        }
        if (Status st = bpe::CheckCountsSet(headers, o->counts); !st.ok()) return ReportError(cmd, st);
        if (headers[0].pattern != bpe::PatternName(bpe::PretokPattern::kGpt2))
          return ReportError(cmd, Status::InvalidInput(o->counts[0], "counted with pattern '" + headers[0].pattern +
                                                                         "'; bpe train uses gpt2"));
        if (!o->specials.empty()) {
          auto given = bpe::NormalizeSpecialTokens(o->specials);
          if (!given.ok()) return ReportError(cmd, given.status());
          if (*given != headers[0].specials)
            return ReportError(cmd, Status::InvalidInput(o->counts[0],
                                                         "counted with other special tokens than the "
                                                         "--special-token flags given here"));
        }
        opt.special_tokens = headers[0].specials;
        bpe::BpeTrainStats stats;
        stats.input_bytes = headers[0].corpus_bytes;
        trained = bpe::TrainBpeOnCounts(std::move(table), opt, stats, progress.get());
      } else {
        trained = bpe::TrainBpe(opt, progress.get());
      }
      if (!trained.ok()) return ReportError(cmd, trained.status());
      const double tw = MonotonicSeconds();
      Status st = bpe::WriteTokenizerFiles(trained->model, o->out_dir);
      if (!st.ok()) return ReportError(cmd, st);
      write_s = MonotonicSeconds() - tw;
    }
    const auto& m = trained->model;
    const auto& s = trained->stats;
    const std::string& longest = m.vocab[s.longest_token_id];
    if (g.json) {
      Json j;
      j["input_bytes"] = s.input_bytes;
      j["pretokens_total"] = s.pretokens_total;
      j["pretokens_unique"] = s.pretokens_unique;
      j["merges"] = m.merges.size();
      j["vocab_size"] = m.vocab.size();
      j["special_tokens"] = m.num_specials;
      j["threads"] = opt.threads;
      j["seconds"] = {{"read", s.read_seconds},
                      {"pretokenize_count", s.count_seconds},
                      {"merge", s.merge_seconds},
                      {"write", write_s}};
      if (reduce_s >= 0) j["seconds"]["reduce"] = reduce_s;
      j["peak_rss_bytes"] = PeakRssBytes();
      j["longest_token"] = {
          {"id", s.longest_token_id}, {"bytes", longest.size()}, {"printable", bpe::BytesToPrintable(longest)}};
      j["output"] = {o->out_dir + "/vocab.json", o->out_dir + "/merges.txt", o->out_dir + "/tokenizer.json"};
      PrintJson(j);
      return static_cast<int>(kExitOk);
    }
    std::string out;
    out += fmt::format("trained {} merges, vocabulary {} ({} special + 256 bytes + merges)\n", m.merges.size(),
                       m.vocab.size(), m.num_specials);
    out += fmt::format("input   {} , {} pre-tokens ({} unique)\n", FormatBytes(static_cast<double>(s.input_bytes)),
                       s.pretokens_total, s.pretokens_unique);
    out += fmt::format("time    read {:.2f} s, pre-tokenize+count {:.2f} s, merge {:.2f} s, write {:.2f} s\n",
                       s.read_seconds, s.count_seconds, s.merge_seconds, write_s);
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
