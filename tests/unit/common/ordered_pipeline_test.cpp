#include "lmkit/common/ordered_pipeline.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmkit/common/thread_start.h"

using lmkit::PipelineOptions;
using lmkit::PipelineRun;
using lmkit::PipelineStages;
using lmkit::Result;
using lmkit::RunOrderedPipeline;
using lmkit::Status;

namespace {

// Items 0..n-1: produce puts i in a slot, work squares it (after a delay that varies by item, so workers finish out
// of order), consume appends the result. `fail_work_at` / `fail_produce_at` / `stop_at` inject an error or an early
// stop at that item.
struct Squares {
  uint64_t n = 200;
  int64_t fail_work_at = -1, fail_produce_at = -1, stop_at = -1, throw_at = -1;
  std::vector<uint64_t> slots;
  std::vector<uint64_t> out;
  uint64_t next = 0;
  std::atomic<unsigned> max_worker{0};
  std::vector<unsigned> prepared;

  Result<PipelineRun> Run(const PipelineOptions& o) {
    slots.assign(lmkit::PipelineRing(o), 0);
    PipelineStages s;
    s.prepare_worker = [&](unsigned w) { prepared.push_back(w); };
    s.produce = [&](size_t slot) -> Result<bool> {
      if (next == n) return false;
      if (static_cast<int64_t>(next) == fail_produce_at) return Status::InvalidInput("in", "bad item");
      slots[slot] = next++;
      return true;
    };
    s.work = [&](size_t slot, unsigned w) -> Status {
      unsigned m = max_worker.load();
      while (w > m && !max_worker.compare_exchange_weak(m, w)) {
      }
      const uint64_t v = slots[slot];
      std::this_thread::sleep_for(std::chrono::microseconds((v * 37) % 5 * 50));
      if (static_cast<int64_t>(v) == throw_at) throw std::runtime_error("boom");
      if (fail_work_at >= 0 && (static_cast<int64_t>(v) == fail_work_at || static_cast<int64_t>(v) == fail_work_at + 3))
        return Status::InvalidInput("item " + std::to_string(v), "cannot work");
      slots[slot] = v * v;
      return Status::Ok();
    };
    s.consume = [&](size_t slot) -> Result<bool> {
      out.push_back(slots[slot]);
      return static_cast<int64_t>(out.size()) != stop_at;
    };
    return RunOrderedPipeline(o, s);
  }
};

std::vector<uint64_t> Expected(uint64_t n) {
  std::vector<uint64_t> v;
  for (uint64_t i = 0; i < n; ++i) v.push_back(i * i);
  return v;
}

}  // namespace

TEST_CASE("ordered pipeline: results come out in input order for any worker count", "[common][pipeline]") {
  for (unsigned workers : {0u, 1u, 2u, 3u, 8u}) {
    for (size_t ring : {size_t{0}, size_t{1}, size_t{3}}) {
      Squares sq;
      PipelineOptions o;
      o.workers = workers;
      o.ring = ring;
      auto run = sq.Run(o);
      INFO("workers " << workers << " ring " << ring);
      REQUIRE(run.ok());
      CHECK(sq.out == Expected(sq.n));
      CHECK(run->consumed == sq.n);
      CHECK(run->workers == workers);
      CHECK(sq.max_worker.load() < std::max(1u, workers));
    }
  }
}

TEST_CASE("ordered pipeline: workers start as items arrive", "[common][pipeline]") {
  Squares sq;
  sq.n = 3;
  PipelineOptions o;
  o.workers = 64;
  auto run = sq.Run(o);
  REQUIRE(run.ok());
  CHECK(sq.out == Expected(3));
  CHECK(run->workers <= 3);
  CHECK(sq.prepared.size() == run->workers);
  Squares none;
  none.n = 0;
  auto empty = none.Run(o);
  REQUIRE(empty.ok());
  CHECK(empty->workers == 0);
  CHECK(none.out.empty());
}

TEST_CASE("ordered pipeline: the first error in item order ends the run", "[common][pipeline]") {
  for (unsigned workers : {0u, 4u}) {
    Squares sq;
    sq.fail_work_at = 50;  // and 53
    PipelineOptions o;
    o.workers = workers;
    auto run = sq.Run(o);
    REQUIRE_FALSE(run.ok());
    CHECK(run.status().ToString() == "item 50: cannot work");
    CHECK(sq.out == Expected(50));
  }
  Squares produce_fails;
  produce_fails.fail_produce_at = 7;
  PipelineOptions o;
  o.workers = 3;
  auto run = produce_fails.Run(o);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().ToString() == "in: bad item");
  CHECK(produce_fails.out == Expected(7));  // the items before it, then its error
  Squares both;
  both.fail_produce_at = 60;
  both.fail_work_at = 40;
  auto first = both.Run(o);
  REQUIRE_FALSE(first.ok());
  CHECK(first.status().ToString() == "item 40: cannot work");
}

TEST_CASE("ordered pipeline: consume can stop the run early", "[common][pipeline]") {
  Squares sq;
  sq.stop_at = 10;
  PipelineOptions o;
  o.workers = 4;
  auto run = sq.Run(o);
  REQUIRE(run.ok());
  CHECK(run->consumed == 10);
  CHECK(sq.out == Expected(10));
}

TEST_CASE("ordered pipeline: an exception in a worker reaches the caller after the workers stopped",
          "[common][pipeline]") {
  Squares sq;
  sq.throw_at = 20;
  PipelineOptions o;
  o.workers = 3;
  CHECK_THROWS_WITH(sq.Run(o), "boom");
}

TEST_CASE("ordered pipeline: refused threads give a smaller run with the same output, or an error when asked",
          "[common][pipeline][faults]") {
  for (int allowed : {0, 1, 2}) {
    Squares sq;
    PipelineOptions o;
    o.workers = 6;
    lmkit::FailThreadStartsAfterForTesting(allowed);
    auto run = sq.Run(o);
    lmkit::FailThreadStartsAfterForTesting(-1);
    REQUIRE(run.ok());
    CHECK(run->workers == static_cast<unsigned>(allowed));
    CHECK(sq.out == Expected(sq.n));
  }
  Squares strict;
  PipelineOptions o;
  o.workers = 4;
  o.all_workers = true;
  lmkit::FailThreadStartsAfterForTesting(2);
  auto run = strict.Run(o);
  lmkit::FailThreadStartsAfterForTesting(-1);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().code() == lmkit::ErrorCode::kIo);
  CHECK(run.status().ToString() == "the system refused to start worker thread 3 of 4 (a limit on processes or memory)");
}
