// Starting threads when the system may refuse them.
//
// Contract: TryStartThread appends a running thread to `threads` and returns true, or returns false and appends
// nothing when the system refuses (EAGAIN under RLIMIT_NPROC, no address space for a stack under RLIMIT_AS). lmkit's
// policy on a refusal is to go on with the threads it has (the calling thread always remains), never to abort or hang:
// results do not depend on the thread count (docs/cli.md), so a run on fewer threads is only slower. A measurement
// whose subject is the thread count (dataload) makes a refusal an error instead. Thread-safe.
#pragma once

#include <functional>
#include <thread>
#include <vector>

namespace lmkit {

// The most threads one request may use; a larger request is an error at the front end, and the core clamps to it.
constexpr unsigned kMaxThreads = 1024;

bool TryStartThread(std::vector<std::thread>& threads, std::function<void()> fn);

// Runs `fn` on a thread of its own, or at once on the calling thread when the system refuses one (TryStartThread):
// the work is the same, it only no longer overlaps what the caller does next. Join (or the destructor) waits for it.
class SideThread {
 public:
  explicit SideThread(std::function<void()> fn);
  ~SideThread();
  SideThread(const SideThread&) = delete;
  SideThread& operator=(const SideThread&) = delete;
  void Join();

 private:
  std::vector<std::thread> thread_;
};

// For tests: the next `n` thread starts succeed and every later one fails as a refusal would (n < 0: no limit again).
void FailThreadStartsAfterForTesting(int n);

}  // namespace lmkit
