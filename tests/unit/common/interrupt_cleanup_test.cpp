// Temporary outputs removed when a terminating signal arrives, files before their staging directory; the process
// still dies of the signal. Each case runs in a forked child, so the handlers never touch the test binary.
#include "lmkit/common/interrupt_cleanup.h"

#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "support/faults.h"
#include "support/run_lmkit.h"

using lmkit::test::RunForked;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;

TEST_CASE("interrupt cleanup: SIGTERM removes registered files and directories, then kills",
          "[common][interrupt_cleanup]") {
  TempDir dir;
  const std::string staging = dir.file("staging"), inside = staging + "/vocab.json.tmp", kept = dir.file("kept");
  std::filesystem::create_directory(staging);
  WriteAll(inside, "partial");
  WriteAll(kept, "done");
  const int rc = RunForked([&] {
    lmkit::InstallInterruptCleanup();
    // The directory registered before the file in it: removal still takes files first.
    if (lmkit::RegisterCleanup(staging) < 0 || lmkit::RegisterCleanup(inside) < 0) return 2;
    const int slot = lmkit::RegisterCleanup(kept);
    if (slot < 0) return 3;
    lmkit::UnregisterCleanup(slot);
    ::raise(SIGTERM);
    return 0;  // not reached
  });
  CHECK(rc == 128 + SIGTERM);
  CHECK_FALSE(std::filesystem::exists(inside));
  CHECK_FALSE(std::filesystem::exists(staging));
  CHECK(std::filesystem::exists(kept));  // unregistered: left alone
}

TEST_CASE("interrupt cleanup: an ignored signal stays ignored, the registry is bounded",
          "[common][interrupt_cleanup]") {
  TempDir dir;
  const std::string tmp = dir.file("out.tmp");
  WriteAll(tmp, "x");
  const int rc = RunForked([&] {
    ::signal(SIGHUP, SIG_IGN);  // as under nohup
    lmkit::InstallInterruptCleanup();
    if (lmkit::RegisterCleanup(tmp) < 0) return 2;
    ::raise(SIGHUP);
    // Still alive. Fill the registry: it holds a fixed number of paths and then refuses.
    int last = 0;
    for (int i = 0; i < 1000 && last >= 0; ++i) last = lmkit::RegisterCleanup("/nonexistent/slot");
    if (last != -1) return 4;
    if (lmkit::RegisterCleanup(std::string(5000, 'p')) != -1) return 5;  // longer than a path can be
    return 0;
  });
  CHECK(rc == 0);
  CHECK(std::filesystem::exists(tmp));
}
