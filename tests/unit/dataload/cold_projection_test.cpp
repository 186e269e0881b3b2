// The cold-cache model: per-batch storage time by access mode from a storage probe, the bandwidth cap, and what
// happens without a probe.
#include "lmkit/dataload/cold_projection.h"

#include <catch2/catch.hpp>

#include "lmkit/dataload/os_facts.h"
#include "support/run_lmkit.h"

using namespace lmkit::dataload;

namespace {

// 100 us per 4 KiB read, 1 GB/s sequential, 40,000 reads/s at queue depth 8.
StorageProbe ColdProbe(double bandwidth = 1e9) {
  StorageProbe p;
  p.ok = true;
  p.reads = 32;
  p.read_latency_s = 100e-6;
  p.parallel_reads_per_s = 40000;
  p.sequential_bytes_per_s = bandwidth;
  return p;
}

}  // namespace

// Batch 8 of 1,023-token windows of uint16: 1,024 tokens read = 2,048 B, spanning 1 + 2,046 / 4,096 = 1.4995 pages.
TEST_CASE("cold projection: golden batch times of mmap read-around, pread and random advice", "[dataload][cold]") {
  REQUIRE(PageSize() == 4096);
  // mmap: each window faults in 128 KiB of read-around: 8 x (100 us + 131,072 B / 1 GB/s) + 1 ms of CPU.
  auto m = ProjectColdCache(ColdProbe(), Access::kMmap, Advice::kNormal, 8, 1023, 2, 128, 1, 0.001);
  REQUIRE(m.available);
  CHECK(m.bytes_per_window == 131072);
  CHECK(m.read_amplification == 64);  // 131,072 / 2,048
  CHECK(m.batch_s == Approx(0.002848576));
  CHECK(m.tokens_per_s == Approx(8 * 1023 / 0.002848576));
  // pread: the 6,142 B of pages spanned, one request per window: 8 x (100 us + (6,142 - 4,096) B / 1 GB/s).
  auto p = ProjectColdCache(ColdProbe(), Access::kPread, Advice::kNormal, 8, 1023, 2, 128, 1, 0);
  CHECK(p.bytes_per_window == 6142);
  CHECK(p.batch_s == Approx(0.000816368));
  // Random advice overlaps the batch's requests: 8 x 1.4995 pages / 40,000 reads/s.
  auto r = ProjectColdCache(ColdProbe(), Access::kPread, Advice::kRandom, 8, 1023, 2, 128, 1, 0);
  CHECK(r.batch_s == Approx(8 * 1.49951171875 / 40000));
  // O_DIRECT reads are synchronous: random advice does not overlap them.
  auto d = ProjectColdCache(ColdProbe(), Access::kDirect, Advice::kRandom, 8, 1023, 2, 128, 1, 0);
  CHECK(d.batch_s == Approx(p.batch_s));
}

TEST_CASE("cold projection: threads scale until the storage bandwidth caps the tokens", "[dataload][cold]") {
  REQUIRE(PageSize() == 4096);
  auto one = ProjectColdCache(ColdProbe(), Access::kPread, Advice::kNormal, 8, 1023, 2, 128, 1, 0);
  auto four = ProjectColdCache(ColdProbe(), Access::kPread, Advice::kNormal, 8, 1023, 2, 128, 4, 0);
  CHECK(four.tokens_per_s == Approx(4 * one.tokens_per_s));
  CHECK(four.batch_s == Approx(one.batch_s));  // per thread
  // At 1 MB/s, 64 threads would ask for 30.5 M tokens/s; the storage delivers 1e6 / (6,142 B / 1,023 tokens).
  auto capped = ProjectColdCache(ColdProbe(1e6), Access::kPread, Advice::kNormal, 8, 1023, 2, 128, 64, 0);
  CHECK(capped.tokens_per_s == Approx(1e6 / (6142.0 / 1023)));
}

TEST_CASE("cold projection: no projection without a probe, a small file is not probed", "[dataload][cold]") {
  StorageProbe failed;
  failed.why_not = "cannot open with O_DIRECT: Invalid argument";
  auto c = ProjectColdCache(failed, Access::kMmap, Advice::kNormal, 8, 1023, 2, 128, 1, 0);
  CHECK_FALSE(c.available);
  CHECK(c.why_not == failed.why_not);
  CHECK(ProjectColdCache(StorageProbe{}, Access::kMmap, Advice::kNormal, 8, 1023, 2, 128, 1, 0).why_not ==
        "storage not probed");

  lmkit::test::TempDir dir;
  TokenShard shard;
  shard.path = dir.file("small.bin");
  lmkit::test::WriteAll(shard.path, std::string(4096, '\0'));
  shard.file_bytes = 4096;
  shard.tokens = 2048;
  auto probe = ProbeStorage(shard, 1);
  CHECK_FALSE(probe.ok);
  CHECK(probe.why_not == "file too small to probe the storage (< 64 KiB)");
}
