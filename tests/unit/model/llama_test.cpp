// The Llama forward pass: KV-cache consistency against one prefill, thread independence, the checkpoint errors,
// F16/BF16 loading and the peak memory of a BF16 model.
#include "lmkit/model/llama.h"

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/safetensors.h"
#include "support/run_lmkit.h"
#include "support/skip.h"

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
    CHECK(m.status().ToString() ==
          p + "/config.json: quantization_config group 'group_0': input_activations must be symmetric 8-bit int");
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

namespace {

// A generated Llama whose embedding dominates as in small real models (hidden 256, 2 layers, heads 4 / kv 2, FFN 688,
// vocab V (32768: 8.4M parameters each for the embedding and an untied head, 1.5M in the layers); tied when `tied`)
// with uniform bf16 weights in [-0.05, 0.05] (norms 1), written as `dt`; returns the safetensors file's size.
uint64_t WriteGenerated(const std::string& dir, io::DType dt, bool tied, uint32_t V = 32768) {
  const uint32_t H = 256, L = 2, heads = 4, kv = 2, hd = 64, F = 688;
  fs::create_directories(dir);
  Json cfg = {{"architectures", {"LlamaForCausalLM"}},
              {"model_type", "llama"},
              {"hidden_size", H},
              {"intermediate_size", F},
              {"num_hidden_layers", L},
              {"num_attention_heads", heads},
              {"num_key_value_heads", kv},
              {"vocab_size", V},
              {"max_position_embeddings", 64},
              {"rms_norm_eps", 1e-5},
              {"rope_theta", 10000.0},
              {"hidden_act", "silu"},
              {"tie_word_embeddings", tied}};
  lmkit::test::WriteAll(dir + "/config.json", DumpJson(cfg));
  std::vector<std::pair<std::string, std::vector<uint64_t>>> shapes = {{"model.embed_tokens.weight", {V, H}},
                                                                       {"model.norm.weight", {H}}};
  if (!tied) shapes.push_back({"lm_head.weight", {V, H}});
  for (uint32_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char* n : {"input_layernorm", "post_attention_layernorm"}) shapes.push_back({p + n + ".weight", {H}});
    shapes.push_back({p + "self_attn.q_proj.weight", {heads * hd, H}});
    shapes.push_back({p + "self_attn.k_proj.weight", {kv * hd, H}});
    shapes.push_back({p + "self_attn.v_proj.weight", {kv * hd, H}});
    shapes.push_back({p + "self_attn.o_proj.weight", {H, heads * hd}});
    shapes.push_back({p + "mlp.gate_proj.weight", {F, H}});
    shapes.push_back({p + "mlp.up_proj.weight", {F, H}});
    shapes.push_back({p + "mlp.down_proj.weight", {H, F}});
  }
  uint64_t state = 12345;
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<io::TensorData> out;
  for (const auto& [name, shape] : shapes) {
    size_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::vector<float> x(n, 1.0f);
    if (shape.size() == 2)
      for (float& v : x) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        // bf16 values, so that the F32 file holds exactly what the BF16 one does
        v = io::Bf16ToF32(io::F32ToBf16((static_cast<float>(state >> 40) / 16777216.0f - 0.5f) * 0.1f));
      }
    bufs.emplace_back(n * io::DTypeSize(dt));
    REQUIRE(io::ConvertFromF32(dt, x.data(), bufs.back().data(), n).ok());
    out.push_back({name, dt, shape, bufs.back()});
  }
  REQUIRE(io::WriteSafetensors(dir + "/model.safetensors", out).ok());
  return fs::file_size(dir + "/model.safetensors");
}

uint64_t StatusKb(const char* key) {  // a "VmXxx:  N kB" line of /proc/self/status
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  const size_t len = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, len) == 0) kb = std::strtoull(line + len + 1, nullptr, 10);
  std::fclose(f);
  return kb;
}

// In a forked child: the peak resident memory (VmHWM) that loading `dir` and scoring 16 tokens adds to the child's
// resident memory at the start, in bytes; -1 when the peak cannot be reset (no /proc/self/clear_refs) or a step fails.
[[maybe_unused]] int64_t PeakAddedBytes(const std::string& dir) {
  int fd[2];
  REQUIRE(::pipe(fd) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fd[0]);
    int64_t added = -1;
    // The parent's freed heap is resident and would be reused unseen: handed back first, then the peak is reset.
    ::malloc_trim(0);
    FILE* cr = std::fopen("/proc/self/clear_refs", "w");
    if (cr && std::fputs("5", cr) >= 0 && std::fclose(cr) == 0) {  // "5": VmHWM := VmRSS
      const uint64_t base = StatusKb("VmRSS:");
      auto m = LlamaModel::Load(dir);
      if (m.ok()) {
        std::vector<uint32_t> ids(16);
        for (uint32_t i = 0; i < ids.size(); ++i) ids[i] = (i * 977 + 3) % m->config().vocab;
        std::vector<float> logits(ids.size() * size_t{m->config().vocab});
        KvCache c = m->NewCache(static_cast<uint32_t>(ids.size()));
        if (m->Forward(ids, c, nullptr, logits.data(), true).ok())
          added = static_cast<int64_t>(StatusKb("VmHWM:") - base) * 1024;
      }
    }
    (void)!::write(fd[1], &added, sizeof added);
    ::_exit(0);
  }
  ::close(fd[1]);
  int64_t added = -1;
  const bool got = ::read(fd[0], &added, sizeof added) == sizeof added;
  ::close(fd[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  REQUIRE(got);
  return added;
}

}  // namespace

TEST_CASE("llama: a BF16 model's peak memory is its file size plus activations, not an fp32 copy", "[model]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  LMKIT_SKIP("the sanitizers' shadow memory and quarantine change resident memory");
#else
  TempDir d;
  // What the same steps add for a 1 MB model: the code paged in, the allocator, the runtime (measured, not guessed).
  const int64_t overhead = PeakAddedBytes(kLlamaModel);
  if (overhead < 0) LMKIT_SKIP("cannot reset VmHWM through /proc/self/clear_refs here");
  for (bool tied : {false, true}) {
    const std::string dir = d.file(tied ? "tied" : "untied");
    const uint64_t file = WriteGenerated(dir, io::DType::kBF16, tied);
    const int64_t added = PeakAddedBytes(dir);
    INFO("tied " << tied << ": file " << file << " bytes, peak added " << added << " bytes, of which " << overhead
                 << " for a 1 MB model");
    // 1.2 x the file, plus 4 MiB for activations (16 x 32768 logits are 2 MiB, the KV cache). An fp32 embedding
    // (+16.8 MB), an fp32 copy of a tied head, or the mapping kept resident (+ the file) each break it.
    CHECK(added - overhead <= static_cast<int64_t>(file * 6 / 5) + (int64_t{4} << 20));
    CHECK(added >= static_cast<int64_t>(file * 9 / 10));  // the measurement sees the weights at all
  }
#endif
}

TEST_CASE("llama: a BF16 embedding and head give the logits of the same values stored as F32", "[model]") {
  TempDir d;
  const std::string half = d.file("small_bf16"), wide = d.file("small_f32");
  WriteGenerated(half, io::DType::kBF16, false, 2048);
  WriteGenerated(wide, io::DType::kF32, false, 2048);
  std::vector<uint32_t> ids = {5, 2047, 400, 17, 17, 1023, 2};
  std::vector<std::vector<float>> logits;
  for (const std::string& dir : {half, wide}) {
    auto m = LlamaModel::Load(dir);
    REQUIRE(m.ok());
    KvCache c = m->NewCache(static_cast<uint32_t>(ids.size()));
    logits.emplace_back(ids.size() * 2048);
    REQUIRE(m->Forward(ids, c, nullptr, logits.back().data(), true).ok());
  }
  CHECK(logits[0] == logits[1]);
}

TEST_CASE("llama: w4a16 pack-quantized weights load as nibble code x group scale (hand-packed)", "[model]") {
  // stories260K with layer 0's q_proj [64, 64] replaced by a hand-packed compressed-tensors W4A16 tensor: codes
  // c[r][k] = k % 16 - 8, stored + 8 as nibbles 8 to an int32 word, column k at bits 4 * (k % 8) of word k / 8
  // (compressed-tensors' pack_to_int32), so every row packs to the words 0x76543210, 0xFEDCBA98 (x 4); symmetric,
  // no zero point; one scale per group of 4 columns, s[r][g] = (1 + (r + g) % 5) / 64. The float twin holds
  // c[r][k] * s[r][k / 4] as F32: both must give the same logits, bit for bit.
  auto st = io::SafetensorsFile::Open(kLlamaModel + "/model.safetensors");
  REQUIRE(st.ok());
  const std::string q_name = "model.layers.0.self_attn.q_proj";
  const uint64_t R = 64, C = 64, G = 4;
  std::vector<int32_t> packed(R * C / 8);
  for (uint64_t i = 0; i < packed.size(); ++i) packed[i] = static_cast<int32_t>(i % 2 == 0 ? 0x76543210u : 0xFEDCBA98u);
  std::vector<float> scales(R * C / G), dense(R * C);
  for (uint64_t r = 0; r < R; ++r)
    for (uint64_t g = 0; g < C / G; ++g) scales[r * (C / G) + g] = static_cast<float>(1 + (r + g) % 5) / 64.0f;
  for (uint64_t r = 0; r < R; ++r)
    for (uint64_t k = 0; k < C; ++k)
      dense[r * C + k] = static_cast<float>(static_cast<int>(k % 16) - 8) * scales[r * (C / G) + k / G];
  const int64_t shape[2] = {static_cast<int64_t>(R), static_cast<int64_t>(C)};
  auto bytes = [](const auto& v) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(v[0]));
  };
  TempDir d;
  const std::string q4 = d.file("w4a16"), f32 = d.file("f32");
  for (const std::string& dir : {q4, f32}) {
    fs::create_directories(dir);
    std::vector<io::TensorData> out;
    for (const auto& t : st->tensors()) {
      if (t.name != q_name + ".weight") {
        out.push_back({t.name, t.dtype, t.shape, st->Data(t)});
      } else if (dir == f32) {
        out.push_back({t.name, io::DType::kF32, t.shape, bytes(dense)});
      } else {
        out.push_back({q_name + ".weight_packed", io::DType::kI32, {R, C / 8}, bytes(packed)});
        out.push_back({q_name + ".weight_scale", io::DType::kF32, {R, C / G}, bytes(scales)});
        out.push_back({q_name + ".weight_shape",
                       io::DType::kI64,
                       {2},
                       std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(shape), sizeof shape)});
      }
    }
    REQUIRE(io::WriteSafetensors(dir + "/model.safetensors", out).ok());
    auto cfg = ParseJson(*ReadFileToString(kLlamaModel + "/config.json"), "cfg");
    REQUIRE(cfg.ok());
    if (dir == q4)
      (*cfg)["quantization_config"] = Json::parse(R"({
        "quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "format": "pack-quantized", "input_activations": null,
          "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 4,
                      "dynamic": false}}},
        "ignore": ["lm_head"]})");
    lmkit::test::WriteAll(dir + "/config.json", DumpJson(*cfg));
  }
  const auto ids = Golden()["tokens"].get<std::vector<uint32_t>>();
  const uint32_t V = 512, n = static_cast<uint32_t>(ids.size());
  std::vector<float> got(size_t{n} * V), want(got.size());
  for (const auto& [dir, logits] : {std::pair{q4, &got}, std::pair{f32, &want}}) {
    auto m = LlamaModel::Load(dir);
    REQUIRE(m.ok());
    CHECK(m->mode() == (dir == q4 ? WeightMode::kW4A16 : WeightMode::kFloat));
    KvCache c = m->NewCache(n);
    REQUIRE(m->Forward(ids, c, nullptr, logits->data(), true).ok());
  }
  CHECK(got == want);
  CHECK(std::string(WeightModeName(WeightMode::kW4A16)) == "w4a16");
}
