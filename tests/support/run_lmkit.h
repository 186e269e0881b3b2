// Test helpers shared by every test file: run the built lmkit binary and capture stdout, stderr and the exit code;
// make scratch directories; find fixtures.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lmkit/common/json.h"

namespace lmkit::test {

struct RunResult {
  int exit_code = -1;  // 128+signal when killed by a signal
  std::string out;
  std::string err;
};

// Runs LMKIT_BINARY with `args` (no shell), feeding `stdin_data` on standard input.
RunResult RunLmkit(const std::vector<std::string>& args, const std::string& stdin_data = "");

// Resource limits for a child process (fault injection): {RLIMIT_AS, bytes}, {RLIMIT_FSIZE, bytes}, ... With
// `as_nobody` (only when the test runs as root) the child then becomes uid/gid 65534 before exec: RLIMIT_NPROC, which
// root ignores, then counts that user's threads only.
struct ChildLimits {
  std::vector<std::pair<int, uint64_t>> rlimits;
  bool as_nobody = false;
  unsigned alarm_s = 0;  // > 0: SIGALRM ends the child after this many seconds (exit 128+14): a hang fails fast
};
// RunLmkit with `limits` set in the child before it starts lmkit (exit 125: a limit or the uid could not be set).
RunResult RunLmkitLimited(const std::vector<std::string>& args, const ChildLimits& limits,
                          const std::string& stdin_data = "");

// Runs `command` with /bin/sh; `out` holds its stdout and stderr together (in the order written), `err` stays empty.
RunResult RunShell(const std::string& command);

// A fresh empty directory under $TMPDIR, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string TestData(const std::string& relative);  // tests/data/<relative>
std::string RepoPath(const std::string& relative);  // <repo>/<relative>
std::string ReadAll(const std::string& path);       // whole file; "" when missing
void WriteAll(const std::string& path, const std::string& content);
std::vector<std::string> ListDir(const std::string& path);  // names, sorted
// Writes dir/t.bin: n little-endian uint16 ids, id i = (i * 7919) % modulo (every id below modulo appears when n
// is large enough); returns its path.
std::string WriteTokenFile(const TempDir& dir, uint64_t n, uint16_t modulo);
// How many times `needle` occurs in `s` (overlapping occurrences counted).
size_t Count(const std::string& s, const std::string& needle);
// The one JSON document on a successful run's stdout; fails the test (showing stderr) on a non-zero exit or bad JSON.
Json StdoutJson(const RunResult& r);

}  // namespace lmkit::test
