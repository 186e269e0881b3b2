#include "lmkit/common/thread_pool.h"

#include <sys/resource.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <vector>

#include "lmkit/common/thread_start.h"
#include "support/faults.h"
#include "support/skip.h"

using lmkit::ThreadPool;

namespace {

// Runs a ParallelFor over n items and checks each ran once on a valid worker; returns false otherwise.
bool CoversEveryItem(ThreadPool& pool, size_t n) {
  std::vector<std::atomic<int>> hits(n);
  std::atomic<bool> bad_worker{false};
  pool.ParallelFor(n, [&](size_t i, unsigned w) {
    hits[i].fetch_add(1);
    if (w >= pool.size()) bad_worker = true;
  });
  for (auto& h : hits)
    if (h.load() != 1) return false;
  return !bad_worker.load();
}

}  // namespace

TEST_CASE("thread pool: every item runs once, on a worker below size()", "[common][threads]") {
  for (unsigned n : {1u, 2u, 5u}) {
    ThreadPool pool(n);
    CHECK(pool.size() == n);
    CHECK(CoversEveryItem(pool, 1000));
  }
  CHECK(lmkit::DefaultThreadCount() >= 1);
  CHECK(lmkit::DefaultThreadCount() <= lmkit::kMaxThreads);
}

TEST_CASE("thread pool: refused threads leave a smaller pool that still does all the work", "[common][threads]") {
  for (int allowed : {0, 1, 3}) {
    lmkit::FailThreadStartsAfterForTesting(allowed);
    ThreadPool pool(8);
    lmkit::FailThreadStartsAfterForTesting(-1);
    CHECK(pool.size() == static_cast<unsigned>(allowed) + 1);
    CHECK(CoversEveryItem(pool, 777));
  }
}

TEST_CASE("thread pool: under RLIMIT_AS a pool of 64 gets fewer threads and finishes", "[common][threads][faults]") {
  if (lmkit::test::kSanitizerBuild) LMKIT_SKIP("sanitizer build: RLIMIT_AS cannot starve its shadow memory");
  const uint64_t now = lmkit::test::MappedBytes();
  if (now == 0) LMKIT_SKIP("no /proc/self/status VmSize");
  // Room for a few 8 MiB thread stacks (and their malloc arenas), not for 63.
  const int rc = lmkit::test::RunForked(
      [] {
        ThreadPool pool(64);
        if (pool.size() >= 64 || pool.size() < 1) return 2;
        return CoversEveryItem(pool, 5000) ? 0 : 3;
      },
      {{{RLIMIT_AS, now + (uint64_t{96} << 20)}}});
  CHECK(rc == 0);
}
