// Removing temporary outputs when the process is killed by a signal.
//
// Contract: RegisterCleanup(path) records a path to remove if a terminating signal arrives (a temporary file, or a
// staging directory, which is removed after the files in it); it returns a slot for UnregisterCleanup, or -1 when the
// fixed registry is full (the path is then still removed on ordinary error paths, just not on a signal). Both are
// async-signal-safe with respect to the handler and may be called from any thread.
// InstallInterruptCleanup() installs, once from main(): on SIGINT, SIGTERM, SIGHUP and SIGPIPE, remove every registered
// path, then die of the signal with its default action (so the exit status says "killed by signal"); a signal the
// parent set to be ignored (nohup, a background job) stays ignored. SIGXFSZ is ignored, so a write past RLIMIT_FSIZE
// fails with EFBIG, which the writer reports and cleans up after, instead of killing the process.
#pragma once

#include <string>

namespace lmkit {

int RegisterCleanup(const std::string& path);
void UnregisterCleanup(int slot);
void InstallInterruptCleanup();

}  // namespace lmkit
