// `lmkit bpe count INPUT... [--shard K/N] [--special-token TOK]... -o PART.counts`: binds the flags to a
// CountShardRequest, calls CountShard and prints a one-line summary (or --json). docs/distributed.md.
#include <fmt/format.h>

#include "command.h"
#include "corpus_flags.h"
#include "lmkit/bpe/train/count_shard.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/present/bpe_json.h"

namespace lmkit::cli {

RunFn SetupBpeCount(CLI::App& sub, const GlobalOptions& g) {
  struct Options {
    std::vector<std::string> inputs;
    std::string shard = "0/1";
    std::vector<std::string> specials;
    std::string output;
    CorpusFlags corpus;
  };
  auto o = std::make_shared<Options>();
  sub.add_option("inputs", o->inputs, "corpus files, read in order as one stream (the same list for every shard)")
      ->required();
  sub.add_option("--shard", o->shard, "count the K-th of N ranges (0 <= K < N), e.g. 3/16 (default: 0/1, all)");
  sub.add_option("--special-token", o->specials, "a special token (repeatable), as for bpe train")
      ->allow_extra_args(false);
  sub.add_option("-o,--output", o->output, "the counts file to write")->required();
  AddCorpusFlags(sub, &o->corpus);
  return [o, &g] {
    const std::string cmd = "bpe count";
    if (Status st = CheckOutputIsNotAnInput(o->inputs, o->output); !st.ok()) return ReportError(cmd, st);
    bpe::CountShardRequest req;
    auto spec = bpe::ParseShardSpec(o->shard);
    if (!spec.ok()) return ReportError(cmd, spec.status());
    auto corpus = CorpusOptionsFrom(o->corpus, o->inputs);
    if (!corpus.ok()) return ReportError(cmd, corpus.status(), BpeFlagNames());
    req.corpus = std::move(*corpus);
    req.shard = *spec;
    req.special_tokens = o->specials;
    req.threads = g.ResolvedThreads();
    req.output = o->output;
    auto progress = MakeProgress(g);
    auto r = bpe::CountShard(req, progress.get());
    if (!r.ok()) return ReportError(cmd, r.status(), BpeFlagNames());
    const bpe::CountsHeader& h = r->header;
    if (g.json) {
      PrintJson(present::CountShardJson(req, *r));
      return static_cast<int>(kExitOk);
    }
    PrintText(fmt::format("shard {}/{}: bytes [{}, {}) of {}, {} pre-tokens ({} unique) in {:.2f} s -> {}\n", h.shard_k,
                          h.shard_n, h.range_begin, h.range_end, h.corpus_bytes, h.total, h.entries,
                          r->stats.read_seconds + r->stats.count_seconds, o->output));
    return static_cast<int>(kExitOk);
  };
}

}  // namespace lmkit::cli
