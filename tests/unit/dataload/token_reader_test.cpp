#include "lmkit/dataload/token_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "lmkit/dataload/os_facts.h"
#include "lmkit/dataload/profile.h"
#include "support/run_lmkit.h"
#include "support/skip.h"

using namespace lmkit::dataload;
using lmkit::test::TempDir;
using lmkit::test::TestData;

namespace {

// A .bin of n uint16 tokens where token i = i mod 65536, written and fsynced (dirty pages cannot be evicted).
std::string WriteCounting(const TempDir& dir, const std::string& name, uint64_t n) {
  std::vector<uint16_t> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = static_cast<uint16_t>(i);
  const std::string path = dir.file(name);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, v.data(), n * 2) == static_cast<ssize_t>(n * 2));
  REQUIRE(::fsync(fd) == 0);
  ::close(fd);
  return path;
}

}  // namespace

TEST_CASE("token reader: mmap, pread and O_DIRECT read the same windows", "[dataload]") {
  TempDir dir;
  const std::string path = WriteCounting(dir, "count.bin", 200000);
  auto shards = OpenTokenShards({path}, lmkit::io::TokenDtype::kU16, 0);
  REQUIRE(shards.ok());
  for (Access a : {Access::kMmap, Access::kPread, Access::kDirect}) {
    for (Advice adv : {Advice::kNormal, Advice::kRandom}) {
      auto r = TokenReader::Open(*shards, a, adv);
      if (!r.ok() && r.status().code() == lmkit::ErrorCode::kUnsupported) {
        LMKIT_SKIP_PART("O_DIRECT not supported on this file system: " << r.status().ToString());
        continue;
      }
      REQUIRE(r.ok());
      ReaderScratch scratch;
      for (uint64_t start : {0ULL, 1ULL, 2047ULL, 2048ULL, 123457ULL, 200000ULL - 1025}) {
        std::vector<uint16_t> w(1025);
        REQUIRE((*r)->Read(0, start, 1025, reinterpret_cast<uint8_t*>(w.data()), &scratch).ok());
        bool ok = true;
        for (uint64_t i = 0; i < w.size(); ++i) ok = ok && w[i] == static_cast<uint16_t>(start + i);
        INFO(AccessName(a) << " " << AdviceName(adv) << " start " << start);
        CHECK(ok);
      }
    }
  }
}

TEST_CASE("token reader: .npy windows start after the header", "[dataload]") {
  auto shards = OpenTokenShards({TestData("dataload/tokens_u16.npy")}, lmkit::io::TokenDtype::kAuto, 0);
  REQUIRE(shards.ok());
  for (Access a : {Access::kMmap, Access::kPread}) {
    auto r = TokenReader::Open(*shards, a, Advice::kNormal);
    REQUIRE(r.ok());
    ReaderScratch scratch;
    std::vector<uint16_t> w(5);
    REQUIRE((*r)->Read(0, 2995, 5, reinterpret_cast<uint8_t*>(w.data()), &scratch).ok());
    for (uint64_t i = 0; i < 5; ++i) CHECK(w[i] == (2995 + i) * 7919 % 50257);
  }
}

TEST_CASE("cold cache: per-batch eviction makes storage read more than the windows (amplification > 1)", "[dataload]") {
  TempDir dir;
  const std::string path = WriteCounting(dir, "cold.bin", 4u << 20);  // 8 MB
  REQUIRE(EvictFile(path).ok());
  auto resident = ResidentBytes(path);
  REQUIRE(resident.ok());
  if (*resident > (4u << 20)) {
    LMKIT_SKIP("posix_fadvise(DONTNEED) has no effect on this file system (" << FileSystemFactsFor(path).fs_type
                                                                             << "): cold-cache test");
  }
  const IoCounters probe0 = ReadIoCounters();
  REQUIRE(WarmFile(path).ok());
  if (ReadIoCounters().read_bytes == probe0.read_bytes) {
    LMKIT_SKIP("/proc/self/io read_bytes does not count reads here: cold-cache test");
  }
  DataloadRequest o;
  o.paths = {path};
  o.steps = 8;
  o.warmup = 1;
  o.config.batch_size = 4;
  o.config.context_length = 1024;
  o.config.access = Access::kPread;
  o.config.advice = Advice::kRandom;
  o.config.cache = CacheMode::kColdEach;
  auto rep = RunDataload(o, nullptr);
  REQUIRE(rep.ok());
  const RunResult& r = rep->runs[0];
  CHECK(r.eviction_effective);
  // Each 2,050-byte window costs the 1–2 pages it spans: ≈ 3× (reference: 3× measured with pread / MADV_RANDOM).
  CHECK(r.read_amplification > 1.0);
  CHECK(r.read_amplification < 10.0);
  CHECK(r.read_bytes >= r.useful_bytes);
}
