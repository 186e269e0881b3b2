#include "lmkit/common/thread_start.h"

#include <atomic>
#include <system_error>

namespace lmkit {
namespace {
std::atomic<int> starts_left{-1};  // < 0: no test limit
}  // namespace

void FailThreadStartsAfterForTesting(int n) { starts_left.store(n < 0 ? -1 : n); }

bool TryStartThread(std::vector<std::thread>& threads, std::function<void()> fn) {
  for (int left = starts_left.load(); left >= 0;) {
    if (left == 0) return false;
    if (starts_left.compare_exchange_weak(left, left - 1)) break;
  }
  try {
    threads.emplace_back(std::move(fn));
    return true;
  } catch (const std::system_error&) {  // pthread_create failed
    return false;
  } catch (const std::bad_alloc&) {  // no memory for the thread's state or the vector
    return false;
  }
}

SideThread::SideThread(std::function<void()> fn) {
  if (!TryStartThread(thread_, fn)) fn();
}

SideThread::~SideThread() { Join(); }

void SideThread::Join() {
  for (auto& t : thread_) t.join();
  thread_.clear();
}

}  // namespace lmkit
