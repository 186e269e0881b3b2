// Tensor parallelism: the slice each GPU holds (vLLM's KV head replication) and the all-reduces of a step.
#include "lmkit/accounting/tensor_parallel.h"

#include <catch2/catch.hpp>

#include "lmkit/accounting/params.h"
#include "test_models.h"

using namespace lmkit::accounting;

TEST_CASE("tensor parallel: the slice a GPU holds", "[accounting][tp]") {
  auto m = lmkit::test::Preset("llama-3-8b");  // 32 heads, 8 KV heads, d_ff 14336, vocab 128256
  auto s2 = ShardForTensorParallel(m, 2, "tp");
  REQUIRE(s2.ok());
  CHECK(s2->heads == 16);
  CHECK(s2->kv_heads == 4);
  CHECK(s2->d_ff == 7168);
  CHECK(s2->vocab == 64128);
  CHECK(s2->d_model == 4096);  // norms and residual stream stay whole
  auto s32 = ShardForTensorParallel(m, 32, "tp");
  REQUIRE(s32.ok());
  CHECK(s32->heads == 1);
  CHECK(s32->kv_heads == 1);  // 8 KV heads on 32 GPUs: each GPU keeps one, replicated 4 ways (vLLM)
  // The slices hold more than the whole only by what is replicated: k/v projections beyond 8 GPUs, norms.
  const int64_t whole = CountParameters(m).total, slice = CountParameters(*s2).total;
  CHECK(2 * slice - whole == CountParameters(m).norms);
  CHECK(ShardForTensorParallel(m, 1, "tp")->heads == 32);
  auto bad = ShardForTensorParallel(m, 6, "tp");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "tp (6) must divide the attention heads (32): tensor parallelism splits whole heads");
  // 48 heads, 12 KV heads: 8 GPUs divide the heads but not the KV heads evenly.
  Dimensions d;
  d.layers = 2;
  d.d_model = 6144;
  d.heads = 48;
  d.kv_heads = 12;
  d.vocab = 1000;
  auto odd = FromDimensions(d);
  REQUIRE(odd.ok());
  CHECK(ShardForTensorParallel(*odd, 8, "tp").status().message() ==
        "tp (8) does not spread the 12 key/value heads evenly: they must divide among the GPUs, or the GPUs among "
        "them");
  CHECK(ShardForTensorParallel(*odd, 4, "tp").ok());
  // MLA keeps its latent cache whole on every GPU.
  auto ds = lmkit::test::Preset("deepseek-v3");
  auto dss = ShardForTensorParallel(ds, 8, "tp");
  REQUIRE(dss.ok());
  CHECK(dss->heads == 16);
  CHECK(dss->mla_spec.kv_lora_rank == ds.mla_spec.kv_lora_rank);
}

TEST_CASE("tensor parallel: all-reduces per pass and their ring time", "[accounting][tp]") {
  auto m = lmkit::test::Preset("llama-3-8b");
  auto c = TensorParallelAllReduce(m, 4, 1000, 2.0, 450e9, 10e-6);
  CHECK(c.count == 2 * 32 + 1);
  CHECK(c.bytes_each == 1000.0 * 4096 * 2);
  CHECK(c.seconds == Approx(65 * (2.0 * 3 / 4 * 1000 * 4096 * 2 / 450e9 + 10e-6)));
  CHECK(TensorParallelAllReduce(m, 1, 1000, 2.0, 450e9, 10e-6).seconds == 0);
  // A parallel attention/MLP block needs one all-reduce per layer (GPT-NeoX, Falcon).
  m.parallel_block = true;
  CHECK(TensorParallelAllReduce(m, 4, 1000, 2.0, 450e9, 10e-6).count == 32 + 1);
}
