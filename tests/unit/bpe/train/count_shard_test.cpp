// CountShard: the counts file of shard K/N of a corpus, whose header says which range of the corpus it counted.
#include "lmkit/bpe/train/count_shard.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "lmkit/bpe/train/pretoken_table.h"
#include "support/corpus_fixtures.h"
#include "support/run_lmkit.h"

TEST_CASE("count shard: ranges of a JSONL corpus start at lines and cover it once", "[bpe][corpus]") {
  lmkit::test::TempDir dir;
  lmkit::test::WriteCorpusForms(dir.path());
  const std::string jsonl = lmkit::test::ReadAll(dir.file("c.jsonl"));
  uint64_t prev = 0, total = 0;
  for (uint64_t k = 0; k < 4; ++k) {
    lmkit::bpe::CountShardRequest req;
    req.corpus.inputs = {dir.file("c.jsonl.gz")};
    req.shard = {k, 4};
    req.special_tokens = {"<|endoftext|>"};
    req.threads = 2;
    req.output = dir.file(fmt::format("p{}", k));
    auto r = lmkit::bpe::CountShard(req, nullptr);
    REQUIRE(r.ok());
    const auto& h = r->header;
    CHECK(h.shard_k == k);
    CHECK(h.shard_n == 4);
    CHECK(h.corpus_bytes == jsonl.size());  // units of JSONL: bytes of the decompressed file
    CHECK(h.range_begin == prev);
    CHECK(h.range_end > h.range_begin);
    if (h.range_begin > 0) CHECK(jsonl[h.range_begin - 1] == '\n');
    CHECK(h.specials == std::vector<std::string>{"<|endoftext|>"});
    lmkit::bpe::PretokenTable t;
    auto parsed = lmkit::bpe::ReadCountsFile(req.output, &t);
    REQUIRE(parsed.ok());
    CHECK(parsed->entries == h.entries);
    CHECK(parsed->total == h.total);
    total += h.total;
    prev = h.range_end;
  }
  CHECK(prev == jsonl.size());
  // The whole corpus in one: its range is the bytes of text read (stdin has no size before it is read).
  lmkit::bpe::CountShardRequest all;
  all.corpus.inputs = {dir.file("joined.txt")};
  all.special_tokens = {"<|endoftext|>"};
  all.output = dir.file("all");
  auto a = lmkit::bpe::CountShard(all, nullptr);
  REQUIRE(a.ok());
  CHECK(a->header.range_end == lmkit::test::ReadAll(dir.file("joined.txt")).size());
  CHECK(a->header.total == total);
}
