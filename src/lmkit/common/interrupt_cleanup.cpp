#include "lmkit/common/interrupt_cleanup.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace lmkit {
namespace {

// A fixed registry that a signal handler can walk without allocating: slot state 0 = free, 1 = claimed (path being
// written), 2 = live (path valid). Sized well above what one command keeps at once (a tokenizer directory: a staging
// directory, three files and their temporaries).
constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
std::atomic<int> g_state[kSlots];
char g_paths[kSlots][kPathMax];

extern "C" void OnTerminatingSignal(int sig) {
  const int saved = errno;
  // Files first, then directories: rmdir succeeds only once a staging directory is empty.
  for (int i = 0; i < kSlots; ++i)
    if (g_state[i].load() == 2) ::unlink(g_paths[i]);
  for (int i = 0; i < kSlots; ++i)
    if (g_state[i].load() == 2) ::rmdir(g_paths[i]);
  errno = saved;
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

int RegisterCleanup(const std::string& path) {
  if (path.size() >= kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_state[i].compare_exchange_strong(expected, 1)) {
      std::memcpy(g_paths[i], path.c_str(), path.size() + 1);
      g_state[i].store(2);
      return i;
    }
  }
  return -1;
}

void UnregisterCleanup(int slot) {
  if (slot >= 0 && slot < kSlots) g_state[slot].store(0);
}

void InstallInterruptCleanup() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = OnTerminatingSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &sa, nullptr);
  }
  ::signal(SIGXFSZ, SIG_IGN);
}

}  // namespace lmkit
