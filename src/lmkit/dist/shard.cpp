// Shard boundaries (see shard.h). The corpus finds each boundary by reading a window at the target (io/corpus.h), so
// a job touches only its own range plus a few windows of the others.
#include "lmkit/dist/shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "lmkit/bpe/pretokenize/cut_rules.h"

namespace lmkit::bpe {

namespace {

size_t MaxLen(const std::vector<std::string>& specials) {
  size_t m = 0;
  for (const auto& s : specials) m = std::max(m, s.size());
  return m;
}

// floor(total * k / n), in 128 bits: N may pass 2^32 (a 64-bit form gave the shard 18446744073709551614 of
// 18446744073709551615 the range [0, 0)).
uint64_t Target(uint64_t total, uint64_t k, uint64_t n) {
  __extension__ typedef unsigned __int128 Wide;
  return static_cast<uint64_t>(static_cast<Wide>(total) * k / n);
}

}  // namespace

Result<ShardSpec> ParseShardSpec(std::string_view text) {
  const auto bad = [&] {
    return Status::InvalidArgument(
        fmt::format("{} '{}': expected K/N with 0 <= K < N (e.g. 0/4)", Field("shard"), text));
  };
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return bad();
  ShardSpec s;
  const char* b = text.data();
  auto r1 = std::from_chars(b, b + slash, s.k);
  auto r2 = std::from_chars(b + slash + 1, b + text.size(), s.n);
  if (r1.ec != std::errc() || r1.ptr != b + slash || r2.ec != std::errc() || r2.ptr != b + text.size() || s.n == 0 ||
      s.k >= s.n || slash == 0)
    return bad();
  return s;
}

std::vector<uint64_t> ShardCutsOfText(std::string_view text, uint64_t n, const std::vector<std::string>& specials) {
  std::vector<uint64_t> cuts{0};
  for (uint64_t k = 1; k < n; ++k) {
    uint64_t c = Target(text.size(), k, n);
    while (c > 0 && c < text.size() && !IsWordStartOrSpecialEndCut(text, static_cast<size_t>(c), specials)) ++c;
    cuts.push_back(c);
  }
  cuts.push_back(text.size());
  return cuts;
}

Result<ShardRange> ComputeShardRange(io::Corpus& corpus, ShardSpec spec, const std::vector<std::string>& specials) {
  if (spec.n == 0 || spec.k >= spec.n) return Status::InvalidArgument("shard index out of range");
  const size_t L = MaxLen(specials);
  io::CutRule rule;
  rule.is_cut = [&specials](std::string_view text, size_t c) { return IsWordStartOrSpecialEndCut(text, c, specials); };
  rule.before = 2 * L + 2;
  rule.after = L + 2;
  ShardRange r;
  LMKIT_ASSIGN_OR_RETURN(r.total, corpus.Total());
  LMKIT_ASSIGN_OR_RETURN(r.begin, corpus.FirstCut(Target(r.total, spec.k, spec.n), rule));
  LMKIT_ASSIGN_OR_RETURN(r.end, corpus.FirstCut(Target(r.total, spec.k + 1, spec.n), rule));
  return r;
}

}  // namespace lmkit::bpe
