#include "support/run_lmkit.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

extern char** environ;

namespace lmkit::test {

namespace {

// Starts LMKIT_BINARY with `args` on the given pipe ends; with `limits`, through fork so that the child can set its
// resource limits before exec (posix_spawn cannot).
pid_t Spawn(const std::vector<std::string>& args, const ChildLimits& limits, int in_fd, int out_fd, int err_fd,
            const std::vector<int>& close_fds) {
  std::vector<std::string> argv_s;
  argv_s.push_back(LMKIT_BINARY);
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  if (!limits.rlimits.empty() || limits.as_nobody || limits.alarm_s > 0) {
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {  // only async-signal-safe calls from here on
      dup2(in_fd, 0);
      dup2(out_fd, 1);
      dup2(err_fd, 2);
      for (int fd : close_fds) close(fd);
      signal(SIGPIPE, SIG_DFL);
      for (const auto& [resource, value] : limits.rlimits) {
        const rlimit lim{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
        if (setrlimit(resource, &lim) != 0) _exit(125);
      }
      if (limits.as_nobody && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) _exit(125);
      if (limits.alarm_s > 0) alarm(limits.alarm_s);  // kept across execve
      execve(LMKIT_BINARY, argv.data(), environ);
      _exit(126);
    }
    return pid;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  for (int fd : close_fds) posix_spawn_file_actions_addclose(&fa, fd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  pid_t pid;
  if (posix_spawn(&pid, LMKIT_BINARY, &fa, &attr, argv.data(), environ) != 0)
    throw std::runtime_error("cannot spawn " LMKIT_BINARY);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return pid;
}

}  // namespace

RunResult RunLmkit(const std::vector<std::string>& args, const std::string& stdin_data) {
  return RunLmkitLimited(args, ChildLimits{}, stdin_data);
}

RunResult RunLmkitLimited(const std::vector<std::string>& args, const ChildLimits& limits,
                          const std::string& stdin_data) {
  // lmkit may exit (a usage error) before it reads the stdin we feed it: a write to that closed pipe must fail with
  // EPIPE here, not kill the test binary with SIGPIPE (a race that CI hit). The child gets the default disposition
  // back, so lmkit runs as it would from a shell.
  static const bool ignored = [] { return signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)ignored;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe(in_pipe) != 0 || pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = Spawn(args, limits, in_pipe[0], out_pipe[1], err_pipe[1],
                          {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]});
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);

  RunResult r;
  size_t in_off = 0;
  int in_fd = in_pipe[1];
  if (stdin_data.empty()) {
    close(in_fd);
    in_fd = -1;
  } else {
    fcntl(in_fd, F_SETFL, O_NONBLOCK);
  }
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open || in_fd >= 0) {
    pollfd fds[3];
    int n = 0;
    if (out_open) fds[n++] = {out_pipe[0], POLLIN, 0};
    if (err_open) fds[n++] = {err_pipe[0], POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (poll(fds, n, -1) < 0) continue;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        ssize_t w = write(in_fd, stdin_data.data() + in_off, stdin_data.size() - in_off);
        if (w > 0) in_off += static_cast<size_t>(w);
        if (w < 0 || in_off == stdin_data.size()) {
          close(in_fd);
          in_fd = -1;
        }
        continue;
      }
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        if (fds[i].fd == out_pipe[0])
          out_open = false;
        else
          err_open = false;
      } else if (fds[i].fd == out_pipe[0]) {
        r.out.append(buf, static_cast<size_t>(got));
      } else {
        r.err.append(buf, static_cast<size_t>(got));
      }
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

RunResult RunShell(const std::string& command) {
  RunResult r;
  FILE* f = popen((command + " 2>&1").c_str(), "r");
  if (f == nullptr) throw std::runtime_error("cannot run /bin/sh");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) r.out.append(buf, n);
  const int status = pclose(f);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/lmkit-test-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {
// Built by appending to a string of runtime length: GCC 12's -Warray-bounds misfires on `literal + "/" + s` once the
// literal (a checkout path, different in every clone) is inlined into a unity batch.
std::string PathUnderRoot(std::string_view root, const std::string& relative) {
  std::string path;
  path.reserve(root.size() + 1 + relative.size());
  path.append(root.data(), root.size());
  path.push_back('/');
  path.append(relative);
  return path;
}
}  // namespace

std::string TestData(const std::string& relative) { return PathUnderRoot(LMKIT_TEST_DATA_DIR, relative); }
std::string RepoPath(const std::string& relative) { return PathUnderRoot(LMKIT_REPO_DIR, relative); }

size_t CountOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string WriteTokenFile(const TempDir& dir, uint64_t n, uint16_t modulo) {
  std::string bytes(n * 2, '\0');
  for (uint64_t i = 0; i < n; ++i) {
    const auto v = static_cast<uint16_t>((i * 7919) % modulo);
    bytes[2 * i] = static_cast<char>(v & 0xff);
    bytes[2 * i + 1] = static_cast<char>(v >> 8);
  }
  WriteAll(dir.file("t.bin"), bytes);
  return dir.file("t.bin");
}

Json StdoutJson(const RunResult& r) {
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto j = ParseJson(r.out, "stdout");
  REQUIRE(j.ok());
  return *j;
}

}  // namespace lmkit::test
