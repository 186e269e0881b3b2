#include "lmkit/common/thread_start.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

using lmkit::FailThreadStartsAfterForTesting;
using lmkit::TryStartThread;

TEST_CASE("thread start: a refused start appends nothing and says so", "[common][threads]") {
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  FailThreadStartsAfterForTesting(2);
  CHECK(TryStartThread(threads, [&] { ++ran; }));
  CHECK(TryStartThread(threads, [&] { ++ran; }));
  CHECK_FALSE(TryStartThread(threads, [&] { ++ran; }));
  FailThreadStartsAfterForTesting(-1);
  CHECK(threads.size() == 2);
  CHECK(TryStartThread(threads, [&] { ++ran; }));
  for (auto& t : threads) t.join();
  CHECK(ran.load() == 3);
}
