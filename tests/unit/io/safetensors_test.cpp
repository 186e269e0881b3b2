// safetensors: round trips of every dtype, the spec's layout checked on raw bytes, the streaming writer, and every
// validation rule on hand-made corrupt headers.
#include "lmkit/io/safetensors.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>

#include "support/run_lmkit.h"

using namespace lmkit::io;
using lmkit::ErrorCode;
using lmkit::test::ReadAll;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;

namespace {

std::string LenPrefix(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A file image: header length + `json` + `data_bytes` bytes of data.
std::string Image(const std::string& json, size_t data_bytes) {
  return LenPrefix(json.size()) + json + std::string(data_bytes, '\x01');
}

lmkit::Status ParseImage(const std::string& img) {
  auto r = SafetensorsFile::Parse({reinterpret_cast<const uint8_t*>(img.data()), img.size()}, "x.safetensors");
  return r.status();
}

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 31);
  return v;
}

}  // namespace

TEST_CASE("safetensors: stories260K parses: 47 tensors, 260,032 parameters", "[io][safetensors]") {
  auto f = SafetensorsFile::Open(TestData("io/stories260K/model.safetensors"));
  REQUIRE(f.ok());
  CHECK(f->tensors().size() == 47);
  CHECK(f->parameter_count() == 260032);
  CHECK(f->header_bytes() == 4896);
  const TensorInfo* emb = f->Find("model.embed_tokens.weight");
  REQUIRE(emb != nullptr);
  CHECK(emb->dtype == DType::kF32);
  CHECK(emb->shape == std::vector<uint64_t>{512, 64});
  CHECK(emb->begin == 0);
  CHECK(emb->end == 131072);
  CHECK(f->Find("nope") == nullptr);
  REQUIRE(f->metadata().size() == 2);
  CHECK(f->metadata()[0] == std::pair<std::string, std::string>{"format", "pt"});
  // Views point into the map without copying.
  CHECK(f->Data(*emb).data() == f->mapped().data() + f->data_offset());
}

TEST_CASE("safetensors: every dtype round-trips byte-identically, and the file follows the spec", "[io][safetensors]") {
  TempDir dir;
  std::string path = dir.file("all.safetensors");
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<TensorData> tensors;
  uint8_t seed = 3;
  for (DType t : AllDTypes()) {
    std::vector<uint64_t> shape = {3, 5};
    payloads.push_back(Pattern(15 * DTypeSize(t), seed++));
    tensors.push_back({"t." + std::string(DTypeName(t)), t, shape, payloads.back()});
  }
  tensors.push_back({"scalar", DType::kF32, {}, {}});
  std::vector<uint8_t> four = Pattern(4, 99);
  tensors.back().bytes = four;
  tensors.push_back({"empty", DType::kBF16, {0, 7}, {}});
  lmkit::io::Metadata meta = {{"format", "pt"}, {"note", "ünïcode"}};
  REQUIRE(WriteSafetensors(path, tensors, meta).ok());

  // Independent check of the raw bytes: header length, padding, JSON content, offsets tiling in declaration order.
  std::string raw = ReadAll(path);
  REQUIRE(raw.size() > 8);
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  CHECK(n % 8 == 0);
  REQUIRE(8 + n <= raw.size());
  std::string header = raw.substr(8, n);
  size_t last = header.find_last_not_of(' ');
  REQUIRE(last != std::string::npos);
  CHECK(header[last] == '}');
  CHECK(header.size() - last - 1 < 8);  // padding is fewer than 8 spaces
  auto j = nlohmann::ordered_json::parse(header);
  REQUIRE(j.is_object());
  CHECK(j.begin().key() == "__metadata__");
  CHECK(j["__metadata__"]["note"] == "ünïcode");
  uint64_t pos = 0;
  size_t i = 0;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    REQUIRE(i < tensors.size());
    CHECK(it.key() == tensors[i].name);
    CHECK(it.value()["dtype"] == DTypeName(tensors[i].dtype));
    CHECK(it.value()["shape"].get<std::vector<uint64_t>>() == tensors[i].shape);
    uint64_t b = it.value()["data_offsets"][0], e = it.value()["data_offsets"][1];
    CHECK(b == pos);
    CHECK(e - b == tensors[i].bytes.size());
    if (!tensors[i].bytes.empty())
      CHECK(std::memcmp(raw.data() + 8 + n + b, tensors[i].bytes.data(), tensors[i].bytes.size()) == 0);
    pos = e;
    ++i;
  }
  CHECK(i == tensors.size());
  CHECK(8 + n + pos == raw.size());

  // And lmkit reads it back identically.
  auto f = SafetensorsFile::Open(path);
  REQUIRE(f.ok());
  REQUIRE(f->tensors().size() == tensors.size());
  CHECK(f->metadata() == meta);
  for (const auto& t : tensors) {
    const TensorInfo* info = f->Find(t.name);
    REQUIRE(info != nullptr);
    CHECK(info->dtype == t.dtype);
    CHECK(info->shape == t.shape);
    auto d = f->Data(*info);
    REQUIRE(d.size() == t.bytes.size());
    CHECK(std::equal(d.begin(), d.end(), t.bytes.begin()));
  }
  CHECK(f->Find("scalar")->num_elements() == 1);
  CHECK(f->Find("empty")->num_elements() == 0);
}

TEST_CASE("safetensors: streaming writer takes bytes in arbitrary pieces", "[io][safetensors]") {
  TempDir dir;
  std::string path = dir.file("s.safetensors");
  std::vector<TensorSpec> specs = {{"a", DType::kF32, {3}}, {"b", DType::kU8, {5}}, {"c", DType::kI64, {2}}};
  auto all = Pattern(12 + 5 + 16, 1);
  {
    auto w = SafetensorsWriter::Create(path, specs);
    REQUIRE(w.ok());
    CHECK(w->data_total() == 33);
    CHECK(w->current_tensor() == 0);
    REQUIRE(w->Write(all.data(), 7).ok());
    REQUIRE(w->Write(all.data() + 7, 10).ok());  // ends tensor b exactly
    CHECK(w->current_tensor() == 2);
    REQUIRE(w->Write(all.data() + 17, 16).ok());
    CHECK(w->current_tensor() == 3);
    CHECK(w->Write(all.data(), 1).code() == ErrorCode::kInvalidInput);  // one byte too many
    REQUIRE(w->Commit().ok());
  }
  auto f = SafetensorsFile::Open(path);
  REQUIRE(f.ok());
  auto c = f->Data(*f->Find("c"));
  CHECK(std::equal(c.begin(), c.end(), all.begin() + 17));
}

TEST_CASE("safetensors: a reserved region is filled out of order and counts as written", "[io][safetensors]") {
  TempDir dir;
  std::string path = dir.file("r.safetensors");
  std::vector<TensorSpec> specs = {{"a", DType::kU8, {3}}, {"codes", DType::kI8, {4, 4}}, {"s", DType::kF32, {1}}};
  auto all = Pattern(3 + 16 + 4, 5);
  {
    auto w = SafetensorsWriter::Create(path, specs);
    REQUIRE(w.ok());
    REQUIRE(w->Write(all.data(), 3).ok());
    CHECK(w->Reserve(100).status().code() == ErrorCode::kInvalidInput);  // more than declared
    auto region = w->Reserve(16);
    REQUIRE(region.ok());
    CHECK(w->data_written() == 19);
    CHECK(w->current_tensor() == 2);
    for (int row = 3; row >= 0; --row)
      REQUIRE(SafetensorsWriter::WriteRegion(*region, row * 4, all.data() + 3 + row * 4, 4).ok());
    CHECK(SafetensorsWriter::WriteRegion(*region, 14, all.data(), 4).code() == ErrorCode::kInternal);  // past its end
    REQUIRE(w->Write(all.data() + 19, 4).ok());
    REQUIRE(w->Commit().ok());
  }
  auto f = SafetensorsFile::Open(path);
  REQUIRE(f.ok());
  auto c = f->Data(*f->Find("codes"));
  CHECK(std::equal(c.begin(), c.end(), all.begin() + 3));
  auto sc = f->Data(*f->Find("s"));
  CHECK(std::equal(sc.begin(), sc.end(), all.begin() + 19));
}

TEST_CASE("safetensors: writer refuses incomplete data, wrong order and bad names - nothing is left behind",
          "[io][safetensors]") {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  std::vector<TensorSpec> specs = {{"a", DType::kF32, {2}}, {"b", DType::kF32, {2}}};
  auto bytes = Pattern(8, 0);
  {
    auto w = SafetensorsWriter::Create(path, specs);
    REQUIRE(w.ok());
    auto st = w->WriteTensor(1, bytes);
    CHECK(st.code() == ErrorCode::kInvalidInput);
    CHECK(st.message() == "tensor 'b' written out of declaration order");
    CHECK(w->WriteTensor(0, {bytes.data(), 4}).message() == "tensor 'a': 4 bytes given, F32 [2] needs 8");
    REQUIRE(w->WriteTensor(0, bytes).ok());
    auto c = w->Commit();
    CHECK(c.code() == ErrorCode::kInvalidInput);
    CHECK(c.message() == "only 8 of 16 data bytes written (tensor 'b' incomplete)");
  }
  CHECK(lmkit::test::ListDir(dir.path()).empty());
  CHECK(SafetensorsWriter::Create(path, {{"a", DType::kF32, {1}}, {"a", DType::kU8, {1}}}).status().message() ==
        "duplicate tensor name 'a'");
  CHECK(SafetensorsWriter::Create(path, {{"__metadata__", DType::kF32, {1}}}).status().code() ==
        ErrorCode::kInvalidInput);
  CHECK(SafetensorsWriter::Create(path, {{"x", DType::kF64, {1ull << 62, 4}}}).status().code() ==
        ErrorCode::kInvalidInput);
  CHECK(SafetensorsWriter::Create(path, {{std::string("\xff\xfe"), DType::kF32, {1}}}).status().code() ==
        ErrorCode::kInvalidInput);
}

TEST_CASE("safetensors: header encoding matches the reference layout exactly", "[io][safetensors]") {
  auto h = EncodeSafetensorsHeader({{"w", DType::kBF16, {2, 2}}}, {{"k", "v"}});
  REQUIRE(h.ok());
  std::string json = R"({"__metadata__":{"k":"v"},"w":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}})";
  std::string padded = json + std::string((8 - json.size() % 8) % 8, ' ');
  CHECK(*h == LenPrefix(padded.size()) + padded);
  auto empty = EncodeSafetensorsHeader({}, {});
  REQUIRE(empty.ok());
  CHECK(*empty == LenPrefix(8) + "{}      ");
  CHECK(ParseImage(*empty).ok());
}

TEST_CASE("safetensors: every defect is a one-line error naming it", "[io][safetensors]") {
  struct Case {
    std::string image;
    std::string message;
  };
  auto T = [](const std::string& name, const std::string& dtype, const std::string& shape, uint64_t b, uint64_t e) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
           std::to_string(b) + "," + std::to_string(e) + "]}";
  };
  std::vector<Case> cases = {
      {"abc", "file is 3 bytes, too short for the 8-byte header length"},
      {LenPrefix(100) + "{}", "header length 100 runs past the end of the file (10 bytes)"},
      {LenPrefix(100000001) + "{}", "header length 100000001 exceeds the limit of 100000000 bytes"},
      {LenPrefix(UINT64_MAX) + "{}", "header length 18446744073709551615 exceeds the limit of 100000000 bytes"},
      {Image("{\"a\":", 0), "header is not valid JSON (error at byte 6 of the header)"},
      {Image("[1,2]", 0), "header is not a JSON object"},
      {Image("{} x", 0), "header is not valid JSON (error at byte 4 of the header)"},
      {Image("{\"a\":1}", 0), "tensor 'a': entry is not a JSON object"},
      {Image("{" + T("a", "F4", "[1]", 0, 1) + "}", 1), "tensor 'a': unknown dtype 'F4'"},
      {Image("{" + T("a", "f32", "[1]", 0, 4) + "}", 4), "tensor 'a': unknown dtype 'f32'"},
      {Image(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4), "tensor 'a': missing \"shape\""},
      {Image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4), "tensor 'a': unexpected key 'x'"},
      {Image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
       "tensor 'a': shape entries must be non-negative integers"},
      {Image(R"({"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", 4),
       "tensor 'a': shape entries must be non-negative integers"},
      {Image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4),
       "tensor 'a': data_offsets must be two non-negative integers"},
      {Image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 4),
       "tensor 'a': data_offsets must be two non-negative integers"},
      {Image("{" + T("a", "F32", "[1]", 4, 0) + "}", 4), "tensor 'a': data_offsets [4, 0) end before they begin"},
      {Image("{" + T("a", "F32", "[2,3]", 0, 20) + "}", 20),
       "tensor 'a': data_offsets [0, 20) hold 20 bytes but F32 [2, 3] needs 24"},
      {Image("{" + T("a", "F32", "[4294967296,4294967296]", 0, 0) + "}", 0),
       "tensor 'a': shape [4294967296, 4294967296] overflows a 64-bit byte count"},
      {Image("{" + T("a", "F64", "[4611686018427387904]", 0, 0) + "}", 0),
       "tensor 'a': shape [4611686018427387904] overflows a 64-bit byte count"},
      {Image("{" + T("a", "F32", "[2]", 0, 8) + "," + T("b", "F32", "[2]", 4, 12) + "}", 12),
       "tensor 'b': data_offsets [4, 12) overlap tensor 'a' [0, 8)"},
      {Image("{" + T("a", "F32", "[1]", 0, 4) + "," + T("b", "F32", "[1]", 8, 12) + "}", 12),
       "gap [4, 8) in the data buffer between tensor 'a' and tensor 'b'"},
      {Image("{" + T("a", "F32", "[1]", 4, 8) + "}", 8),
       "tensor 'a': data_offsets [4, 8) leave a gap [0, 4) at the start of the data buffer"},
      {Image("{" + T("a", "F32", "[2]", 0, 8) + "}", 6),
       "tensor 'a': data_offsets [0, 8) run past the end of the data buffer (6 bytes)"},
      {Image("{" + T("a", "F32", "[1]", 0, 4) + "}", 9),
       "5 bytes at the end of the data buffer [4, 9) belong to no tensor"},
      {Image("{" + T("a", "F32", "[1]", 0, 4) + "," + T("a", "F32", "[1]", 4, 8) + "}", 8),
       "duplicate tensor name 'a'"},
      {Image(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4),
       "duplicate key 'dtype' in the header"},
      {Image(R"({"__metadata__":{"k":1}})", 0), "__metadata__ value of 'k' is not a string"},
      {Image(R"({"__metadata__":[]})", 0), "__metadata__ is not a JSON object"},
      {Image(" {}", 0), "header is not a JSON object"},
      {Image("", 0), "header is not a JSON object"},
      {Image("{\"a\":\"\xff\"}", 0), "header is not valid JSON (error at byte 7 of the header)"},
      {Image(std::string(40, '[') + std::string(40, ']'), 0), "header is not a JSON object"},
      {Image("{\"a\":" + std::string(40, '[') + std::string(40, ']') + "}", 0),
       "header JSON nests deeper than 16 levels"},
  };
  for (const auto& c : cases) {
    INFO("expected: " << c.message);
    auto st = ParseImage(c.image);
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == ErrorCode::kInvalidInput);
    CHECK(st.subject() == "x.safetensors");
    CHECK(st.message() == c.message);
    CHECK(st.ToString().find('\n') == std::string::npos);
  }
}

TEST_CASE("safetensors: valid corner cases parse", "[io][safetensors]") {
  // Trailing spaces in the header, zero-size tensors anywhere in the order, a scalar, a metadata-only file.
  CHECK(ParseImage(Image(R"({"__metadata__":{"a":"b"}}   )", 0)).ok());
  CHECK(ParseImage(Image(R"({"z":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)"
                         R"("s":{"dtype":"F64","shape":[],"data_offsets":[0,8]},)"
                         R"("e":{"dtype":"I8","shape":[3,0],"data_offsets":[8,8]}})",
                         8))
            .ok());
  // Header order differs from data order: tensors() is in data order.
  std::string img = Image(R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
                          R"("a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
                          4);
  auto f = SafetensorsFile::Parse({reinterpret_cast<const uint8_t*>(img.data()), img.size()}, "m");
  REQUIRE(f.ok());
  CHECK(f->tensors()[0].name == "a");
  CHECK(f->tensors()[1].name == "b");
}

TEST_CASE("safetensors: Open reports missing files and short files with the path", "[io][safetensors]") {
  TempDir dir;
  auto missing = SafetensorsFile::Open(dir.file("nope.safetensors"));
  CHECK(missing.status().code() == ErrorCode::kNotFound);
  WriteAll(dir.file("empty.safetensors"), "");
  auto empty = SafetensorsFile::Open(dir.file("empty.safetensors"));
  CHECK(empty.status().ToString() ==
        dir.file("empty.safetensors") + ": file is 0 bytes, too short for the 8-byte header length");
}
