// Memory accounting against reference/accounting.md: CS336 adamwAccounting, KV bytes per token, Korthikanti, ZeRO.
#include "lmkit/accounting/memory.h"

#include <catch2/catch.hpp>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/roofline.h"
#include "support/run_lmkit.h"

using namespace lmkit::accounting;

namespace {
ModelSpec MemoryPreset(const std::string& name) {
  auto m = LoadPreset(name);
  INFO(name << ": " << m.status().ToString());
  REQUIRE(m.ok());
  return *m;
}
MemoryReport Mem(const ModelSpec& m, const MemoryOptions& o) {
  auto r = EstimateMemory(m, o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}
}  // namespace

TEST_CASE("memory: CS336 adamwAccounting for the GPT-2 XL shape", "[accounting][memory]") {
  auto xl = MemoryPreset("cs336-gpt2-xl");
  MemoryOptions o;
  o.dtype = Dtype::kFp32;
  o.optimizer = Optimizer::kAdamW;
  o.activations = ActivationModel::kCs336;
  o.overhead_bytes = 0;
  o.seq_len = 1024;
  o.capacity_bytes = 80e9;
  auto r = Mem(xl, o);
  CHECK(r.weight_bytes_per_param + r.grad_bytes_per_param + r.optimizer_bytes_per_param == 16);
  CHECK(r.weights + r.gradients + r.optimizer == 34032921600ULL);
  CHECK(r.weights == 8508230400ULL);  // fp32 weights of XL
  // a·batch + b: b = 16 bytes/param; a = the listed activations of one 1024-token sequence in fp32 [computed]:
  // 4 * (48 * (8*1024*1600 + 2*1024*6400 + 2*25*1024^2) + 1024*1600 + 2*1024*50257).
  CHECK(r.fixed == 34032921600ULL);
  CHECK(r.per_sequence == 15517753344ULL);
  CHECK(r.max_batch == 2);  // (80e9 - 34.03e9) / 15.52e9 = 2.96
  o.batch = 3;
  CHECK_FALSE(Mem(xl, o).fits);
  o.batch = 2;
  CHECK(Mem(xl, o).fits);
}

TEST_CASE("memory: CS336 days of training on one A100 at 50% MFU", "[accounting][memory]") {
  auto xl = MemoryPreset("cs336-gpt2-xl");
  FlopsOptions fo;
  fo.seq_len = 1024;
  fo.batch = 1024;
  auto f = ComputeFlops(xl, fo);
  REQUIRE(f.ok());
  auto a100 = FindGpu("a100-80");
  REQUIRE(a100.ok());
  auto t = EstimateStepTime(static_cast<double>(f->training), static_cast<double>(f->tokens), *a100, Dtype::kFp32, 0.5);
  REQUIRE(t.ok());
  double days = t->seconds * 400000 / 86400;
  CHECK(days == Approx(6584).epsilon(0.0005));
  auto t6 = EstimateStepTime(f->six_nd, static_cast<double>(f->tokens), *a100, Dtype::kFp32, 0.5);
  REQUIRE(t6.ok());
  CHECK(t6->seconds * 400000 / 86400 == Approx(6354).epsilon(0.0005));
}

TEST_CASE("memory: KV cache bytes per token in bf16", "[accounting][memory]") {
  struct Kv {
    const char* preset;
    uint64_t per_token;
  };
  const Kv kv[] = {{"gpt2", 36864},
                   {"gpt2-xl", 307200},
                   {"llama-2-7b", 524288},
                   {"llama-3-8b", 131072},
                   {"mistral-7b-v0.1", 131072},
                   {"mixtral-8x7b-v0.1", 131072},
                   {"qwen2.5-7b", 57344},
                   {"deepseek-v3", 70272},
                   {"qwen3-30b-a3b", 2ULL * 48 * 4 * 128 * 2}};  // config head_dim 128, not 2048 / 32
  for (const auto& k : kv) {
    INFO(k.preset);
    CHECK(KvCacheBytes(MemoryPreset(k.preset), 1, 2.0) == k.per_token);
  }
  CHECK(KvCacheBytes(MemoryPreset("llama-2-7b"), 2048, 2.0) == 1073741824ULL);
  Dimensions d;  // Llama-2-70B: 80 layers, d 8192, 64 heads, GQA-8
  d.layers = 80;
  d.d_model = 8192;
  d.heads = 64;
  d.kv_heads = 8;
  d.d_ff = 28672;
  d.vocab = 32000;
  auto l70 = FromDimensions(d);
  REQUIRE(l70.ok());
  CHECK(KvCacheBytes(*l70, 1, 2.0) == 327680);
  CHECK(KvCacheBytes(*l70, 4096, 2.0) == 1342177280ULL);
  // Mistral's 4096-token window caps the cache.
  CHECK(KvCacheBytes(MemoryPreset("mistral-7b-v0.1"), 32768, 2.0) == 4096ULL * 131072);
  MemoryOptions o;
  o.mode = Mode::kInference;
  o.seq_len = 2048;
  o.batch = 4;
  auto r = Mem(MemoryPreset("llama-2-7b"), o);
  CHECK(r.kv_bytes_per_token == 524288);
  CHECK(r.kv_cache == 4ULL * 1073741824ULL);
  CHECK(r.weights == 2ULL * 6738415616ULL);
  CHECK(r.gradients == 0);
  CHECK(r.optimizer == 0);
}

TEST_CASE("memory: Korthikanti activations by recompute mode", "[accounting][memory]") {
  Dimensions d;
  d.layers = 2;
  d.d_model = 12288;
  d.heads = 96;
  d.vocab = 51200;
  d.ffn = FfnKind::kGelu;
  d.norm = NormKind::kLayerNorm;
  auto m = FromDimensions(d);
  REQUIRE(m.ok());
  MemoryOptions o;
  o.seq_len = 2048;
  o.overhead_bytes = 0;
  const uint64_t sbh = 2048ULL * 12288, tail = 2 * sbh + 4ULL * 2048 * 51200;
  auto none = Mem(*m, o);
  CHECK(none.activations == 2 * sbh * (34 + 5 * 96 * 2048 / 12288) + tail);  // 34 + 80 per layer
  o.recompute = Recompute::kSelective;
  CHECK(Mem(*m, o).activations == 2 * 34 * sbh + tail);
  o.recompute = Recompute::kFull;
  CHECK(Mem(*m, o).activations == 2 * 2 * sbh + sbh * 114 + tail);
  o.batch = 3;
  auto b3 = Mem(*m, o);
  CHECK(b3.activations == 3 * (2 * 2 * sbh + sbh * 114 + tail));
  CHECK(b3.total == b3.fixed + 3 * b3.per_sequence);
}

TEST_CASE("memory: ZeRO stages shard optimizer, gradients, weights", "[accounting][memory]") {
  auto m = MemoryPreset("llama-2-7b");
  const uint64_t p = 6738415616ULL;
  MemoryOptions o;
  o.gpus = 8;
  auto z0 = Mem(m, o);
  CHECK(z0.weights == 2 * p);
  CHECK(z0.gradients == 2 * p);
  CHECK(z0.optimizer == 12 * p);
  o.zero = 1;
  CHECK(Mem(m, o).optimizer == 12 * p / 8);
  o.zero = 2;
  auto z2 = Mem(m, o);
  CHECK(z2.gradients == 2 * p / 8);
  CHECK(z2.weights == 2 * p);
  o.zero = 3;
  auto z3 = Mem(m, o);
  CHECK(z3.weights == 2 * p / 8);
  o.optimizer = Optimizer::kAdamW8bit;
  o.zero = 0;
  auto a8 = Mem(m, o);
  CHECK(a8.weights + a8.gradients + a8.optimizer == 6 * p);
  o.optimizer = Optimizer::kSgd;
  auto sgd = Mem(m, o);
  CHECK(sgd.weights + sgd.gradients + sgd.optimizer == 8 * p);
  o.dtype = Dtype::kInt8;
  CHECK(EstimateMemory(m, o).status().code() == lmkit::ErrorCode::kInvalidArgument);
}

TEST_CASE("memory: fits and the largest batch on a GPU", "[accounting][memory]") {
  auto h100 = FindGpu("H100");
  REQUIRE(h100.ok());
  CHECK(h100->memory_bytes == 80e9);
  CHECK(h100->PeakFlops(Dtype::kBf16) == Approx(989.4e12));
  MemoryOptions o;
  o.mode = Mode::kInference;
  o.seq_len = 4096;
  o.capacity_bytes = h100->memory_bytes;
  auto r = Mem(MemoryPreset("llama-3-8b"), o);
  CHECK(r.fits);
  CHECK(r.max_batch ==
        static_cast<int64_t>((80e9 - static_cast<double>(r.fixed)) / static_cast<double>(r.per_sequence)));
  CHECK(r.max_batch > 50);
  auto big = Mem(MemoryPreset("mixtral-8x7b-v0.1"), o);  // 93 GB of bf16 weights
  CHECK_FALSE(big.fits);
  CHECK(big.max_batch == 0);
}

TEST_CASE("gpu: table lookups and dtype peaks", "[accounting][gpu]") {
  auto table = LoadGpuTable();
  REQUIRE(table.ok());
  CHECK(table->size() >= 7);
  for (const char* name : {"a100-40", "a100-80", "h100-sxm", "h100-pcie", "h200", "l4", "rtx-4090"}) {
    auto g = FindGpu(name);
    INFO(name);
    REQUIRE(g.ok());
    CHECK(g->PeakFlops(Dtype::kBf16) > 0);
    CHECK(g->bandwidth_bytes_per_s > 0);
    CHECK(g->memory_bytes > 0);
    CHECK_FALSE(g->source.empty());
  }
  CHECK(FindGpu("a100")->PeakFlops(Dtype::kFp8) == 0);
  CHECK(FindGpu("A100 SXM4 80GB")->PeakFlops(Dtype::kFp32) == Approx(19.5e12));
  auto bad = FindGpu("h1000");
  CHECK(bad.status().code() == lmkit::ErrorCode::kNotFound);
  CHECK(bad.status().message().find("H100-SXM5-80GB") != std::string::npos);
}

TEST_CASE("roofline: decode is memory-bound, long prefill compute-bound", "[accounting][roofline]") {
  auto m = MemoryPreset("llama-3-8b");
  auto h100 = FindGpu("h100");
  REQUIRE(h100.ok());
  auto dec = BuildDecodeMatmuls(m, 1, 4096);
  REQUIRE(dec.ok());
  auto rd = ComputeRoofline(*dec, *h100, Dtype::kBf16);
  REQUIRE(rd.ok());
  for (const auto& row : rd->rows) CHECK_FALSE(row.compute_bound);
  // One decode token reads every weight once: at least 2 bytes x (params - embedding) over 3.35 TB/s.
  CHECK(rd->time_s >= 2.0 * (8030261248.0 - 128256.0 * 4096) / 3.35e12);
  FlopsOptions o;
  o.seq_len = 4096;
  auto pre = BuildMatmuls(m, o);
  REQUIRE(pre.ok());
  auto rp = ComputeRoofline(*pre, *h100, Dtype::kBf16);
  REQUIRE(rp.ok());
  for (const auto& row : rp->rows)
    if (row.op.name == "q_proj") CHECK(row.compute_bound);
  CHECK(rd->ridge == Approx(989.4 / 3.35));
  // q_proj at M=1: intensity ~ 1 FLOP/byte (2·K·N FLOPs over 2·K·N bytes).
  for (const auto& row : rd->rows)
    if (row.op.name == "q_proj") CHECK(row.intensity == Approx(1.0).epsilon(0.01));
}

TEST_CASE("gpu: a table entry with zero bandwidth or no capacity is an error", "[accounting][gpu]") {
  // A zero bandwidth used to load and make the roofline's ridge and memory times infinite (null in --json); a
  // negative capacity silently dropped memory's fit verdict.
  lmkit::test::TempDir dir;
  const std::string path = dir.file("gpus.json");
  auto load = [&](const std::string& memory_gb, const std::string& bandwidth) {
    lmkit::test::WriteAll(path, R"({"gpus": [{"name": "X1", "memory_gb": )" + memory_gb + R"(, "bandwidth_tb_s": )" +
                                    bandwidth + R"(, "dense_tflops": {"bf16": 100}}]})");
    return LoadGpuTable(path);
  };
  REQUIRE(load("80", "3").ok());
  for (auto [mem, bw] : {std::pair{"80", "0"}, std::pair{"-80", "3"}, std::pair{"80", "1e300"}}) {
    auto t = load(mem, bw);
    INFO(mem << " " << bw);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == lmkit::ErrorCode::kInvalidInput);
    CHECK(t.status().subject() == path);
    CHECK(t.status().message() == "GPU 'X1': memory_gb and bandwidth_tb_s must be positive numbers");
  }
}
