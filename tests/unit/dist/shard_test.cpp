// Shard cuts: boundaries are cuts, shards cover the input exactly once, and counting shards separately gives the
// counts (and the trained model) of the whole input.
#include "lmkit/dist/shard.h"

#include <catch2/catch.hpp>
#include <map>

#include "lmkit/bpe/pretokenize/cut_rules.h"
#include "lmkit/bpe/train/counts_file.h"
#include "lmkit/bpe/train/pretoken_table.h"
#include "lmkit/bpe/train/trainer.h"
#include "support/corpus_fixtures.h"
#include "support/run_lmkit.h"

using lmkit::bpe::IsWordStartOrSpecialEndCut;
using lmkit::bpe::ParseShardSpec;
using lmkit::bpe::ShardCutsOfText;

namespace {

// ComputeShardRange of the text corpus of `files`.
lmkit::Result<lmkit::bpe::ShardRange> FileShardRange(const std::vector<std::string>& files, lmkit::bpe::ShardSpec spec,
                                                     const std::vector<std::string>& sp) {
  lmkit::io::CorpusOptions o;
  o.inputs = files;
  LMKIT_ASSIGN_OR_RETURN(lmkit::io::Corpus corpus, lmkit::io::Corpus::Create(o));
  return lmkit::bpe::ComputeShardRange(corpus, spec, sp);
}

// ComputeShardRange over `files` (which hold `text` split anywhere) gives, for every N in `ns`, the cuts that
// ShardCutsOfText finds in the text in memory.
void CheckFileRangesEqualCuts(const std::vector<std::string>& files, const std::string& text,
                              std::initializer_list<uint64_t> ns, const std::vector<std::string>& sp) {
  for (uint64_t n : ns) {
    auto cuts = ShardCutsOfText(text, n, sp);
    for (uint64_t k = 0; k < n; ++k) {
      auto r = FileShardRange(files, {k, n}, sp);
      REQUIRE(r.ok());
      CHECK(r->total == text.size());
      CHECK(r->begin == cuts[k]);
      CHECK(r->end == cuts[k + 1]);
    }
  }
}

}  // namespace

TEST_CASE("shard: K/N parsing", "[bpe][shard]") {
  auto s = ParseShardSpec("3/16");
  REQUIRE(s.ok());
  CHECK(s->k == 3);
  CHECK(s->n == 16);
  CHECK(ParseShardSpec("0/1").ok());
  for (const char* bad : {"", "3", "/4", "4/4", "5/4", "1/0", "-1/4", "a/b", "1/4x", "1//4"})
    CHECK(ParseShardSpec(bad).status().code() == lmkit::ErrorCode::kInvalidArgument);
}

TEST_CASE("shard: boundaries are monotone cuts covering the text once", "[bpe][shard]") {
  const std::string text = lmkit::test::ReadAll(lmkit::test::TestData("bpe/corpus.en"));
  REQUIRE(text.size() > 100000);
  const std::vector<std::string> sp = {"<|endoftext|>"};
  for (uint64_t n = 1; n <= 7; ++n) {
    auto cuts = ShardCutsOfText(text, n, sp);
    REQUIRE(cuts.size() == n + 1);
    CHECK(cuts.front() == 0);
    CHECK(cuts.back() == text.size());
    for (size_t i = 1; i < cuts.size(); ++i) {
      CHECK(cuts[i - 1] <= cuts[i]);
      if (i < n) {
        CHECK(IsWordStartOrSpecialEndCut(text, cuts[i], sp));
        CHECK(cuts[i] >= text.size() * i / n);
        CHECK(cuts[i] - text.size() * i / n < 200);  // English text has a cut every few bytes
      }
    }
  }
}

TEST_CASE("shard: file ranges equal the in-memory cuts, over several files", "[bpe][shard]") {
  lmkit::test::TempDir dir;
  const std::string text = lmkit::test::ReadAll(lmkit::test::TestData("bpe/corpus.en"));
  // Three files whose joins fall mid-word: shards follow the concatenation, not the files.
  const size_t a = 40001, b = 90007;
  lmkit::test::WriteAll(dir.file("a"), text.substr(0, a));
  lmkit::test::WriteAll(dir.file("b"), text.substr(a, b - a));
  lmkit::test::WriteAll(dir.file("c"), text.substr(b));
  const std::vector<std::string> files = {dir.file("a"), dir.file("b"), dir.file("c")};
  const std::vector<std::string> sp = {"<|endoftext|>"};
  CheckFileRangesEqualCuts(files, text, {1, 2, 5}, sp);
  CHECK(FileShardRange({"-"}, {0, 2}, sp).status().code() == lmkit::ErrorCode::kInvalidArgument);
  CHECK(FileShardRange({dir.file("missing")}, {0, 2}, sp).status().code() == lmkit::ErrorCode::kNotFound);
}

// N past 2^32: the shard targets are floor(total * K / N) without overflow. In " a a a ..." (100 bytes) the cuts are
// the even offsets (a space starts a pre-token), so a target t gives the first even offset >= t.
TEST_CASE("shard: huge N still gives the exact targets", "[bpe][shard]") {
  lmkit::test::TempDir dir;
  std::string text;
  for (int i = 0; i < 50; ++i) text += " a";
  lmkit::test::WriteAll(dir.file("t"), text);
  const uint64_t n = UINT64_MAX;
  // Targets 24.99.., 49.99.. and 99.99.. bytes.
  const std::pair<uint64_t, uint64_t> k_begin[] = {{n / 4, 24}, {n / 2, 50}, {n - 1, 100}};
  for (const auto& [k, begin] : k_begin) {
    auto r = FileShardRange({dir.file("t")}, {k, n}, {});
    REQUIRE(r.ok());
    CHECK(r->total == 100);
    CHECK(r->begin == begin);
  }
  auto last = FileShardRange({dir.file("t")}, {n - 1, n}, {});
  REQUIRE(last.ok());
  CHECK(last->end == 100);
}

TEST_CASE("shard: a cut far past the target is found across growing read windows", "[bpe][shard]") {
  // A 300,000-byte word has no cut inside, so the boundary searches read windows of 4 KiB, 8 KiB, ... up to 1 MiB
  // from the target to the word's end; the join of the two files lies inside the word too.
  lmkit::test::TempDir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "word ";
  const size_t run_begin = text.size();
  text += std::string(300000, 'a');
  const size_t run_end = text.size();
  for (int i = 0; i < 2000; ++i) text += " tail";
  const size_t join = run_begin + 123457;
  lmkit::test::WriteAll(dir.file("a"), text.substr(0, join));
  lmkit::test::WriteAll(dir.file("b"), text.substr(join));
  const std::vector<std::string> files = {dir.file("a"), dir.file("b")};
  const std::vector<std::string> sp = {"<|endoftext|>"};
  CheckFileRangesEqualCuts(files, text, {2, 3, 4}, sp);
  // Halving lands inside the word: the cut is its end (" tail" starts a new pre-token).
  auto half = FileShardRange(files, {1, 2}, sp);
  REQUIRE(half.ok());
  REQUIRE(text.size() / 2 > run_begin);
  REQUIRE(text.size() / 2 < run_end);
  CHECK(half->begin == run_end);
}

TEST_CASE("shard: training on N shard counts equals training on the text, N = 1..5", "[bpe][shard]") {
  lmkit::test::TempDir dir;
  const std::string path = lmkit::test::TestData("bpe/corpus.en");
  lmkit::bpe::BpeTrainOptions o;
  o.corpus.inputs = {path};
  o.vocab_size = 500;
  o.special_tokens = {"<|endoftext|>"};
  auto whole = lmkit::bpe::TrainBpe(o, nullptr);
  REQUIRE(whole.ok());
  for (uint64_t n = 1; n <= 5; ++n) {
    lmkit::bpe::PretokenTable merged;
    for (uint64_t k = 0; k < n; ++k) {
      auto r = FileShardRange(o.corpus.inputs, {k, n}, o.special_tokens);
      REQUIRE(r.ok());
      lmkit::bpe::BpeCountOptions co;
      co.corpus.inputs = o.corpus.inputs;
      co.special_tokens = o.special_tokens;
      co.threads = k % 2 + 1;
      co.block_bytes = 4096;  // several blocks per shard
      co.begin = r->begin;
      co.end = r->end;
      lmkit::bpe::PretokenTable t;
      lmkit::bpe::BpeTrainStats st;
      REQUIRE(lmkit::bpe::CountPretokens(co, &t, &st, nullptr).ok());
      CHECK(st.input_bytes == r->end - r->begin);
      // Through the file format, as `bpe count` + `bpe train --counts` do.
      lmkit::bpe::CountsHeader h;
      h.shard_k = k;
      h.shard_n = n;
      h.corpus_bytes = r->total;
      h.range_begin = r->begin;
      h.range_end = r->end;
      h.specials = o.special_tokens;
      const std::string bytes = lmkit::bpe::SerializeCounts(h, t);
      REQUIRE(lmkit::bpe::ParseCounts(bytes, "part", &merged).ok());
    }
    auto sharded = lmkit::bpe::TrainBpeOnCounts(std::move(merged), o, {}, nullptr);
    REQUIRE(sharded.ok());
    INFO("N = " << n);
    CHECK(sharded->model.vocab == whole->model.vocab);
    CHECK(sharded->model.merges == whole->model.merges);
    CHECK(sharded->stats.pretokens_total == whole->stats.pretokens_total);
    CHECK(sharded->stats.pretokens_unique == whole->stats.pretokens_unique);
  }
}

TEST_CASE("shard: a RangeCounter over the pieces of a corpus counts what one pass counts", "[bpe][shard]") {
  // The MPI driver counts work pieces in whatever order they are handed out, into one counter per rank.
  const std::string path = lmkit::test::TestData("bpe/corpus.en");
  lmkit::bpe::BpeCountOptions co;
  co.corpus.inputs = {path};
  co.special_tokens = {"<|endoftext|>"};
  co.block_bytes = 4096;
  lmkit::bpe::PretokenTable whole;
  lmkit::bpe::BpeTrainStats ws;
  REQUIRE(lmkit::bpe::CountPretokens(co, &whole, &ws, nullptr).ok());
  for (unsigned threads : {1u, 2u}) {
    co.threads = threads;
    auto rc = lmkit::bpe::RangeCounter::Create(co);
    REQUIRE(rc.ok());
    lmkit::bpe::BpeTrainStats st;
    const uint64_t n = 7;
    for (uint64_t k : {3, 0, 6, 1, 5, 2, 4}) {  // out of order, as claimed at run time
      auto r = FileShardRange(co.corpus.inputs, {k, n}, co.special_tokens);
      REQUIRE(r.ok());
      REQUIRE((*rc)->Count(r->begin, r->end, &st, nullptr).ok());
    }
    lmkit::bpe::PretokenTable pieces;
    (*rc)->Finish(&pieces);
    CHECK(st.input_bytes == ws.input_bytes);
    REQUIRE(pieces.size() == whole.size());
    std::map<std::string, uint64_t> a, b;
    whole.ForEach([&](std::string_view key, uint64_t c) { a[std::string(key)] = c; });
    pieces.ForEach([&](std::string_view key, uint64_t c) { b[std::string(key)] = c; });
    CHECK(a == b);
  }
  co.corpus.inputs.clear();
  CHECK(lmkit::bpe::RangeCounter::Create(co).status().code() == lmkit::ErrorCode::kInvalidArgument);
}

// JSONL and Parquet blocks are read on a second thread while the one before is counted: in blocks of 4 KiB, a
// compressed JSONL corpus (read ahead) counts what its joined text (read in place) counts, at any thread count.
TEST_CASE("shard: documents read ahead in small blocks count what their joined text counts", "[bpe][shard][corpus]") {
  lmkit::test::TempDir dir;
  lmkit::test::WriteCorpusForms(dir.path());
  auto count = [&](const std::string& input, unsigned threads) {
    lmkit::bpe::BpeCountOptions co;
    co.corpus.inputs = {input};
    co.special_tokens = {"<|endoftext|>"};
    co.threads = threads;
    co.block_bytes = 4096;
    lmkit::bpe::PretokenTable t;
    lmkit::bpe::BpeTrainStats st;
    REQUIRE(lmkit::bpe::CountPretokens(co, &t, &st, nullptr).ok());
    std::map<std::string, uint64_t> m;
    t.ForEach([&](std::string_view key, uint64_t c) { m[std::string(key)] = c; });
    return std::make_pair(m, st.input_bytes);
  };
  const auto text = count(dir.file("joined.txt"), 1);
  REQUIRE(text.first.size() > 1000);
  for (unsigned threads : {1u, 3u}) {
    const auto zst = count(dir.file("c.jsonl.zst"), threads);
    CHECK(zst.second == text.second);
    CHECK(zst.first == text.first);
  }
}
