// BPE training (see trainer.h for the contract and docs/bpe.md for the algorithm): the special tokens and vocabulary
// checks, and the two phases joined: counting (counter.h) hands its tables to merging (merger.h).
#include "lmkit/bpe/train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "lmkit/bpe/pretokenize/special_tokens.h"
#include "lmkit/bpe/pretokenize/unicode_classes.h"
#include "lmkit/bpe/train/counter.h"
#include "lmkit/bpe/train/merger.h"
#include "lmkit/bpe/train/pretoken_table.h"
#include "lmkit/common/sysinfo.h"

namespace lmkit::bpe {

namespace {

Status CheckVocabSize(const std::vector<std::string>& specials, const BpeTrainOptions& o) {
  if (o.vocab_size < specials.size() + 256)
    return Status::InvalidArgument(
        fmt::format("{} {} is below the {} tokens every vocabulary starts with ({} special + 256 bytes)",
                    Field("vocab_size"), o.vocab_size, specials.size() + 256, specials.size()));
  return Status::Ok();
}

Result<BpeTrainResult> Finish(const std::vector<std::string>& specials, train::CountsView& counts,
                              const BpeTrainOptions& o, BpeTrainStats stats, ProgressSink* progress);

}  // namespace

Result<std::vector<std::string>> CheckedSpecials(const BpeTrainOptions& o) {
  LMKIT_ASSIGN_OR_RETURN(auto specials, NormalizeSpecialTokens(o.special_tokens));
  LMKIT_RETURN_IF_ERROR(CheckVocabSize(specials, o));
  return specials;
}

Result<std::vector<std::string>> NormalizeSpecialTokens(const std::vector<std::string>& given) {
  std::vector<std::string> specials;
  for (const auto& s : given) {
    if (s.empty()) return Status::InvalidArgument("a special token must not be empty");
    if (s.size() == 1)
      return Status::InvalidArgument(
          fmt::format("special token '{}' is a single byte, which is already a token of its own", s));
    for (size_t i = 0; i < s.size();) {
      const DecodedChar d = DecodeUtf8At(s, i);
      if (d.cp == kInvalidCodePoint)
        return Status::InvalidArgument("special tokens must be valid UTF-8 (tokenizer.json is JSON)");
      i += d.len;
    }
    if (std::find(specials.begin(), specials.end(), s) == specials.end()) specials.push_back(s);
  }
  return specials;
}

namespace {

Result<BpeTrainResult> Finish(const std::vector<std::string>& specials, train::CountsView& counts,
                              const BpeTrainOptions& o, BpeTrainStats stats, ProgressSink* progress) {
  stats.pretokens_unique = counts.size();
  counts.ForEach([&](std::string_view, uint64_t count) { stats.pretokens_total += count; });
  const double t0 = MonotonicSeconds();
  train::Merger merger(counts);
  if (!merger.ok())
    return Status::Unsupported("", "more than 4 G bytes of distinct pre-tokens; the merger indexes words with 32 bits");
  counts.Release();  // the words now live in the merger
  merger.Run(o.vocab_size - specials.size() - 256, progress);
  stats.merge_seconds = MonotonicSeconds() - t0;

  BpeTrainResult r;
  const uint32_t k = static_cast<uint32_t>(specials.size());
  r.model.num_specials = k;
  r.model.vocab = specials;
  for (auto& t : merger.tokens_) r.model.vocab.push_back(std::move(t));
  for (const auto& [a, b] : merger.merges_) r.model.merges.emplace_back(a + k, b + k);
  uint32_t best = k;  // the longest non-special token (smallest id among equals)
  for (uint32_t i = k + 1; i < r.model.vocab.size(); ++i)
    if (r.model.vocab[i].size() > r.model.vocab[best].size()) best = i;
  stats.longest_token_id = best;
  r.stats = stats;
  return r;
}

}  // namespace

Result<BpeTrainResult> TrainBpeOnText(std::string_view text, const BpeTrainOptions& options) {
  LMKIT_ASSIGN_OR_RETURN(auto specials, CheckedSpecials(options));
  SpecialTokenSplitter splitter(specials);
  train::Counter counter(splitter, options.threads);
  BpeTrainStats stats;
  stats.input_bytes = text.size();
  const double t0 = MonotonicSeconds();
  counter.CountBlock(text);
  train::CountsView counts = counter.ReduceView();
  stats.count_seconds = MonotonicSeconds() - t0;
  return Finish(specials, counts, options, stats, nullptr);
}

Result<BpeTrainResult> TrainBpeOnCounts(PretokenTable&& table, const BpeTrainOptions& options, BpeTrainStats stats,
                                        ProgressSink* progress) {
  LMKIT_ASSIGN_OR_RETURN(auto specials, CheckedSpecials(options));
  PretokenTable t = std::move(table);
  train::CountsView counts;
  counts.table = &t;
  return Finish(specials, counts, options, stats, progress);
}

Result<BpeTrainResult> TrainBpe(const BpeTrainOptions& options, ProgressSink* progress) {
  if (options.corpus.inputs.empty()) return Status::InvalidArgument("no input files");
  LMKIT_ASSIGN_OR_RETURN(auto specials, CheckedSpecials(options));
  BpeCountOptions co;
  co.corpus = options.corpus;
  co.special_tokens = options.special_tokens;
  co.threads = options.threads;
  co.block_bytes = options.block_bytes;
  BpeTrainStats stats;
  LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<RangeCounter> rc, RangeCounter::Create(co));
  LMKIT_RETURN_IF_ERROR(rc->Count(co.begin, co.end, &stats, progress));
  // As CountPretokens, but the merger reads the per-thread tables without their union (CountsView).
  const double t_reduce = MonotonicSeconds();
  rc->impl_->FreeBuffers();
  train::CountsView counts = rc->impl_->counter.ReduceView();
  stats.count_seconds += MonotonicSeconds() - t_reduce;
  return Finish(specials, counts, options, stats, progress);
}

}  // namespace lmkit::bpe
