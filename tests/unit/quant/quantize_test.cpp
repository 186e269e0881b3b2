// `lmkit quantize` as one call on a small checkpoint written here: what the report counts, the same bytes for any
// thread count, and nothing written when a weight or an extra output fails.
#include "lmkit/quant/quantize.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>

#include "lmkit/io/safetensors.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::quant;

namespace {

// proj.weight [4, 8] (ramp values), norm.weight [8], head.weight [2, 8]; `poison` puts a NaN into proj.weight.
std::string SmallCheckpoint(const lmkit::test::TempDir& dir, bool poison = false) {
  std::vector<float> proj(32), norm(8, 1.0f), head(16);
  for (int i = 0; i < 32; ++i) proj[i] = static_cast<float>(i - 16) / 8;
  for (int i = 0; i < 16; ++i) head[i] = static_cast<float>(i) / 16;
  if (poison) proj[13] = std::numeric_limits<float>::quiet_NaN();
  auto bytes = [](const std::vector<float>& v) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float));
  };
  const std::string path = dir.file(poison ? "bad.safetensors" : "in.safetensors");
  REQUIRE(io::WriteSafetensors(path, {{"layer.proj.weight", io::DType::kF32, {4, 8}, bytes(proj)},
                                      {"layer.norm.weight", io::DType::kF32, {8}, bytes(norm)},
                                      {"lm_head.weight", io::DType::kF32, {2, 8}, bytes(head)}})
              .ok());
  return path;
}

}  // namespace

TEST_CASE("quantize: the report counts what was quantized and copied", "[quant][quantize]") {
  lmkit::test::TempDir dir;
  QuantizeRequest o;
  o.input = SmallCheckpoint(dir);
  o.output = dir.file("out.safetensors");
  auto r = Quantize(o, nullptr);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE(r->tensors.size() == 1);  // the norm and the head stay in full precision by default
  const TensorReport& t = r->tensors[0];
  CHECK(t.name == "layer.proj.weight");
  CHECK(t.shape == std::vector<uint64_t>{4, 8});
  CHECK(r->params_quantized == 32);
  CHECK(r->tensors_copied == 2);
  CHECK(r->bytes_before == (32 + 8 + 16) * 4);
  CHECK(r->scheme == "w8a16");
  CHECK(r->granularity == "channel");
  // Row absmaxes 2, 1, 0.875, 1.875 (ramp -2 .. 1.875 in steps of 1/8): scales absmax / 127.5.
  CHECK(t.scale_min == Approx(0.875 / 127.5));
  CHECK(t.scale_max == Approx(2.0 / 127.5));
  CHECK(t.stats.count == 32);
  CHECK(std::filesystem::exists(o.output));
}

TEST_CASE("quantize: the same bytes for any thread count", "[quant][quantize]") {
  lmkit::test::TempDir dir;
  QuantizeRequest o;
  o.input = SmallCheckpoint(dir);
  o.include = {"proj", "head"};
  o.output = dir.file("one.safetensors");
  o.threads = 1;
  REQUIRE(Quantize(o, nullptr).ok());
  o.output = dir.file("three.safetensors");
  o.threads = 3;
  auto r = Quantize(o, nullptr);
  REQUIRE(r.ok());
  CHECK(r->tensors.size() == 2);  // include names the head too
  CHECK(lmkit::test::ReadAll(dir.file("one.safetensors")) == lmkit::test::ReadAll(dir.file("three.safetensors")));
}

TEST_CASE("quantize: a NaN weight or a failing extra output writes nothing", "[quant][quantize]") {
  lmkit::test::TempDir dir;
  QuantizeRequest o;
  o.input = SmallCheckpoint(dir, true);
  o.output = dir.file("out.safetensors");
  auto r = Quantize(o, nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kInvalidInput);
  CHECK(r.status().ToString().find("layer.proj.weight") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(o.output));

  o.input = SmallCheckpoint(dir);
  o.extra_outputs = {{dir.file("no/such/dir/report.json"), ""}};
  CHECK_FALSE(Quantize(o, nullptr, [](const QuantizeResult&, size_t) { return std::string("{}"); }).ok());
  CHECK_FALSE(std::filesystem::exists(o.output));
  o.extra_outputs = {{dir.file("report.txt"), ""}, {dir.file("empty.txt"), ""}};
  REQUIRE(Quantize(o, nullptr, [](const QuantizeResult& rep, size_t i) {
            return i == 0 ? std::to_string(rep.params_quantized) + " params" : std::string();
          }).ok());
  CHECK(lmkit::test::ReadAll(dir.file("report.txt")) == "32 params");
  CHECK(lmkit::test::ReadAll(dir.file("empty.txt")).empty());
  CHECK(std::filesystem::exists(o.output));
}
