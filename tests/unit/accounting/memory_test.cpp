// Memory accounting against reference/accounting.md: CS336 adamwAccounting, KV bytes per token, Korthikanti, ZeRO.
#include "lmkit/accounting/memory.h"

#include <catch2/catch.hpp>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/roofline.h"
#include "support/run_lmkit.h"
#include "test_models.h"

using namespace lmkit::accounting;

namespace {
MemoryReport Mem(const ModelSpec& m, const MemoryOptions& o) {
  auto r = EstimateMemory(m, o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}
}  // namespace

TEST_CASE("memory: CS336 adamwAccounting for the GPT-2 XL shape", "[accounting][memory]") {
  auto xl = lmkit::test::Preset("cs336-gpt2-xl");
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
  auto xl = lmkit::test::Preset("cs336-gpt2-xl");
  FlopsOptions fo;
  fo.seq_len = 1024;
  fo.batch = 1024;
  auto f = ComputeFlops(xl, fo);
  REQUIRE(f.ok());
  auto a100 = FindGpu("a100-80");
  REQUIRE(a100.ok());
  auto t = EstimateStepTime(static_cast<double>(f->training), static_cast<double>(f->training),
                            static_cast<double>(f->tokens), *a100, Dtype::kFp32, 0.5);
  REQUIRE(t.ok());
  double days = t->seconds * 400000 / 86400;
  CHECK(days == Approx(6584).epsilon(0.0005));
  auto t6 = EstimateStepTime(f->six_nd, f->six_nd, static_cast<double>(f->tokens), *a100, Dtype::kFp32, 0.5);
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
    CHECK(KvCacheBytes(lmkit::test::Preset(k.preset), 1, 2.0) == k.per_token);
  }
  CHECK(KvCacheBytes(lmkit::test::Preset("llama-2-7b"), 2048, 2.0) == 1073741824ULL);
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
  CHECK(KvCacheBytes(lmkit::test::Preset("mistral-7b-v0.1"), 32768, 2.0) == 4096ULL * 131072);
  MemoryOptions o;
  o.mode = Mode::kInference;
  o.seq_len = 2048;
  o.batch = 4;
  auto r = Mem(lmkit::test::Preset("llama-2-7b"), o);
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
  auto m = lmkit::test::Preset("llama-2-7b");
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
  auto r = Mem(lmkit::test::Preset("llama-3-8b"), o);
  CHECK(r.fits);
  CHECK(r.max_batch ==
        static_cast<int64_t>((80e9 - static_cast<double>(r.fixed)) / static_cast<double>(r.per_sequence)));
  CHECK(r.max_batch > 50);
  auto big = Mem(lmkit::test::Preset("mixtral-8x7b-v0.1"), o);  // 93 GB of bf16 weights
  CHECK_FALSE(big.fits);
  CHECK(big.max_batch == 0);
}

// Issue #26 item 5: fp8/int8 apply to the decoder's Linear layers, as llm-compressor's FP8 recipes (and the
// checkpoints vLLM serves) do: embed_tokens is not a Linear and lm_head is ignored, so both stay 16-bit.
TEST_CASE("memory: 8-bit weights quantize Linear layers only, unless the scope says all", "[accounting][memory]") {
  auto m = lmkit::test::RealConfig("llama-3-70b.json");
  MemoryOptions o;
  o.mode = Mode::kInference;
  o.dtype = Dtype::kFp8;
  o.overhead_bytes = 0;
  auto r = Mem(m, o);
  // 70,553,706,496 params: 2 x 128,256 x 8,192 embedding + head and 161 x 8,192 norm weights at 2 bytes; the
  // 68,451,041,280 Linear weights at 1 byte with an fp16 scale for each of their 80 x 83,968 output channels.
  const uint64_t linear = 70553706496ULL - 2ULL * 128256 * 8192 - 161ULL * 8192;
  CHECK(r.params.linear == static_cast<int64_t>(linear));
  CHECK(r.weights == linear + 2 * (70553706496ULL - linear) + 2ULL * 80 * 83968);
  CHECK(r.weights == 72669806592ULL);  // 72.67 GB, where the old all-weights figure was 70.57 GB
  o.quant_scope = QuantScope::kAll;
  CHECK(Mem(m, o).weights == 70567397888ULL);
  // The plan case behind the issue: 8,192 tokens on one H100 "fit with 466 MB free" at 70.57 GB; at 72.67 GB they
  // do not (usable 80e9 x 0.95 - 1 GiB = 74,926,258,176 B).
  o.quant_scope = QuantScope::kLinear;
  o.seq_len = 8192;
  o.capacity_bytes = 80e9 * 0.95 - 1073741824.0;
  CHECK_FALSE(Mem(m, o).fits);
  o.quant_scope = QuantScope::kAll;
  CHECK(Mem(m, o).fits);
  // 16-bit weights do not depend on the scope.
  o.dtype = Dtype::kBf16;
  CHECK(Mem(m, o).weights == 2ULL * 70553706496ULL);
}

// Issue #26 item 6 in `memory`: the KV cache's dtype is its own choice; its default follows the activations.
TEST_CASE("memory: the KV cache dtype", "[accounting][memory]") {
  auto m = lmkit::test::Preset("llama-3-8b");
  MemoryOptions o;
  o.mode = Mode::kInference;
  o.seq_len = 4096;
  o.dtype = Dtype::kFp8;
  auto r = Mem(m, o);
  CHECK(r.kv_dtype == Dtype::kBf16);
  CHECK(r.kv_bytes_per_token == 131072);
  o.kv_dtype = Dtype::kFp8;
  auto r8 = Mem(m, o);
  CHECK(r8.kv_bytes_per_token == 65536);
  CHECK(r8.kv_cache == 4096ULL * 65536);
  o.dtype = Dtype::kFp32;
  o.kv_dtype.reset();
  CHECK(Mem(m, o).kv_bytes_per_token == 262144);
}

// Issue #26 item 8: tensor parallelism splits heads; KV heads are replicated once the GPUs outnumber them (vLLM), and
// a degree that does not divide the heads is refused.
TEST_CASE("memory: tensor parallelism replicates KV heads and needs a degree dividing the heads",
          "[accounting][memory]") {
  auto m = lmkit::test::Preset("llama-3-8b");  // 32 heads, 8 KV heads
  MemoryOptions o;
  o.mode = Mode::kInference;
  o.seq_len = 1024;
  o.gpus = 4;
  auto r4 = Mem(m, o);
  CHECK(r4.kv_heads_per_gpu == 2);
  CHECK(r4.kv_bytes_per_token_gpu == 131072 / 4);
  o.gpus = 16;
  auto r16 = Mem(m, o);
  CHECK(r16.kv_heads_per_gpu == 1);  // replicated: 16 GPUs, 8 KV heads
  CHECK(r16.kv_bytes_per_token_gpu == 131072 / 8);
  CHECK(r16.kv_cache == 1024ULL * 131072 / 8);
  // Weights: the heads, MLP and vocabulary split 16 ways; k/v projections and norms do not shrink below one KV head.
  const uint64_t per_gpu = 2ULL * (128256 * 4096 / 16 * 2 /* embedding + head */ +
                                   32 * (2 * 4096 * 256 /* q, o: 2 heads */ + 2 * 4096 * 128 /* k, v: 1 KV head */ +
                                         3 * 4096 * 14336 / 16 + 2 * 4096) +
                                   4096);
  CHECK(r16.weights == per_gpu);
  o.gpus = 3;
  auto bad = EstimateMemory(m, o);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == lmkit::ErrorCode::kInvalidArgument);
  CHECK(bad.status().ToString() ==
        "gpus (3) must divide the attention heads (32): tensor parallelism splits whole heads");
  // Training keeps --gpus as data-parallel ranks: any count.
  o.mode = Mode::kTraining;
  CHECK(EstimateMemory(m, o).ok());
}
