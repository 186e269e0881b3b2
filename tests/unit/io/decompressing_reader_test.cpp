// DecompressingReader: gzip and zstd are detected from their magic bytes and decompressed exactly (several members or
// frames as one stream), in reads of any size, with seeks both ways; damaged and truncated streams are errors that
// name the file.
#include "lmkit/io/decompressing_reader.h"

#include <catch2/catch.hpp>

#include "support/corpus_fixtures.h"
#include "support/run_lmkit.h"

using lmkit::io::Compression;
using lmkit::io::DecompressingReader;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;

namespace {

// Reads everything in reads of `step` bytes.
std::string ReadAllIn(DecompressingReader& r, size_t step) {
  std::string out, buf(step, '\0');
  for (;;) {
    auto n = r.Read(buf.data(), buf.size());
    REQUIRE(n.ok());
    if (*n == 0) return out;
    out.append(buf.data(), *n);
  }
}

lmkit::Status ReadError(const std::string& path) {
  auto r = DecompressingReader::Open(path);
  if (!r.ok()) return r.status();
  std::string buf(1 << 16, '\0');
  for (;;) {
    auto n = (*r)->Read(buf.data(), buf.size());
    if (!n.ok()) return n.status();
    if (*n == 0) return lmkit::Status::Ok();
  }
}

}  // namespace

TEST_CASE("decompressing reader: compression comes from the magic bytes", "[io][corpus]") {
  CHECK(lmkit::io::DetectCompression("\x1f\x8b\x08") == Compression::kGzip);
  CHECK(lmkit::io::DetectCompression("\x28\xb5\x2f\xfd\x00") == Compression::kZstd);
  CHECK(lmkit::io::DetectCompression("\x28\xb5\x2f") == Compression::kNone);  // too short for zstd's magic
  CHECK(lmkit::io::DetectCompression("{\"text\"") == Compression::kNone);
  CHECK(lmkit::io::DetectCompression("") == Compression::kNone);
  CHECK(lmkit::io::CompressionName(Compression::kZstd) == "zstd");
}

TEST_CASE("decompressing reader: plain, gzip and zstd files give the same bytes in reads of any size", "[io][corpus]") {
  TempDir dir;
  const std::string text = lmkit::test::ReadAll(lmkit::test::TestData("bpe/corpus.en"));
  // A .txt name on compressed bytes: the name does not matter.
  WriteAll(dir.file("plain.txt"), text);
  WriteAll(dir.file("g.txt"), lmkit::test::Gzip(text));
  WriteAll(dir.file("z.txt"), lmkit::test::Zstd(text));
  const std::pair<const char*, Compression> files[] = {
      {"plain.txt", Compression::kNone}, {"g.txt", Compression::kGzip}, {"z.txt", Compression::kZstd}};
  for (const auto& [name, kind] : files) {
    for (size_t step : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20}) {
      if (step == 1 && kind != Compression::kNone) continue;  // a byte a read through a decoder: slow, no news
      INFO(name << " step " << step);
      auto r = DecompressingReader::Open(dir.file(name));
      REQUIRE(r.ok());
      CHECK((*r)->compression() == kind);
      CHECK((*r)->SizeHint() == (kind == Compression::kNone ? text.size() : 0));
      CHECK(ReadAllIn(**r, step) == text);
      CHECK((*r)->position() == text.size());
    }
  }
}

TEST_CASE("decompressing reader: several gzip members or zstd frames read as one stream", "[io][corpus]") {
  TempDir dir;
  const std::string a = "first part\n", b = std::string(100000, 'b') + "\n", c = "";
  WriteAll(dir.file("m.gz"), lmkit::test::Gzip(a) + lmkit::test::Gzip(b) + lmkit::test::Gzip(c));
  WriteAll(dir.file("f.zst"), lmkit::test::Zstd(a) + lmkit::test::Zstd(b) + lmkit::test::Zstd(c));
  for (const char* name : {"m.gz", "f.zst"}) {
    auto r = DecompressingReader::Open(dir.file(name));
    REQUIRE(r.ok());
    CHECK(ReadAllIn(**r, 4096) == a + b + c);
  }
}

TEST_CASE("decompressing reader: seeks forward and back", "[io][corpus]") {
  TempDir dir;
  const std::string text = lmkit::test::ReadAll(lmkit::test::TestData("bpe/corpus.en"));
  WriteAll(dir.file("plain"), text);
  WriteAll(dir.file("gz"), lmkit::test::Gzip(text));
  WriteAll(dir.file("zst"), lmkit::test::Zstd(text));
  for (const char* name : {"plain", "gz", "zst"}) {
    INFO(name);
    auto r = DecompressingReader::Open(dir.file(name));
    REQUIRE(r.ok());
    char buf[16];
    for (uint64_t pos : {uint64_t{100000}, uint64_t{3}, uint64_t{70000}, uint64_t{70010}, uint64_t{0}}) {
      REQUIRE((*r)->Seek(pos).ok());
      CHECK((*r)->position() == pos);
      auto n = (*r)->Read(buf, sizeof buf);
      REQUIRE(n.ok());
      CHECK(std::string(buf, *n) == text.substr(pos, sizeof buf));
    }
    REQUIRE((*r)->Seek(text.size() + 1000).ok());  // past the end: at the end
    CHECK((*r)->position() == text.size());
    auto n = (*r)->Read(buf, sizeof buf);
    REQUIRE(n.ok());
    CHECK(*n == 0);
  }
}

TEST_CASE("decompressing reader: truncated and damaged streams name the file", "[io][corpus]") {
  TempDir dir;
  const std::string text = lmkit::test::ReadAll(lmkit::test::TestData("bpe/corpus.en"));
  const std::string gz = lmkit::test::Gzip(text), zst = lmkit::test::Zstd(text);
  WriteAll(dir.file("cut.gz"), gz.substr(0, gz.size() / 2));
  WriteAll(dir.file("cut.zst"), zst.substr(0, zst.size() / 2));
  WriteAll(dir.file("tail.gz"), gz.substr(0, gz.size() - 3));  // the trailer's CRC and length are cut
  std::string bad = gz;
  bad[bad.size() / 2] ^= 0x55;
  WriteAll(dir.file("bad.gz"), bad);
  std::string badz = zst;
  badz[badz.size() / 2] ^= 0x55;
  WriteAll(dir.file("bad.zst"), badz);
  WriteAll(dir.file("trail.gz"), gz + "not gzip");

  auto st = ReadError(dir.file("cut.gz"));
  CHECK(st.code() == lmkit::ErrorCode::kInvalidInput);
  CHECK(st.ToString() == dir.file("cut.gz") + ": truncated gzip stream (it ends after " +
                             std::to_string(gz.size() / 2) + " compressed bytes; an interrupted download or copy?)");
  st = ReadError(dir.file("cut.zst"));
  CHECK(st.ToString() == dir.file("cut.zst") + ": truncated zstd stream (it ends after " +
                             std::to_string(zst.size() / 2) +
                             " compressed bytes inside a frame; an interrupted download or copy?)");
  CHECK(ReadError(dir.file("tail.gz")).message().rfind("truncated gzip stream", 0) == 0);
  st = ReadError(dir.file("bad.gz"));
  CHECK(st.code() == lmkit::ErrorCode::kInvalidInput);
  CHECK(st.subject() == dir.file("bad.gz"));
  CHECK(st.message().rfind("corrupt gzip data: ", 0) == 0);
  st = ReadError(dir.file("bad.zst"));
  CHECK(st.subject() == dir.file("bad.zst"));
  CHECK(st.message().rfind("corrupt zstd data: ", 0) == 0);
  CHECK(ReadError(dir.file("trail.gz")).message() == "trailing data after the gzip stream");
}

TEST_CASE("decompressing reader: missing files, directories and empty files", "[io][corpus]") {
  TempDir dir;
  auto missing = DecompressingReader::Open(dir.file("nope"));
  CHECK(missing.status().code() == lmkit::ErrorCode::kNotFound);
  CHECK(missing.status().ToString() == dir.file("nope") + ": no such file");
  auto d = DecompressingReader::Open(dir.path());
  CHECK(d.status().ToString() == dir.path() + ": is a directory, expected a file");
  WriteAll(dir.file("empty"), "");
  WriteAll(dir.file("one"), "\x1f");  // one byte of a gzip magic is still just a byte
  for (const char* name : {"empty", "one"}) {
    auto r = DecompressingReader::Open(dir.file(name));
    REQUIRE(r.ok());
    CHECK((*r)->compression() == Compression::kNone);
    CHECK(ReadAllIn(**r, 10) == lmkit::test::ReadAll(dir.file(name)));
  }
}
