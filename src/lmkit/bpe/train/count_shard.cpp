#include "lmkit/bpe/train/count_shard.h"

#include "lmkit/bpe/train/pretoken_table.h"
#include "lmkit/common/sysinfo.h"

namespace lmkit::bpe {

Result<CountShardResult> CountShard(const CountShardRequest& req, ProgressSink* progress) {
  BpeCountOptions co;
  co.corpus = req.corpus;
  co.special_tokens = req.special_tokens;
  co.threads = req.threads;
  LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<RangeCounter> counter, RangeCounter::Create(co));
  // One shard needs no cuts, so it can also read stdin; its size is known once it is read.
  const bool whole = req.shard.n == 1;
  ShardRange range{0, UINT64_MAX, 0};
  if (!whole) {
    LMKIT_ASSIGN_OR_RETURN(range, ComputeShardRange(counter->corpus(), req.shard, counter->specials()));
  }
  CountShardResult rep;
  LMKIT_RETURN_IF_ERROR(counter->Count(range.begin, range.end, &rep.stats, progress));
  PretokenTable table;
  const double t_reduce = MonotonicSeconds();
  counter->Finish(&table);
  rep.stats.count_seconds += MonotonicSeconds() - t_reduce;
  if (whole) range = ShardRange{0, rep.stats.input_bytes, rep.stats.input_bytes};
  CountsHeader& h = rep.header;
  h.shard_k = req.shard.k;
  h.shard_n = req.shard.n;
  h.corpus_bytes = range.total;
  h.range_begin = range.begin;
  h.range_end = range.end;
  h.pattern = std::string(PatternName(PretokPattern::kGpt2));
  h.specials = counter->specials();
  h.entries = table.size();
  h.total = 0;
  table.ForEach([&](std::string_view, uint64_t c) { h.total += c; });
  const double tw = MonotonicSeconds();
  LMKIT_RETURN_IF_ERROR(WriteCountsFile(req.output, h, table));
  rep.write_seconds = MonotonicSeconds() - tw;
  return rep;
}

}  // namespace lmkit::bpe
