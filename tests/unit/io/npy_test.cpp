// .npy: byte-exact output against numpy's layout, round trips, v1/v2/v3 headers, the Python-literal header parser,
// and the clear refusals (big-endian, Fortran order, unsupported dtypes).
#include "lmkit/io/npy.h"

#include <catch2/catch.hpp>
#include <cstring>

#include "support/run_lmkit.h"

using namespace lmkit::io;
using lmkit::ErrorCode;
using lmkit::test::ReadAll;
using lmkit::test::TempDir;

namespace {

// A .npy image with the given version, header text (used verbatim) and data bytes.
std::string NpyImage(int major, const std::string& dict, size_t data_bytes) {
  std::string s("\x93NUMPY", 6);
  s.push_back(static_cast<char>(major));
  s.push_back('\0');
  uint32_t n = static_cast<uint32_t>(dict.size());
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) s.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  s.append(dict);
  s.append(data_bytes, '\x02');
  return s;
}

lmkit::Result<NpyHeader> ParseNpyBytes(const std::string& img) {
  return ParseNpyHeader({reinterpret_cast<const uint8_t*>(img.data()), img.size()}, "a.npy");
}

}  // namespace

TEST_CASE("npy: WriteNpy output is byte-identical to numpy.save", "[io][npy]") {
  // numpy.save(f, numpy.arange(3, dtype='<i4')) writes exactly these bytes (format 1.0, data at offset 128).
  TempDir dir;
  int32_t data[3] = {0, 1, 2};
  REQUIRE(WriteNpy(dir.file("a.npy"), DType::kI32, {3}, {reinterpret_cast<uint8_t*>(data), 12}).ok());
  std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
  std::string expected("\x93NUMPY\x01\x00\x76\x00", 10);
  expected.append(dict);
  expected.append(128 - 10 - dict.size() - 1, ' ');
  expected.push_back('\n');
  expected.append(reinterpret_cast<char*>(data), 12);
  CHECK(ReadAll(dir.file("a.npy")) == expected);
}

TEST_CASE("npy: every npy-representable dtype and shape round-trips - data is 64-byte aligned", "[io][npy]") {
  TempDir dir;
  std::vector<std::vector<uint64_t>> shapes = {{}, {0}, {7}, {2, 3, 4}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5}};
  int k = 0;
  for (DType t : AllDTypes()) {
    if (!NpyDescr(t)) {
      CHECK(EncodeNpyHeader(t, {1}).status().code() == ErrorCode::kUnsupported);
      continue;
    }
    for (const auto& shape : shapes) {
      uint64_t n = 1;
      for (auto d : shape) n *= d;
      std::vector<uint8_t> bytes(n * DTypeSize(t));
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + k);
      std::string name = std::to_string(k++);
      name.insert(0, 1, 't');
      name.append(".npy");
      std::string path = dir.file(name);
      REQUIRE(WriteNpy(path, t, shape, bytes).ok());
      auto f = NpyFile::Open(path);
      REQUIRE(f.ok());
      CHECK(f->dtype() == t);
      CHECK(f->shape() == shape);
      CHECK(f->header().data_offset % 64 == 0);
      CHECK(f->header().major_version == 1);
      CHECK(f->header().descr == *NpyDescr(t));
      REQUIRE(f->data().size() == bytes.size());
      CHECK(std::equal(bytes.begin(), bytes.end(), f->data().begin()));
    }
  }
  std::string raw = ReadAll(dir.file("t0.npy"));
  CHECK(raw.find("'shape': (), }") != std::string::npos);
  CHECK(WriteNpy(dir.file("bad.npy"), DType::kF32, {3}, {}).code() == ErrorCode::kInvalidInput);
}

TEST_CASE("npy: v2 and v3 headers, Python 2 longs, double quotes and loose whitespace parse", "[io][npy]") {
  auto v2 = ParseNpyBytes(NpyImage(2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }\n", 32));
  REQUIRE(v2.ok());
  CHECK(v2->major_version == 2);
  CHECK(v2->dtype == DType::kF64);
  CHECK(v2->data_offset == 12 + 60);
  auto v3 = ParseNpyBytes(NpyImage(3, "{'descr':'<u2','fortran_order':False,'shape':(3,)}\n", 6));
  REQUIRE(v3.ok());
  CHECK(v3->dtype == DType::kU16);
  auto py2 = ParseNpyBytes(NpyImage(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2L, 1L), }      \n", 16));
  REQUIRE(py2.ok());
  CHECK(py2->shape == std::vector<uint64_t>{2, 1});
  auto dq =
      ParseNpyBytes(NpyImage(1, "{ \"shape\" : ( 1 , ) ,\n \"descr\" : \"|u1\" , \"fortran_order\" : False }", 1));
  REQUIRE(dq.ok());
  CHECK(dq->dtype == DType::kU8);
  auto native = ParseNpyBytes(NpyImage(1, "{'descr': '=f4', 'fortran_order': False, 'shape': (1,)}", 4));
  REQUIRE(native.ok());
  CHECK(native->dtype == DType::kF32);
  auto b1 = ParseNpyBytes(NpyImage(1, "{'descr': '|b1', 'fortran_order': False, 'shape': ()}", 1));
  REQUIRE(b1.ok());
  CHECK(b1->dtype == DType::kBool);
  CHECK(b1->shape.empty());
}

TEST_CASE("npy: unsupported arrays get a clear kUnsupported", "[io][npy]") {
  auto big = ParseNpyBytes(NpyImage(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", 4));
  CHECK(big.status().code() == ErrorCode::kUnsupported);
  CHECK(big.status().message().find("big-endian") != std::string::npos);
  auto fortran = ParseNpyBytes(NpyImage(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16));
  CHECK(fortran.status().code() == ErrorCode::kUnsupported);
  CHECK(fortran.status().message().find("Fortran-order") != std::string::npos);
  auto complex = ParseNpyBytes(NpyImage(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", 8));
  CHECK(complex.status().code() == ErrorCode::kUnsupported);
  CHECK(complex.status().message().rfind("dtype '<c8'", 0) == 0);
  auto str = ParseNpyBytes(NpyImage(1, "{'descr': '<U10', 'fortran_order': False, 'shape': (1,), }", 40));
  CHECK(str.status().code() == ErrorCode::kUnsupported);
  auto rec = ParseNpyBytes(NpyImage(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4));
  CHECK(rec.status().code() == ErrorCode::kUnsupported);
  std::string v4_image = NpyImage(1, "{}", 0);
  v4_image[6] = 4;
  auto v4 = ParseNpyBytes(v4_image);
  CHECK(v4.status().code() == ErrorCode::kUnsupported);
  // A one-byte big-endian type is just a byte: accepted.
  CHECK(ParseNpyBytes(NpyImage(1, "{'descr': '>u1', 'fortran_order': False, 'shape': (1,), }", 1)).ok());
}

// Built with append rather than operator+ on a temporary: GCC 12 at -O3 reports a false -Warray-bounds on the latter.
static std::string DeeplyNestedHeader() {
  std::string s = "{'descr': '<f4', 'fortran_order': False, 'shape': ";
  s.append(20, '(');
  s.push_back(')');
  return s;
}

TEST_CASE("npy: malformed headers are kInvalidInput naming the defect", "[io][npy]") {
  struct Case {
    std::string image;
    std::string message;
  };
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  std::vector<Case> cases = {
      {"NUMPY", "not a .npy file (missing the \\x93NUMPY magic)"},
      {"\x93NUMPY", "truncated .npy header"},
      {std::string("\x93NUMPY\x01\x00\xff\x00{}", 12), "header length 255 runs past the end of the file (12 bytes)"},
      {NpyImage(1, ok_dict, 4), "file is truncated: <f4 (2) needs 8 data bytes, 4 present"},
      {NpyImage(1, ok_dict, 9), "1 unexpected bytes after the array data"},
      {NpyImage(1, "{'descr': '<f4', 'shape': (2,), }", 8), "header dict lacks 'fortran_order'"},
      {NpyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8),
       "unexpected key 'x' in the header dict"},
      // An escaped newline in a key (found by fuzz_npy) must not break the one-line message.
      {NpyImage(1, "{'descr': '<f4', 'fortr\\n_order': False, 'shape': (2,)}", 8),
       "unexpected key 'fortr\\x0a_order' in the header dict"},
      {NpyImage(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8),
       "duplicate key 'descr' in the header dict"},
      {NpyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", 8), "'shape' is not a tuple"},
      {NpyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", 8), "'shape' is not a tuple"},
      {NpyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", 8),
       "'shape' entries must be non-negative integers"},
      {NpyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,)}", 8),
       "malformed header dict: malformed number at byte 52"},
      {NpyImage(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", 8), "'fortran_order' is not True or False"},
      {NpyImage(1, "{'descr': 4, 'fortran_order': False, 'shape': (2,)}", 8), "'descr' is not a string"},
      {NpyImage(1, "{'descr': 'f4', 'fortran_order': False, 'shape': (2,)}", 8),
       "malformed dtype descr 'f4' (no byte-order character)"},
      {NpyImage(1, "{'descr': '|f4', 'fortran_order': False, 'shape': (2,)}", 8),
       "dtype '|f4': '|' byte order on a multi-byte type"},
      {NpyImage(1, "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", 8),
       "malformed header dict: expected ',' or '}' at byte 17"},
      {NpyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", 8),
       "unexpected text after the header dict at byte 56"},
      {NpyImage(1, "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}", 8),
       "malformed header dict: unexpected character at byte 34"},
      {NpyImage(1, "('descr', '<f4')", 8), "header is not a Python dict"},
      {NpyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 8),
       "malformed header dict: integer too large at byte 70"},
      {NpyImage(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 8),
       "shape overflows a 64-bit element count"},
      {NpyImage(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,)}", 8),
       "shape overflows a 64-bit byte count"},
      {NpyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'é': 1}", 8),
       "header of a v1/v2 .npy file is not ASCII"},
      {NpyImage(1, DeeplyNestedHeader(), 8), "malformed header dict: nesting too deep at byte 58"},
  };
  for (const auto& c : cases) {
    INFO("expected: " << c.message);
    auto r = ParseNpyBytes(c.image);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kInvalidInput);
    CHECK(r.status().subject() == "a.npy");
    CHECK(r.status().message() == c.message);
  }
}

TEST_CASE("npy: streaming writer patches the length in at the end", "[io][npy]") {
  TempDir dir;
  std::string path = dir.file("s.npy");
  {
    auto w = NpyStreamWriter::Create(path, DType::kU16);
    REQUIRE(w.ok());
    std::vector<uint16_t> ids(1000);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint16_t>(i * 65);
    REQUIRE(w->Write(ids.data(), 600).ok());
    REQUIRE(w->Write(ids.data() + 300, 1400).ok());
    CHECK(w->Write(ids.data(), 3).code() == ErrorCode::kInvalidInput);  // half an element
    CHECK(w->elements_written() == 1000);
    REQUIRE(w->Commit().ok());
  }
  auto f = NpyFile::Open(path);
  REQUIRE(f.ok());
  CHECK(f->shape() == std::vector<uint64_t>{1000});
  CHECK(f->header().data_offset % 64 == 0);
  uint16_t v;
  std::memcpy(&v, f->data().data() + 2 * 999, 2);
  CHECK(v == static_cast<uint16_t>(999 * 65));
  std::string raw = ReadAll(path);
  CHECK(raw.find("{'descr': '<u2', 'fortran_order': False, 'shape': (1000,), }") == 10);

  // Zero elements is a valid empty array; an uncommitted writer leaves nothing.
  {
    auto w = NpyStreamWriter::Create(dir.file("e.npy"), DType::kU32);
    REQUIRE(w.ok());
    REQUIRE(w->Commit().ok());
  }
  auto e = NpyFile::Open(dir.file("e.npy"));
  REQUIRE(e.ok());
  CHECK(e->shape() == std::vector<uint64_t>{0});
  {
    auto w = NpyStreamWriter::Create(dir.file("gone.npy"), DType::kU32);
    REQUIRE(w.ok());
  }
  CHECK(lmkit::test::ListDir(dir.path()) == std::vector<std::string>{"e.npy", "s.npy"});
  CHECK(NpyStreamWriter::Create(dir.file("x.npy"), DType::kBF16).status().code() == ErrorCode::kUnsupported);
}
