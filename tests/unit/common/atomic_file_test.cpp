#include "lmkit/common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

#include "support/run_lmkit.h"

using lmkit::AtomicFile;
using lmkit::test::ListDir;
using lmkit::test::ReadAll;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;

TEST_CASE("atomic file: commit replaces the destination with the full content", "[common][atomic]") {
  TempDir dir;
  std::string path = dir.file("out.bin");
  WriteAll(path, "old");
  {
    auto f = AtomicFile::Create(path);
    REQUIRE(f.ok());
    REQUIRE(f->Write("hello ").ok());
    std::string big(3 << 20, 'x');  // larger than the buffer: exercises the direct-write path
    REQUIRE(f->Write(big).ok());
    // Until Commit the old content is what a reader sees.
    CHECK(ReadAll(path) == "old");
    REQUIRE(f->Commit().ok());
  }
  std::string got = ReadAll(path);
  CHECK(got.size() == 6 + (3u << 20));
  CHECK(got.substr(0, 6) == "hello ");
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"out.bin"});
}

TEST_CASE("atomic file: abandoning leaves no file and keeps the old one", "[common][atomic]") {
  TempDir dir;
  std::string path = dir.file("out.txt");
  WriteAll(path, "keep me");
  {
    auto f = AtomicFile::Create(path);
    REQUIRE(f.ok());
    REQUIRE(f->Write("partial").ok());
  }  // destroyed without Commit
  CHECK(ReadAll(path) == "keep me");
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"out.txt"});

  std::string fresh = dir.file("new.txt");
  {
    auto f = AtomicFile::Create(fresh);
    REQUIRE(f.ok());
    REQUIRE(f->Write("partial").ok());
    f->Abort();
  }
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"out.txt"});
}

TEST_CASE("atomic file: WriteAt patches a header after the body", "[common][atomic]") {
  TempDir dir;
  std::string path = dir.file("h.bin");
  auto f = AtomicFile::Create(path);
  REQUIRE(f.ok());
  REQUIRE(f->Write("????body").ok());
  REQUIRE(f->WriteAt(0, "HEAD", 4).ok());
  REQUIRE(f->Write("!").ok());
  REQUIRE(f->Commit().ok());
  CHECK(ReadAll(path) == "HEADbody!");
}

TEST_CASE("atomic file: a missing directory is a not-found error naming the path", "[common][atomic]") {
  auto f = AtomicFile::Create("/nonexistent-lmkit-dir/x.bin");
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().code() == lmkit::ErrorCode::kNotFound);
  CHECK(f.status().ToString().find("/nonexistent-lmkit-dir/x.bin") != std::string::npos);
}

TEST_CASE("atomic file: a reserved region is filled from several threads while appends continue after it",
          "[common][atomic]") {
  TempDir dir;
  std::string path = dir.file("r.bin");
  auto f = AtomicFile::Create(path);
  REQUIRE(f.ok());
  REQUIRE(f->Write("ab").ok());  // buffered: ReserveRegion must flush it first
  auto region = f->ReserveRegion(8);
  REQUIRE(region.ok());
  CHECK(*region == 2);
  CHECK(f->bytes_written() == 10);
  REQUIRE(f->Write("yz").ok());
  bool ok1 = false, ok2 = false;  // checked on this thread: Catch's assertion macros are not thread-safe
  std::thread t1([&] { ok1 = f->WriteRegion(*region + 4, "4567", 4).ok(); });
  std::thread t2([&] { ok2 = f->WriteRegion(*region, "0123", 4).ok(); });
  t1.join();
  t2.join();
  REQUIRE(ok1);
  REQUIRE(ok2);
  REQUIRE(f->Commit().ok());
  CHECK(ReadAll(path) == "ab01234567yz");
}

// A FIFO stands in for /dev/null, /dev/full or /dev/stdout: renaming a temporary file onto such a destination replaced
// the node itself with a plain file (run as root, `-o /dev/null` destroyed /dev/null for the whole machine).
TEST_CASE("atomic file: a FIFO destination is written in place, not replaced", "[common][atomic]") {
  TempDir dir;
  std::string fifo = dir.file("pipe");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // A non-blocking reader opened first, so the writer's open does not wait and the test cannot hang.
  const int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(rd >= 0);
  {
    auto f = AtomicFile::Create(fifo);
    REQUIRE(f.ok());
    REQUIRE(f->Write("through the pipe").ok());
    REQUIRE(f->Commit().ok());
  }
  char buf[64] = {};
  const ssize_t n = ::read(rd, buf, sizeof(buf));
  ::close(rd);
  CHECK(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0) == "through the pipe");
  struct stat st {};
  REQUIRE(::stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"pipe"});
}

TEST_CASE("atomic file: a directory destination is refused before anything is written", "[common][atomic]") {
  TempDir dir;
  auto f = AtomicFile::Create(dir.path());
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().code() == lmkit::ErrorCode::kInvalidInput);
  CHECK(f.status().ToString() == dir.path() + ": is a directory");
}

TEST_CASE("atomic file: CommitAll renames nothing when one of the outputs cannot be written", "[common][atomic]") {
  TempDir dir;
  const std::string main_out = dir.file("main.bin"), report = dir.file("report.json");
  WriteAll(main_out, "old main");
  WriteAll(report, "old report");
  {
    auto a = AtomicFile::Create(main_out);
    auto b = AtomicFile::Create(report);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(a->Write("new main").ok());
    REQUIRE(b->Write("new report").ok());
    REQUIRE(lmkit::CommitAll({&*a, &*b}).ok());
  }
  CHECK(ReadAll(main_out) == "new main");
  CHECK(ReadAll(report) == "new report");
  struct stat st {};
  if (::stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)) {
    // The report goes to a full device: its write fails at Sync, before the main output is renamed.
    auto a = AtomicFile::Create(main_out);
    auto b = AtomicFile::Create("/dev/full");
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(a->Write("newer main").ok());
    REQUIRE(b->Write("report").ok());
    lmkit::Status s = lmkit::CommitAll({&*a, &*b});
    CHECK(s.ToString() == "/dev/full: write failed: No space left on device");
    CHECK(ReadAll(main_out) == "new main");
    CHECK(ListDir(dir.path()) == std::vector<std::string>{"main.bin", "report.json"});
  }
}
