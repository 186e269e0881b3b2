// The Llama forward pass: KV-cache consistency against one prefill, thread independence, the checkpoint errors and
// F16/BF16 loading.
#include "lmkit/model/llama.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"
#include "lmkit/io/safetensors.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::model;
using lmkit::test::TempDir;
using lmkit::test::TestData;
namespace fs = std::filesystem;

namespace {

const std::string kLlamaModel = TestData("model/stories260K");

Json Golden() {
  auto text = ReadFileToString(kLlamaModel + "/golden_greedy.json");
  REQUIRE(text.ok());
  auto j = ParseJson(*text, "golden");
  REQUIRE(j.ok());
  return *j;
}

// A copy of stories260K in `dir` with config.json edited by `edit` and tensors filtered by `keep`.
void WriteVariant(const std::string& dir, const std::function<void(Json&)>& edit,
                  const std::function<bool(const std::string&)>& keep) {
  auto cfg = ParseJson(*ReadFileToString(kLlamaModel + "/config.json"), "cfg");
  REQUIRE(cfg.ok());
  edit(*cfg);
  lmkit::test::WriteAll(dir + "/config.json", DumpJson(*cfg));
  auto st = io::SafetensorsFile::Open(kLlamaModel + "/model.safetensors");
  REQUIRE(st.ok());
  std::vector<io::TensorData> out;
  for (const auto& t : st->tensors())
    if (keep(t.name)) out.push_back({t.name, t.dtype, t.shape, st->Data(t)});
  REQUIRE(io::WriteSafetensors(dir + "/model.safetensors", out).ok());
}

}  // namespace

TEST_CASE("llama: one prefill equals token-by-token decoding with the KV cache, for any thread count", "[model]") {
  auto m = LlamaModel::Load(kLlamaModel);
  REQUIRE(m.ok());
  CHECK(m->mode() == WeightMode::kFloat);
  const auto ids = Golden()["tokens"].get<std::vector<uint32_t>>();
  const uint32_t V = m->config().vocab, n = static_cast<uint32_t>(ids.size());
  std::vector<float> all(static_cast<size_t>(n) * V), step(V), all3(all.size());
  KvCache c = m->NewCache(n);
  ThreadPool p1(1), p3(3);
  REQUIRE(m->Forward(ids, c, &p1, all.data(), true).ok());
  CHECK(c.length() == n);
  c.Clear();
  REQUIRE(m->Forward(ids, c, &p3, all3.data(), true).ok());
  CHECK(all == all3);  // bit-identical across thread counts
  c.Clear();
  double worst = 0;
  for (uint32_t t = 0; t < n; ++t) {
    REQUIRE(m->Forward(std::span<const uint32_t>(&ids[t], 1), c, &p3, step.data(), false).ok());
    for (uint32_t v = 0; v < V; ++v) worst = std::max<double>(worst, std::fabs(step[v] - all[size_t{t} * V + v]));
  }
  CHECK(worst < 1e-5);
  // The cache is full now: one more token is an error, not an overflow.
  auto full = m->Forward(std::span<const uint32_t>(&ids[0], 1), c, &p1, step.data(), false);
  CHECK(full.message() == "sequence of 65 tokens exceeds the KV cache capacity 64");
  c.Clear();
  const uint32_t bad[2] = {1, 512};
  CHECK(m->Forward(bad, c, &p1, all.data(), true).message() == "token id 512 at position 1 is >= vocab_size 512");
}

TEST_CASE("llama: checkpoint errors are one line naming the file and the tensor", "[model]") {
  TempDir d;
  auto same = [](Json&) {};
  {
    const std::string p = d.file("missing");
    fs::create_directories(p);
    WriteVariant(p, same, [](const std::string& n) { return n != "model.layers.2.mlp.up_proj.weight"; });
    auto m = LlamaModel::Load(p);
    CHECK(m.status().ToString() == p + ": missing tensor 'model.layers.2.mlp.up_proj.weight'");
  }
  {
    const std::string p = d.file("fewer_layers");
    fs::create_directories(p);
    WriteVariant(
        p, [](Json& j) { j["num_hidden_layers"] = 4; }, [](const std::string&) { return true; });
    auto m = LlamaModel::Load(p);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().code() == ErrorCode::kInvalidInput);
    CHECK(m.status().message().find("is not part of the model config.json describes") != std::string::npos);
  }
  {
    const std::string p = d.file("wider");
    fs::create_directories(p);
    WriteVariant(
        p, [](Json& j) { j["intermediate_size"] = 200; }, [](const std::string&) { return true; });
    auto m = LlamaModel::Load(p);
    CHECK(m.status().ToString() == p + "/model.safetensors: tensor 'model.layers.0.mlp.gate_proj.weight' has shape "
                                       "[172, 64]; config.json implies [200, 64]");
  }
  {
    const std::string p = d.file("untied");
    fs::create_directories(p);
    WriteVariant(
        p, [](Json& j) { j["tie_word_embeddings"] = false; }, [](const std::string&) { return true; });
    CHECK(LlamaModel::Load(p).status().ToString() == p + ": missing tensor 'lm_head.weight'");
  }
  {
    // A quantization_config whose fields have the wrong types is refused by name (value() used to throw).
    const std::string p = d.file("bad_quant_types");
    fs::create_directories(p);
    WriteVariant(
        p,
        [](Json& j) {
          j["quantization_config"] =
              Json{{"quant_method", "compressed-tensors"},
                   {"format", "int-quantized"},
                   {"config_groups",
                    {{"group_0", {{"input_activations", {{"num_bits", "8"}, {"type", 5}, {"symmetric", "yes"}}}}}}}};
        },
        [](const std::string&) { return true; });
    auto m = LlamaModel::Load(p);
    CHECK(m.status().ToString() == p + "/config.json: input_activations must be symmetric 8-bit int");
  }
  CHECK(LlamaModel::Load(d.file("nothing")).status().code() == ErrorCode::kNotFound);
}

TEST_CASE("llama: F16 and BF16 checkpoints load exactly as their values in F32", "[model]") {
  auto st = io::SafetensorsFile::Open(kLlamaModel + "/model.safetensors");
  REQUIRE(st.ok());
  auto f32 = LlamaModel::Load(kLlamaModel);
  REQUIRE(f32.ok());
  const auto ids = Golden()["tokens"].get<std::vector<uint32_t>>();
  const uint32_t V = 512, n = static_cast<uint32_t>(ids.size());
  std::vector<float> orig(size_t{n} * V), got(orig.size()), want(orig.size());
  KvCache c = f32->NewCache(n);
  REQUIRE(f32->Forward(ids, c, nullptr, orig.data(), true).ok());
  TempDir d;
  for (io::DType dt : {io::DType::kF16, io::DType::kBF16}) {
    // The same weights twice: stored as dt, and rounded to dt but stored as F32. Both must give identical logits.
    const std::string half = d.file(std::string(io::DTypeName(dt))), wide = half + "_as_f32";
    std::vector<std::vector<uint8_t>> hb, wb;
    for (const auto& t : st->tensors()) {
      std::vector<float> x(t.num_elements());
      io::ConvertToF32(t.dtype, st->Data(t).data(), x.data(), x.size());
      hb.emplace_back(x.size() * 2);
      REQUIRE(io::ConvertFromF32(dt, x.data(), hb.back().data(), x.size()).ok());
      wb.emplace_back(x.size() * 4);
      io::ConvertToF32(dt, hb.back().data(), reinterpret_cast<float*>(wb.back().data()), x.size());
    }
    for (const auto& [dir, bufs, type] : {std::tuple{half, &hb, dt}, std::tuple{wide, &wb, io::DType::kF32}}) {
      fs::create_directories(dir);
      fs::copy_file(kLlamaModel + "/config.json", dir + "/config.json");
      std::vector<io::TensorData> out;
      for (size_t i = 0; i < bufs->size(); ++i) {
        const auto& t = st->tensors()[i];
        out.push_back({t.name, type, t.shape, (*bufs)[i]});
      }
      REQUIRE(io::WriteSafetensors(dir + "/model.safetensors", out).ok());
    }
    for (const auto& [dir, logits] : {std::pair{half, &got}, std::pair{wide, &want}}) {
      auto m = LlamaModel::Load(dir);
      REQUIRE(m.ok());
      KvCache c2 = m->NewCache(n);
      REQUIRE(m->Forward(ids, c2, nullptr, logits->data(), true).ok());
    }
    CHECK(got == want);
    CHECK(got != orig);  // the rounding did reach the logits
  }
}
