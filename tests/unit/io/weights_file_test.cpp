// Weight tables of the three formats against what their own libraries report (tests/data/plan: the safetensors file
// written by hand, the .onnx by the onnx package, the .gguf by gguf-py; golden sizes from onnx's and gguf-py's
// readers), the classification of model paths, and truncated or damaged images as one-line errors.
#include "lmkit/io/weights_file.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>

#include "support/run_lmkit.h"

using namespace lmkit::io;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;

namespace {

std::string Bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
std::span<const uint8_t> Span(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

}  // namespace

TEST_CASE("weights: safetensors MLP, its bytes and parameters", "[io][weights]") {
  auto w = ReadWeights(TestData("plan/ranker.safetensors"));
  REQUIRE(w.ok());
  CHECK(w->format == "safetensors");
  REQUIRE(w->tensors.size() == 6);
  CHECK(w->parameters == 256 * 128 + 256 + 64 * 256 + 64 + 64 + 1);  // 49,537
  CHECK(w->bytes == 2 * w->parameters);
  CHECK(w->tensors[0].dtype == "F16");
}

TEST_CASE("weights: ONNX initializers as the onnx package wrote them", "[io][weights]") {
  auto w = ReadWeights(TestData("plan/gnn.onnx"));
  REQUIRE(w.ok());
  CHECK(w->format == "onnx");
  REQUIRE(w->tensors.size() == 4);
  CHECK(w->tensors[0].name == "conv1.lin.weight");
  CHECK(w->tensors[0].shape == std::vector<uint64_t>{32, 64});
  CHECK(w->tensors[0].dtype == "FLOAT");
  CHECK(w->tensors[3].dtype == "FLOAT16");
  CHECK(w->bytes == 8192 + 256 + 4096 + 32);  // onnx: len(raw_data) of each initializer
  CHECK(w->parameters == 2048 + 64 + 1024 + 16);
}

TEST_CASE("weights: GGUF tensor table as gguf-py wrote it, block-quantized sizes included", "[io][weights]") {
  auto w = ReadWeights(TestData("plan/tiny.gguf"));
  REQUIRE(w.ok());
  CHECK(w->format == "gguf");
  REQUIRE(w->tensors.size() == 3);
  CHECK(w->tensors[1].dtype == "Q8_0");
  CHECK(w->tensors[1].bytes == 2176);  // gguf-py's n_bytes: 2048 / 32 blocks x 34 B
  CHECK(w->tensors[0].shape == std::vector<uint64_t>{32, 64});
  CHECK(w->bytes == 8192 + 2176 + 16);
  CHECK(w->parameters == 2048 + 2048 + 8);
}

TEST_CASE("weights: classifying model paths", "[io][weights]") {
  std::string why;
  CHECK(ClassifyModelFile(TestData("plan/ranker.safetensors"), &why) == ModelFileKind::kWeights);
  CHECK(ClassifyModelFile(TestData("plan/gnn.onnx"), &why) == ModelFileKind::kWeights);
  CHECK(ClassifyModelFile(TestData("plan/tiny.gguf"), &why) == ModelFileKind::kWeights);
  CHECK(ClassifyModelFile(TestData("plan/serving.json"), &why) == ModelFileKind::kConfig);
  CHECK(ClassifyModelFile(TestData("plan/notes.txt"), &why) == ModelFileKind::kNeither);
  CHECK(why.find("neither a model config") != std::string::npos);
  TempDir d;
  WriteAll(d.path() + "/readme.md", "hello");
  CHECK(ClassifyModelFile(d.path(), &why) == ModelFileKind::kNeither);
  WriteAll(d.path() + "/m.onnx", Bytes(TestData("plan/gnn.onnx")));
  CHECK(ClassifyModelFile(d.path(), &why) == ModelFileKind::kWeights);
  auto w = ReadWeights(d.path());
  REQUIRE(w.ok());
  CHECK(w->bytes == 12576);
}

TEST_CASE("weights: every truncation of the GGUF and ONNX fixtures is a one-line error", "[io][weights]") {
  for (const char* name : {"plan/tiny.gguf", "plan/gnn.onnx"}) {
    const std::string img = Bytes(TestData(name));
    const bool gguf = std::string(name).find("gguf") != std::string::npos;
    for (size_t n = 0; n < img.size(); n += (n < 400 ? 1 : 97)) {
      const std::string cut = img.substr(0, n);
      auto r = gguf ? ParseGguf(Span(cut), "x") : ParseOnnx(Span(cut), "x");
      if (r.ok()) {
        // An ONNX prefix can end between fields (then fewer initializers); a GGUF prefix only loses the zero padding
        // after its last tensor (gguf-py pads the file to the 32-byte alignment).
        if (gguf) {
          CHECK(n >= img.size() - 32);
          CHECK(r->bytes == 10384);
        }
        CHECK(r->bytes <= 12576);
        continue;
      }
      INFO(name << " cut at " << n << ": " << r.status().ToString());
      CHECK(r.status().ToString().find('\n') == std::string::npos);
      CHECK(r.status().code() == lmkit::ErrorCode::kInvalidInput);
    }
  }
  auto bad = ParseGguf(Span(std::string("GGUF\x01\0\0\0", 8)), "v1.gguf");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().ToString().find("version 1 is not supported") != std::string::npos);
  auto junk = ParseOnnx(Span(std::string("\xff\xff\xff", 3)), "junk.onnx");
  REQUIRE_FALSE(junk.ok());
  CHECK(junk.status().ToString().find("not an ONNX model") != std::string::npos);
}
