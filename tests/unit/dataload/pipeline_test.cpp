// The batch pipeline's threads: batches consumed in order whatever the workers' timing, errors stop it cleanly.
#include "lmkit/dataload/pipeline.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

using namespace lmkit::dataload;
using lmkit::Status;

TEST_CASE("pipeline: batches reach the consumer in order, each once", "[dataload][pipeline]") {
  for (unsigned workers : {1u, 3u}) {
    for (unsigned depth : {1u, 2u, 5u}) {
      std::vector<uint64_t> slot_batch(depth, UINT64_MAX), seen;
      uint64_t produced = 0;
      const Status st = RunOrderedBatches(
          workers, depth, 40,
          [&](uint64_t b, size_t slot, unsigned worker) {
            REQUIRE(worker < workers);
            // Uneven work: later batches can finish before earlier ones.
            std::this_thread::sleep_for(std::chrono::microseconds((b * 7919) % 300));
            slot_batch[slot] = b;
            return Status::Ok();
          },
          [&](uint64_t b, size_t slot, double wait_s) {
            CHECK(slot_batch[slot] == b);
            CHECK(wait_s >= 0);
            seen.push_back(b);
            return true;
          },
          &produced);
      REQUIRE(st.ok());
      CHECK(produced == 40);
      REQUIRE(seen.size() == 40);
      for (uint64_t i = 0; i < 40; ++i) CHECK(seen[i] == i);
    }
  }
}

TEST_CASE("pipeline: the consumer stops it, and a produce error is returned after the batches before it",
          "[dataload][pipeline]") {
  std::vector<uint64_t> seen;
  Status st = RunOrderedBatches(
      2, 3, UINT64_MAX, [](uint64_t, size_t, unsigned) { return Status::Ok(); },
      [&](uint64_t b, size_t, double) {
        seen.push_back(b);
        return b < 9;
      },
      nullptr);
  CHECK(st.ok());
  CHECK(seen.size() == 10);
  seen.clear();
  st = RunOrderedBatches(
      2, 3, 100,
      [](uint64_t b, size_t, unsigned) { return b == 6 ? Status::Io("f.bin", "read failed") : Status::Ok(); },
      [&](uint64_t b, size_t, double) {
        seen.push_back(b);
        return true;
      },
      nullptr);
  CHECK(st.ToString() == "f.bin: read failed");
  CHECK(seen == std::vector<uint64_t>{0, 1, 2, 3, 4, 5});
}
