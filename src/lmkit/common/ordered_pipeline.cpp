#include "lmkit/common/ordered_pipeline.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lmkit/common/thread_start.h"

namespace lmkit {

size_t PipelineRing(const PipelineOptions& o) {
  const unsigned workers = std::min(o.workers, kMaxThreads);
  if (o.ring > 0) return o.ring;
  return workers == 0 ? 1 : size_t{2} * workers;
}

namespace {

// Sequence counters, guarded by mu: consumed <= claimed <= filled, filled - consumed <= ring. Item n is in slot
// n % ring; done[slot] says its work has finished (status[slot] is its result).
class Pipeline {
 public:
  Pipeline(const PipelineOptions& o, const PipelineStages& s)
      : stages_(s),
        ring_(PipelineRing(o)),
        max_workers_(std::min(o.workers, kMaxThreads)),
        all_workers_(o.all_workers),
        done_(ring_, 0),
        status_(ring_) {}

  ~Pipeline() { Stop(); }

  Result<PipelineRun> Run() {
    bool eof = false, stopped = false;
    Status produce_error;  // reported once the items before it are consumed, so errors come in item order
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (error_) break;
      const size_t oldest = consumed_ % ring_;
      if (consumed_ < filled_ && done_[oldest]) {
        lock.unlock();
        if (!status_[oldest].ok()) return Finish(status_[oldest]);
        auto more = stages_.consume(oldest);
        if (!more.ok()) return Finish(more.status());
        lock.lock();
        done_[oldest] = 0;
        ++consumed_;
        if (!*more) {
          stopped = true;
          break;
        }
        continue;
      }
      if (max_workers_ == 0 && claimed_ < filled_) {  // no worker: the calling thread does the work
        const size_t slot = claimed_++ % ring_;
        lock.unlock();
        status_[slot] = stages_.work(slot, 0);
        lock.lock();
        done_[slot] = 1;
        continue;
      }
      if (!eof && filled_ - consumed_ < ring_) {
        const size_t slot = filled_ % ring_;
        lock.unlock();
        auto more = stages_.produce(slot);
        lock.lock();
        if (!more.ok()) {
          produce_error = more.status();
          eof = true;
          continue;
        }
        if (!*more) {
          eof = true;
          continue;
        }
        ++filled_;
        cv_work_.notify_one();
        if (workers_.size() < max_workers_ && filled_ > workers_.size()) {
          lock.unlock();
          Status started = StartWorker();
          if (!started.ok()) return Finish(started);
          lock.lock();
        }
        continue;
      }
      if (eof && consumed_ == filled_) break;
      cv_done_.wait(lock, [&] { return error_ || done_[consumed_ % ring_] != 0; });
    }
    lock.unlock();
    return Finish(stopped ? Status::Ok() : produce_error);
  }

 private:
  Status StartWorker() {
    const auto w = static_cast<unsigned>(workers_.size());
    if (stages_.prepare_worker) stages_.prepare_worker(w);
    if (workers_.capacity() == 0) workers_.reserve(max_workers_);
    if (TryStartThread(workers_, [this, w] { WorkerLoop(w); })) return Status::Ok();
    if (all_workers_)
      return Status::Io("", "the system refused to start worker thread " + std::to_string(w + 1) + " of " +
                                std::to_string(max_workers_) + " (a limit on processes or memory)");
    std::lock_guard<std::mutex> lock(mu_);
    max_workers_ = w;  // 0: the calling thread works from now on
    return Status::Ok();
  }

  void WorkerLoop(unsigned worker) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_work_.wait(lock, [&] { return stop_ || claimed_ < filled_; });
      if (stop_) return;
      const size_t slot = claimed_++ % ring_;
      lock.unlock();
      Status st;
      try {
        st = stages_.work(slot, worker);
      } catch (...) {
        lock.lock();
        if (!error_) error_ = std::current_exception();
        stop_ = true;
        cv_work_.notify_all();
        cv_done_.notify_all();
        return;
      }
      lock.lock();
      status_[slot] = std::move(st);
      done_[slot] = 1;
      cv_done_.notify_one();
    }
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_work_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  Result<PipelineRun> Finish(Status st) {
    const auto started = static_cast<unsigned>(workers_.size());
    Stop();
    if (error_) std::rethrow_exception(error_);
    if (!st.ok()) return st;
    return PipelineRun{consumed_, started, ring_};
  }

  const PipelineStages& stages_;
  const size_t ring_;
  unsigned max_workers_;
  const bool all_workers_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_work_;  // workers: an item was filled, or stop
  std::condition_variable cv_done_;  // calling thread: an item's work finished, or an exception
  size_t filled_ = 0, claimed_ = 0, consumed_ = 0;
  std::vector<char> done_;
  std::vector<Status> status_;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace

Result<PipelineRun> RunOrderedPipeline(const PipelineOptions& options, const PipelineStages& stages) {
  Pipeline p(options, stages);
  return p.Run();
}

}  // namespace lmkit
