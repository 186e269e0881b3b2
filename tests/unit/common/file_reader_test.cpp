#include "lmkit/common/file_reader.h"

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
