// What the OS says about token files: page-cache residency after warming, eviction requests and their errors, the
// process's read counters, the file system under a path.
#include "lmkit/dataload/os_facts.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "support/run_lmkit.h"

using namespace lmkit::dataload;
using lmkit::ErrorCode;

TEST_CASE("os facts: a warmed file is resident to its last byte, an empty one holds none", "[dataload][os_facts]") {
  REQUIRE(PageSize() == static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)));
  lmkit::test::TempDir dir;
  const std::string path = dir.file("tokens.bin");
  const uint64_t size = 3 * PageSize() + 100;  // the last page is partial: counted by its bytes
  lmkit::test::WriteAll(path, std::string(size, 'x'));
  const IoCounters before = ReadIoCounters();
  REQUIRE(WarmFile(path).ok());
  const IoCounters after = ReadIoCounters();
  auto resident = ResidentBytes(path);
  REQUIRE(resident.ok());
  CHECK(*resident == size);
  if (before.rchar > 0) CHECK(after.rchar - before.rchar >= size);  // every byte went through pread once
  CHECK(after.minor_faults >= before.minor_faults);

  lmkit::test::WriteAll(dir.file("empty"), "");
  auto none = ResidentBytes(dir.file("empty"));
  REQUIRE(none.ok());
  CHECK(*none == 0);
}

TEST_CASE("os facts: missing files and bad descriptors are errors naming the file", "[dataload][os_facts]") {
  lmkit::test::TempDir dir;
  const std::string missing = dir.file("missing.bin");
  for (const lmkit::Status& s : {ResidentBytes(missing).status(), EvictFile(missing), WarmFile(missing)}) {
    CHECK(s.code() == ErrorCode::kNotFound);
    CHECK(s.subject() == missing);
  }
  const lmkit::Status bad = EvictFileRange(-1, 0, 0, "shard-3.bin");
  CHECK(bad.code() == ErrorCode::kIo);
  CHECK(bad.subject() == "shard-3.bin");
  CHECK(bad.message().rfind("posix_fadvise(DONTNEED) failed", 0) == 0);
  lmkit::test::WriteAll(dir.file("f"), "abc");
  CHECK(EvictFile(dir.file("f")).ok());  // a request: whether the pages go is the file system's choice
}

TEST_CASE("os facts: the file system under a path", "[dataload][os_facts]") {
  // procfs (magic 0x9fa0) has no name in the table: its magic is printed.
  const FileSystemFacts proc = FileSystemFactsFor("/proc");
  CHECK(proc.fs_type == "0x9fa0");
  lmkit::test::TempDir dir;
  const FileSystemFacts tmp = FileSystemFactsFor(dir.path());
  CHECK_FALSE(tmp.fs_type.empty());
  CHECK(tmp.block_size > 0);
  struct stat st {};
  REQUIRE(::stat(dir.path().c_str(), &st) == 0);
  CHECK(tmp.device == std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)));
  const FileSystemFacts nowhere = FileSystemFactsFor(dir.file("missing"));
  CHECK(nowhere.fs_type.empty());
  CHECK(nowhere.read_ahead_kb == -1);
}
