#include "lmkit/common/file_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "support/run_lmkit.h"

using lmkit::ErrorCode;
using lmkit::FileReader;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;

TEST_CASE("file reader: positional reads return the bytes at the offset", "[common][file_reader]") {
  TempDir dir;
  std::string path = dir.file("f.bin");
  std::string content;
  for (int i = 0; i < 100000; ++i) content += static_cast<char>('a' + i % 26);
  WriteAll(path, content);
  auto r = FileReader::Open(path);
  REQUIRE(r.ok());
  CHECK(r->size() == content.size());
  std::string got(7, '\0');
  REQUIRE(r->ReadAt(12345, got.data(), got.size()).ok());
  CHECK(got == content.substr(12345, 7));
  std::string all(content.size(), '\0');
  REQUIRE(r->ReadAt(0, all.data(), all.size()).ok());
  CHECK(all == content);
}

TEST_CASE("file reader: reading past the end, a missing file and a directory are one-line errors",
          "[common][file_reader]") {
  TempDir dir;
  std::string path = dir.file("short.bin");
  WriteAll(path, "0123456789");
  auto r = FileReader::Open(path);
  REQUIRE(r.ok());
  char buf[8];
  auto st = r->ReadAt(6, buf, 8);
  CHECK(st.code() == ErrorCode::kInvalidInput);
  CHECK(st.subject() == path);
  CHECK(st.message() == "truncated: file ended at byte 10 while reading (did it change during the run?)");
  CHECK(FileReader::Open(dir.file("none.bin")).status().code() == ErrorCode::kNotFound);
  auto d = FileReader::Open(dir.path());
  CHECK(d.status().code() == ErrorCode::kInvalidInput);
  CHECK(d.status().message() == "is a directory, expected a file");
}

// #31 item 2: `lmkit flops /dev/zero` grew without bound, a FIFO without a writer blocked the open.
TEST_CASE("file reader: whole-file reads refuse devices and FIFOs and cap the size", "[common][file_reader]") {
  TempDir dir;
  auto zero = lmkit::ReadFileToString("/dev/zero");
  CHECK(zero.status().ToString() == "/dev/zero: is a device, expected a regular file");
  const std::string fifo = dir.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK(lmkit::ReadFileToString(fifo).status().ToString() == fifo + ": is a pipe (FIFO), expected a regular file");
  CHECK(FileReader::Open(fifo).status().code() == ErrorCode::kInvalidInput);
  const std::string link = dir.file("config.json");
  REQUIRE(::symlink("/dev/zero", link.c_str()) == 0);
  CHECK(lmkit::ReadFileToString(link).status().ToString() == link + ": is a device, expected a regular file");
  const std::string big = dir.file("big.json");
  WriteAll(big, std::string(1000, ' '));
  CHECK(lmkit::ReadFileToString(big, 1000).ok());
  CHECK(lmkit::ReadFileToString(big, 999).status().ToString() ==
        big + ": is 1000 bytes, over the 999 bytes limit for this kind of file");
  CHECK(lmkit::ReadFileToString(big, 512 << 10).value().size() == 1000);
  CHECK(lmkit::kMaxWholeFileBytes == uint64_t{256} << 20);
}
