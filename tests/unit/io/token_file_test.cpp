// Token id files: .bin and .npy, uint16 and uint32, written by TokenWriter and read back in place.
#include "lmkit/io/token_file.h"

#include <catch2/catch.hpp>

#include "support/run_lmkit.h"

using namespace lmkit::io;
using lmkit::ErrorCode;
using lmkit::test::ReadAll;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;

TEST_CASE("token_file: format from the path", "[io][token_file]") {
  CHECK(TokenFormatFromPath("a/train.npy") == TokenFormat::kNpy);
  CHECK(TokenFormatFromPath("train.bin") == TokenFormat::kBin);
  CHECK(TokenFormatFromPath("npy") == TokenFormat::kBin);
  CHECK(TokenFormatFromPath("x.NPY") == TokenFormat::kBin);
}

TEST_CASE("token_file: every format and width round-trips through TokenWriter", "[io][token_file]") {
  TempDir dir;
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 5000; ++i) ids.push_back((i * 2654435761u) % 50257u);
  for (TokenFormat fmt : {TokenFormat::kBin, TokenFormat::kNpy}) {
    for (TokenDtype dt : {TokenDtype::kU16, TokenDtype::kU32}) {
      std::string path = dir.file(std::string("t") + (dt == TokenDtype::kU16 ? "16" : "32") +
                                  (fmt == TokenFormat::kNpy ? ".npy" : ".bin"));
      {
        auto w = TokenWriter::Create(path, fmt, dt);
        REQUIRE(w.ok());
        // The middle third goes in as uint16 ids (Append16), as MPI pieces do: same bytes at either width.
        std::vector<uint16_t> mid(ids.begin() + 1234, ids.begin() + 3000);
        REQUIRE(w->Append({ids.data(), 1234}).ok());
        REQUIRE(w->Append({}).ok());
        REQUIRE(w->Append16(mid).ok());
        REQUIRE(w->Append({ids.data() + 3000, ids.size() - 3000}).ok());
        CHECK(w->count() == ids.size());
        REQUIRE(w->Commit().ok());
      }
      auto f = TokenFile::Open(path, dt);
      REQUIRE(f.ok());
      CHECK(f->dtype() == dt);
      CHECK(f->format() == fmt);
      REQUIRE(f->size() == ids.size());
      for (size_t i = 0; i < ids.size(); ++i) REQUIRE((*f)[i] == ids[i]);
      if (dt == TokenDtype::kU16) {
        REQUIRE(f->u16().size() == ids.size());
        CHECK(f->u32().empty());
        CHECK(f->u16()[4999] == ids[4999]);
      } else {
        REQUIRE(f->u32().size() == ids.size());
        CHECK(f->u32()[17] == ids[17]);
      }
      if (fmt == TokenFormat::kBin) {
        // A .bin is exactly the little-endian ids: nanoGPT's np.memmap(path, dtype=np.uint16) reads it.
        CHECK(ReadAll(path).size() == ids.size() * TokenDtypeBytes(dt));
        CHECK(f->bytes().data() == f->mapped().data());  // zero copy
      }
    }
  }
}

TEST_CASE("token_file: errors are clear", "[io][token_file]") {
  TempDir dir;
  auto w = TokenWriter::Create(dir.file("a.bin"), TokenFormat::kBin, TokenDtype::kU16);
  REQUIRE(w.ok());
  std::vector<uint32_t> bad = {1, 70000, 3, 80000};
  auto st = w->Append(bad);
  CHECK(st.code() == ErrorCode::kInvalidInput);
  CHECK(st.message() == "token id 70000 does not fit uint16");  // the first offender
  CHECK(st.subject() == dir.file("a.bin"));
  CHECK(w->count() == 0);
  CHECK(TokenWriter::Create(dir.file("b.bin"), TokenFormat::kBin, TokenDtype::kAuto).status().code() ==
        ErrorCode::kInvalidArgument);

  WriteAll(dir.file("odd.bin"), "abc");
  auto odd = TokenFile::Open(dir.file("odd.bin"), TokenDtype::kU16);
  CHECK(odd.status().message() == "size 3 bytes is not a multiple of 2 (uint16 token ids)");
  CHECK(TokenFile::Open(dir.file("odd.bin"), TokenDtype::kAuto).status().code() == ErrorCode::kInvalidArgument);
  CHECK(TokenFile::Open(dir.file("missing.bin")).status().code() == ErrorCode::kNotFound);

  std::vector<uint8_t> eight(16);
  REQUIRE(WriteNpy(dir.file("i64.npy"), DType::kI64, {2}, eight).ok());
  auto i64 = TokenFile::Open(dir.file("i64.npy"));
  CHECK(i64.status().code() == ErrorCode::kInvalidInput);
  CHECK(i64.status().message() == "token .npy must be uint16 or uint32, got '<i8'");
  REQUIRE(WriteNpy(dir.file("scalar.npy"), DType::kU16, {}, {eight.data(), 2}).ok());
  CHECK(TokenFile::Open(dir.file("scalar.npy")).status().code() == ErrorCode::kInvalidInput);
  // A 2-D array (e.g. [documents, tokens]) is read flat.
  REQUIRE(WriteNpy(dir.file("two.npy"), DType::kU32, {2, 2}, eight).ok());
  auto two = TokenFile::Open(dir.file("two.npy"));
  REQUIRE(two.ok());
  CHECK(two->size() == 4);
}

TEST_CASE("token_file: a misaligned .npy is copied into aligned memory", "[io][token_file]") {
  TempDir dir;
  // v1 header whose data starts at byte 10 + 55 = 65: not a multiple of 4.
  std::string dict = "{'descr': '<u4', 'fortran_order': False, 'shape': (3,)}";
  dict.resize(55, ' ');
  std::string img = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(dict.size()) + '\0' + dict;
  uint32_t vals[3] = {7, 100000, 4000000000u};
  img.append(reinterpret_cast<const char*>(vals), sizeof vals);
  WriteAll(dir.file("m.npy"), img);
  auto f = TokenFile::Open(dir.file("m.npy"));
  REQUIRE(f.ok());
  REQUIRE(f->size() == 3);
  CHECK(f->u32()[0] == 7);
  CHECK(f->u32()[1] == 100000);
  CHECK((*f)[2] == 4000000000u);
  CHECK(reinterpret_cast<uintptr_t>(f->u32().data()) % 4 == 0);
}
