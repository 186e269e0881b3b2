// Read-only mappings of whole files: content, the empty file, the errors, and ownership moving with the object.
#include "lmkit/common/mapped_file.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>

#include "support/run_lmkit.h"

using lmkit::MappedFile;

TEST_CASE("mapped file: content, empty file, missing file, directory", "[common][mmap]") {
  lmkit::test::TempDir dir;
  lmkit::test::WriteAll(dir.file("a"), "abc");
  lmkit::test::WriteAll(dir.file("empty"), "");
  auto a = MappedFile::Open(dir.file("a"));
  REQUIRE(a.ok());
  CHECK(a->view() == "abc");
  auto e = MappedFile::Open(dir.file("empty"));
  REQUIRE(e.ok());
  CHECK(e->size() == 0);
  auto m = MappedFile::Open(dir.file("missing"));
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == lmkit::ErrorCode::kNotFound);
  auto d = MappedFile::Open(dir.path());
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().message().find("directory") != std::string::npos);
}

TEST_CASE("mapped file: a move hands the mapping over, advice never changes the bytes", "[common][mmap]") {
  lmkit::test::TempDir dir;
  std::string content(3 * 4096 + 17, 'x');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>('a' + i % 26);
  lmkit::test::WriteAll(dir.file("f"), content);
  auto a = MappedFile::Open(dir.file("f"));
  REQUIRE(a.ok());
  const uint8_t* data = a->data();
  MappedFile b = std::move(*a);
  CHECK(b.data() == data);
  CHECK(b.path() == dir.file("f"));
  CHECK(a->data() == nullptr);  // NOLINT(bugprone-use-after-move): owns nothing, so it unmaps nothing
  CHECK(a->size() == 0);
  b.Advise(MappedFile::Advice::kSequential);
  b.Advise(MappedFile::Advice::kDontNeed, 4000, 200);     // straddles a page boundary
  b.Advise(MappedFile::Advice::kWillNeed, 1 << 30, 100);  // past the end: clamped
  CHECK(b.view() == content);
  MappedFile c;
  c = std::move(b);
  CHECK(c.view().substr(4096, 3) == content.substr(4096, 3));
  CHECK(c.size() == content.size());
}
