// `lmkit bpe count INPUT... [--shard K/N] [--special-token TOK]... -o PART.counts`: counts the pre-tokens of one shard
// of the inputs (ComputeShardRange + CountPretokens) and writes a counts file for `lmkit bpe train --counts`.
#include <fmt/format.h>

#include "commands.h"
#include "lmkit/bpe/counts_file.h"
#include "lmkit/bpe/pretoken_table.h"
#include "lmkit/bpe/shard.h"
#include "lmkit/bpe/trainer.h"
#include "lmkit/common/sysinfo.h"

namespace lmkit::cli {

RunFn SetupBpeCount(CLI::App& sub, const GlobalOptions& g) {
  struct Options {
    std::vector<std::string> inputs;
    std::string shard = "0/1";
    std::vector<std::string> specials;
    std::string output;
  };
  auto o = std::make_shared<Options>();
  sub.add_option("inputs", o->inputs, "text files, read in order as one stream (the same list for every shard)")
      ->required();
  sub.add_option("--shard", o->shard, "count the K-th of N byte ranges (0 <= K < N), e.g. 3/16 (default 0/1: all)");
  sub.add_option("--special-token", o->specials, "a special token (repeatable), as for bpe train")
      ->allow_extra_args(false);
  sub.add_option("-o,--output", o->output, "the counts file to write")->required();
  return [o, &g] {
    const std::string cmd = "bpe count";
    if (Status st = CheckOutputIsNotAnInput(o->inputs, o->output); !st.ok()) return ReportError(cmd, st);
    auto spec = bpe::ParseShardSpec(o->shard);
    if (!spec.ok()) return ReportError(cmd, spec.status());
    auto specials = bpe::NormalizeSpecialTokens(o->specials);
    if (!specials.ok()) return ReportError(cmd, specials.status());
    // One shard needs no cuts, so it can also read stdin; its size is known once it is read.
    const bool whole = spec->n == 1;
    Result<bpe::ShardRange> range = bpe::ShardRange{0, UINT64_MAX, 0};
    if (!whole) range = bpe::ComputeShardRange(o->inputs, *spec, *specials);
    if (!range.ok()) return ReportError(cmd, range.status());
    bpe::BpeCountOptions co;
    co.inputs = o->inputs;
    co.special_tokens = *specials;
    co.threads = g.ResolvedThreads();
    co.begin = range->begin;
    co.end = range->end;
    bpe::PretokenTable table;
    bpe::BpeTrainStats stats;
    auto progress = MakeProgress(g);
    if (Status st = bpe::CountPretokens(co, &table, &stats, progress.get()); !st.ok()) return ReportError(cmd, st);
    if (whole) range = bpe::ShardRange{0, stats.input_bytes, stats.input_bytes};
    bpe::CountsHeader h;
    h.shard_k = spec->k;
    h.shard_n = spec->n;
    h.corpus_bytes = range->total;
    h.range_begin = range->begin;
    h.range_end = range->end;
    h.pattern = std::string(bpe::PatternName(bpe::PretokPattern::kGpt2));
    h.specials = *specials;
    uint64_t total = 0;
    table.ForEach([&](std::string_view, uint64_t c) { total += c; });
    const double tw = MonotonicSeconds();
    if (Status st = bpe::WriteCountsFile(o->output, h, table); !st.ok()) return ReportError(cmd, st);
    const double write_s = MonotonicSeconds() - tw;
    if (g.json) {
      Json j;
      j["shard"] = {{"k", spec->k}, {"n", spec->n}};
      j["corpus_bytes"] = range->total;
      j["range"] = {range->begin, range->end};
      j["pretokens_total"] = total;
      j["pretokens_unique"] = table.size();
      j["threads"] = co.threads;
      j["seconds"] = {{"read", stats.read_seconds}, {"pretokenize_count", stats.count_seconds}, {"write", write_s}};
      j["peak_rss_bytes"] = PeakRssBytes();
      j["output"] = o->output;
      PrintJson(j);
      return static_cast<int>(kExitOk);
    }
    PrintText(fmt::format("shard {}/{}: bytes [{}, {}) of {}, {} pre-tokens ({} unique) in {:.2f} s -> {}\n", spec->k,
                          spec->n, range->begin, range->end, range->total, total, table.size(),
                          stats.read_seconds + stats.count_seconds, o->output));
    return static_cast<int>(kExitOk);
  };
}

}  // namespace lmkit::cli
