// InspectTensors: golden statistics on stories260K (values from an independent Python math.fsum computation),
// determinism across thread counts on a multi-chunk tensor, npy and sharded directories, and their errors.
#include "lmkit/io/inspect.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "lmkit/io/npy.h"
#include "support/run_lmkit.h"

using namespace lmkit::io;
using lmkit::ErrorCode;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;

namespace {
bool Near(double a, double b, double rel = 1e-12) { return std::fabs(a - b) <= rel * std::max(1.0, std::fabs(b)); }
}  // namespace

TEST_CASE("inspect: stories260K totals and golden statistics", "[io][inspect]") {
  auto r = InspectTensors({TestData("io/stories260K/model.safetensors"), true, 2}, nullptr);
  REQUIRE(r.ok());
  CHECK(r->format == "safetensors");
  CHECK(r->tensors.size() == 47);
  CHECK(r->parameter_count == 260032);
  CHECK(r->tensor_bytes == 260032 * 4);
  CHECK_FALSE(r->config.has_value());
  // Reference: Python, struct.unpack of the F32 data, math.fsum for the mean, population std.
  const auto& emb = r->tensors[0];
  REQUIRE(emb.name == "model.embed_tokens.weight");
  REQUIRE(emb.stats.has_value());
  CHECK(emb.stats->min == -1.2033039331436157);
  CHECK(emb.stats->max == 1.327228307723999);
  CHECK(emb.stats->absmax == 1.327228307723999);
  CHECK(Near(emb.stats->mean, -0.022960441426513878));
  CHECK(Near(emb.stats->std, 0.30793811145121897));
  CHECK(emb.stats->count == 32768);
  const auto& norm = r->tensors.back();
  REQUIRE(norm.name == "model.norm.weight");
  CHECK(norm.stats->min == 0.9720380902290344);
  CHECK(norm.stats->max == 4.425094127655029);
  CHECK(Near(norm.stats->mean, 1.8117619110271335));
  CHECK(Near(norm.stats->std, 0.5778557946811477));
}

TEST_CASE("inspect: a model directory reads config.json", "[io][inspect]") {
  auto r = InspectTensors({TestData("io/stories260K/"), false, 1}, nullptr);
  REQUIRE(r.ok());
  REQUIRE(r->config.has_value());
  CHECK((*r->config)["vocab_size"] == 512);
  CHECK(r->tensors.size() == 47);
  CHECK_FALSE(r->tensors[0].stats.has_value());
}

TEST_CASE("inspect: statistics are identical for any thread count and match a naive computation", "[io][inspect]") {
  TempDir dir;
  const size_t n = 2 * kStatsChunkElements + 12345;  // three chunks
  std::vector<float> values(n);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.5f, 2.0f);
  for (auto& v : values) v = normal(rng);
  values[10] = NAN;
  values[kStatsChunkElements + 3] = INFINITY;
  values[n - 1] = 100.0f;
  std::vector<uint8_t> bf16(2 * n);
  F32ToBf16(values.data(), bf16.data(), n);
  std::vector<uint8_t> small(6 * 4, 0);
  REQUIRE(WriteSafetensors(dir.file("m.safetensors"),
                           {{"big", DType::kBF16, {n}, bf16}, {"zeros", DType::kI32, {2, 3}, small}})
              .ok());
  auto one = InspectTensors({dir.file("m.safetensors"), true, 1}, nullptr);
  auto three = InspectTensors({dir.file("m.safetensors"), true, 3}, nullptr);
  REQUIRE(one.ok());
  REQUIRE(three.ok());
  const TensorStats& a = *one->tensors[0].stats;
  const TensorStats& b = *three->tensors[0].stats;
  CHECK(a.mean == b.mean);  // bitwise, not approximately
  CHECK(a.std == b.std);
  CHECK(a.min == b.min);
  CHECK(a.nan_count == 1);
  CHECK(a.inf_count == 1);
  CHECK(a.count == n - 2);
  CHECK(a.max == 100.0);
  TensorStats ref = ComputeTensorStats(DType::kBF16, bf16.data(), n);
  CHECK(ref.mean == a.mean);
  CHECK(ref.std == a.std);
  // Naive two-pass in long double over the BF16 values.
  long double sum = 0;
  std::vector<float> rounded(n);
  Bf16ToF32(bf16.data(), rounded.data(), n);
  size_t cnt = 0;
  for (float v : rounded)
    if (std::isfinite(v)) sum += v, ++cnt;
  long double mean = sum / cnt, ss = 0;
  for (float v : rounded)
    if (std::isfinite(v)) ss += (v - mean) * (v - mean);
  CHECK(Near(a.mean, static_cast<double>(mean), 1e-10));
  CHECK(Near(a.std, std::sqrt(static_cast<double>(ss / cnt)), 1e-10));
  const TensorStats& z = *one->tensors[1].stats;
  CHECK(z.min == 0);
  CHECK(z.std == 0);
  CHECK(z.count == 6);
}

TEST_CASE("inspect: npy files and sharded directories", "[io][inspect]") {
  TempDir dir;
  int16_t vals[4] = {-3, 1, 2, 4};
  REQUIRE(WriteNpy(dir.file("a.npy"), DType::kI16, {2, 2}, {reinterpret_cast<uint8_t*>(vals), 8}).ok());
  auto npy = InspectTensors({dir.file("a.npy"), true, 1}, nullptr);
  REQUIRE(npy.ok());
  CHECK(npy->format == "npy");
  REQUIRE(npy->tensors.size() == 1);
  CHECK(npy->tensors[0].stats->absmax == 4);
  CHECK(npy->tensors[0].stats->mean == 1);

  std::string m = dir.file("model");
  REQUIRE(::mkdir(m.c_str(), 0755) == 0);
  std::vector<uint8_t> b(8, 1);
  REQUIRE(WriteSafetensors(m + "/model-00001-of-00002.safetensors", {{"x", DType::kF32, {2}, b}}).ok());
  REQUIRE(WriteSafetensors(m + "/model-00002-of-00002.safetensors", {{"y", DType::kU8, {8}, b}}).ok());
  WriteAll(
      m + "/model.safetensors.index.json",
      R"({"metadata":{},"weight_map":{"y":"model-00002-of-00002.safetensors","x":"model-00001-of-00002.safetensors"}})");
  auto sh = InspectTensors({m, false, 1}, nullptr);
  REQUIRE(sh.ok());
  CHECK(sh->format == "safetensors (sharded)");
  CHECK(sh->files.size() == 2);
  REQUIRE(sh->tensors.size() == 2);
  CHECK(sh->tensors[0].name == "x");
  CHECK(sh->parameter_count == 10);

  WriteAll(
      m + "/model.safetensors.index.json",
      R"({"weight_map":{"y":"model-00002-of-00002.safetensors","x":"model-00001-of-00002.safetensors","z":"model-00001-of-00002.safetensors"}})");
  auto missing = InspectTensors({m, false, 1}, nullptr);
  CHECK(missing.status().message() == "tensor 'z' is mapped to model-00001-of-00002.safetensors but not there");
  WriteAll(m + "/model.safetensors.index.json", R"({"weight_map":{"x":"../evil.safetensors"}})");
  CHECK(InspectTensors({m, false, 1}, nullptr).status().code() == ErrorCode::kInvalidInput);
  CHECK(InspectTensors({dir.path(), false, 1}, nullptr).status().code() == ErrorCode::kNotFound);
}
