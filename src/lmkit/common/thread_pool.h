// A fixed-size thread pool with a parallel-for.
//
// Contract: ThreadPool(n) starts n-1 workers (n clamped to kMaxThreads); the calling thread is the n-th and takes part
// in ParallelFor, so ThreadPool(1) runs everything inline with no threads. When the system refuses a thread the pool
// keeps the ones it got (thread_start.h): size() is the number actually running, at least 1. ParallelFor(count, fn)
// calls fn(i, worker) for every i in [0, count) exactly once and returns when all calls are done; `worker` is in [0,
// size()) and is unique among calls running at the same time (use it to index per-worker scratch). Items are handed out
// dynamically, so the order of calls is unspecified: callers that need deterministic output write results by index and
// reduce in index order. ParallelFor is not reentrant (do not call it from inside fn). An exception thrown by fn is
// rethrown in the caller after all items finished. DefaultThreadCount() is the number of CPUs this process may use.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lmkit {

unsigned DefaultThreadCount();

class ThreadPool {
 public:
  explicit ThreadPool(unsigned threads = DefaultThreadCount());
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }
  void ParallelFor(size_t count, const std::function<void(size_t index, unsigned worker)>& fn);

 private:
  void WorkerLoop(unsigned worker);
  void RunItems(unsigned worker);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  std::condition_variable cv_done_;
  const std::function<void(size_t, unsigned)>* job_ = nullptr;
  size_t count_ = 0;
  size_t next_ = 0;
  size_t generation_ = 0;
  unsigned active_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace lmkit
