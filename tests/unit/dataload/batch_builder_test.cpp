// One batch, stage by stage: the windows are the file's tokens at the sampler's starts, x and y are them shifted, the
// vocabulary check records offsets, and the digest depends on the content and index only.
#include "lmkit/dataload/batch_builder.h"

#include <catch2/catch.hpp>
#include <cstring>

#include "lmkit/dataload/token_shards.h"
#include "support/run_lmkit.h"

using namespace lmkit::dataload;
using lmkit::test::TempDir;
using lmkit::test::WriteTokenFile;

TEST_CASE("batch builder: windows, x/y and the vocabulary check of one batch", "[dataload][batch_builder]") {
  TempDir dir;
  const std::string path = WriteTokenFile(dir, 20000, 1000);  // token i = (i * 7919) % 1000
  auto shards = OpenTokenShards({path}, lmkit::io::TokenDtype::kU16, 0);
  REQUIRE(shards.ok());
  LoaderConfig c;
  c.batch_size = 4;
  c.context_length = 16;
  c.out = OutDtype::kInt32;
  auto sampler = WindowSampler::Create({20000}, {path}, c.context_length, 3);
  REQUIRE(sampler.ok());
  auto reader = TokenReader::Open(*shards, Access::kPread, Advice::kRandom);
  REQUIRE(reader.ok());
  const BatchBuilder builder(c, *sampler, **reader, 2, 500, 0);
  CHECK(builder.SlotBytes() == 4 * 17 * 2 + 2 * 4 * 16 * 4);
  Batch b;
  builder.Allocate(&b);
  ReaderScratch scratch;
  REQUIRE(builder.Build(7, &b, &scratch, nullptr).ok());
  std::vector<Window> want(4);
  sampler->SampleBatch(7, 4, want.data());
  std::vector<int32_t> x(64), y(64);
  std::memcpy(x.data(), b.xy.data(), 256);
  std::memcpy(y.data(), b.xy.data() + 256, 256);
  size_t bad = 0;
  for (size_t r = 0; r < 4; ++r) {
    CHECK(b.starts[r].start == want[r].start);
    for (size_t t = 0; t < 16; ++t) {
      CHECK(x[r * 16 + t] == static_cast<int32_t>(((want[r].start + t) * 7919) % 1000));
      CHECK(y[r * 16 + t] == static_cast<int32_t>(((want[r].start + t + 1) * 7919) % 1000));
    }
    for (size_t t = 0; t < 17; ++t) bad += ((want[r].start + t) * 7919) % 1000 >= 500 ? 1 : 0;
  }
  CHECK(b.vocab.ids_checked == 4 * 17);
  CHECK(b.vocab.bad.size() == bad);
  CHECK(b.vocab.bad_ids.size() == bad);
  CHECK(b.times.sample >= 0);
  CHECK(b.times.Produce() >= b.times.gather);
  // The digest is a function of index and content: rebuilding gives it again, another batch does not.
  Batch again;
  builder.Allocate(&again);
  REQUIRE(builder.Build(7, &again, &scratch, nullptr).ok());
  CHECK(builder.FoldDigest(0, 7, b) == builder.FoldDigest(0, 7, again));
  REQUIRE(builder.Build(8, &again, &scratch, nullptr).ok());
  CHECK(builder.FoldDigest(0, 7, b) != builder.FoldDigest(0, 8, again));
}
