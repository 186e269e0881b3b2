// The work queue of a one-rank job (a default Comm: rank 0 of 1): the root's own workers take every piece after its
// first exactly once, and there is nobody to serve. More ranks need an MPI launch (tests/cli).
#include "lmkit/dist/work_queue.h"

#include <catch2/catch.hpp>
#include <mutex>
#include <thread>
#include <vector>

using lmkit::dist::Comm;
using lmkit::dist::WorkQueue;

TEST_CASE("work queue: one rank takes pieces 1.. in order, then only past-the-end values", "[dist][work_queue]") {
  const Comm comm;
  REQUIRE(comm.root());
  REQUIRE(comm.size() == 1);
  WorkQueue q(comm, 4);
  CHECK(q.pieces() == 4);
  CHECK(q.served());  // no other rank to tell
  CHECK_FALSE(q.Poll());
  int calls = 0;
  q.Serve([&](uint64_t) { ++calls; });
  CHECK(calls == 0);
  // Rank 0 starts with piece 0; the queue hands out the rest.
  CHECK(q.TakeLocal() == 1);
  CHECK(q.TakeLocal() == 2);
  CHECK(q.TakeLocal() == 3);
  CHECK(q.TakeLocal() >= 4);
  CHECK(q.TakeLocal() >= 4);
}

TEST_CASE("work queue: TakeLocal from several threads hands each piece out once", "[dist][work_queue]") {
  const Comm comm;
  constexpr uint64_t kPieces = 1000;
  WorkQueue q(comm, kPieces);
  std::vector<int> taken(kPieces, 0);
  std::mutex mu;
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t)
    workers.emplace_back([&] {
      for (uint64_t k; (k = q.TakeLocal()) < kPieces;) {
        std::lock_guard<std::mutex> lock(mu);
        ++taken[k];
      }
    });
  for (auto& w : workers) w.join();
  CHECK(taken[0] == 0);  // the rank's first piece is never in the queue
  for (uint64_t k = 1; k < kPieces; ++k) CHECK(taken[k] == 1);
}
