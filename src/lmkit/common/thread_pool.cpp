#include "lmkit/common/thread_pool.h"

#include <sched.h>

#include <algorithm>

#include "lmkit/common/thread_start.h"

namespace lmkit {

unsigned DefaultThreadCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return std::min(static_cast<unsigned>(n), kMaxThreads);
  }
  unsigned n = std::thread::hardware_concurrency();
  return std::clamp(n, 1u, kMaxThreads);
}

ThreadPool::ThreadPool(unsigned threads) {
  threads = std::clamp(threads, 1u, kMaxThreads);
  workers_.reserve(threads - 1);
  for (unsigned i = 1; i < threads; ++i)
    if (!TryStartThread(workers_, [this, i] { WorkerLoop(i); })) break;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::RunItems(unsigned worker) {
  for (;;) {
    size_t i;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= count_) return;
      i = next_++;
    }
    try {
      (*job_)(i, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void ThreadPool::WorkerLoop(unsigned worker) {
  size_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ++active_;
    }
    RunItems(worker);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --active_;
    }
    cv_done_.notify_all();
  }
}

void ThreadPool::ParallelFor(size_t count, const std::function<void(size_t, unsigned)>& fn) {
  if (count == 0) return;
  if (workers_.empty() || count == 1) {
    for (size_t i = 0; i < count; ++i) fn(i, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    count_ = count;
    next_ = 0;
    error_ = nullptr;
    ++generation_;
  }
  cv_start_.notify_all();
  RunItems(0);
  std::exception_ptr err;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_done_.wait(lock, [&] { return active_ == 0 && next_ >= count_; });
    job_ = nullptr;
    err = error_;
    error_ = nullptr;
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace lmkit
