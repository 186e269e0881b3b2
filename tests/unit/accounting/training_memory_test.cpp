// Training memory under a parallel layout: Megatron-LM's own estimate reproduced to the byte against an independent
// re-derivation (tests/data/accounting/megatron_memory.py), and lmkit's per-stage model against Korthikanti et al.'s
// Table 2 and hand counts.
#include "lmkit/accounting/training_memory.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "lmkit/accounting/params.h"
#include "test_models.h"

using namespace lmkit::accounting;

namespace {

ModelSpec Model(const std::string& name) {
  if (name == "llama-3-70b") return lmkit::test::RealConfig("llama-3-70b.json");
  return lmkit::test::Preset(name);
}

}  // namespace

// Each row: model, tp, pp, vpp, cp, dp, ep, micro-batch, global batch, seq, distributed optimizer, SP, selective;
// Megatron's weight+optimizer bytes and activation bytes of the most loaded shard, from megatron_memory.py (exact
// fractions, rounded half up).
TEST_CASE("training memory: --convention megatron equals Megatron-LM's theoretical_memory_usage.py",
          "[accounting][training]") {
  struct Row {
    const char* model;
    int64_t tp, pp, vpp, cp, dp, ep, mb, gbs, seq;
    bool distopt, sp, selective;
    uint64_t weight_and_optimizer, activations;
  };
  const Row rows[] = {
      {"gpt2-medium", 1, 1, 1, 1, 8, 1, 4, 64, 1024, false, false, false, 6364827648ULL, 4039621018ULL},
      {"gpt2-medium", 2, 2, 1, 1, 4, 1, 2, 64, 1024, true, true, true, 912319488ULL, 857751552ULL},
      {"gpt2-large", 4, 4, 3, 1, 2, 1, 1, 32, 1024, true, true, true, 726044160ULL, 502999040ULL},
      {"llama-3-8b", 1, 1, 1, 1, 8, 1, 1, 32, 8192, false, false, false, 144544702464ULL, 40644762010ULL},
      {"llama-3-8b", 2, 1, 1, 1, 4, 1, 1, 32, 8192, true, true, true, 36137373696ULL, 19365134336ULL},
      {"llama-3-8b", 4, 2, 1, 1, 2, 1, 1, 8, 8192, true, false, false, 12049735680ULL, 18109464576ULL},
      {"llama-3-8b", 8, 4, 2, 1, 1, 1, 2, 16, 4096, false, true, true, 5116151808ULL, 5928693760ULL},
      {"llama-3-8b", 2, 4, 1, 2, 2, 1, 1, 2, 8192, true, true, true, 13621800960ULL, 4311777280ULL},
      {"llama-3-70b", 8, 4, 1, 1, 32, 1, 1, 1024, 8192, true, true, true, 14481101568ULL, 21508423680ULL},
      {"llama-3-70b", 8, 8, 5, 1, 16, 1, 1, 512, 4096, true, true, true, 8112372480ULL, 12655931392ULL},
      {"llama-3-70b", 4, 8, 1, 1, 4, 1, 2, 32, 4096, false, false, false, 43244144640ULL, 45379289088ULL},
      {"qwen2.5-7b", 4, 1, 1, 1, 16, 1, 1, 64, 4096, true, true, true, 12852169344ULL, 4663549952ULL},
      {"qwen2.5-7b", 2, 2, 1, 1, 2, 1, 1, 2, 4096, false, true, false, 34270612992ULL, 4762981171ULL},
      {"mixtral-8x7b-v0.1", 2, 4, 1, 1, 8, 8, 1, 256, 4096, true, true, true, 14435851776ULL, 8623554560ULL},
      {"mixtral-8x7b-v0.1", 1, 8, 2, 1, 8, 4, 1, 64, 4096, true, false, false, 19153997568ULL, 27754524672ULL},
      {"mixtral-8x7b-v0.1", 4, 1, 1, 1, 4, 2, 1, 16, 4096, false, true, true, 108721152000ULL, 4448067584ULL},
      {"qwen3-30b-a3b", 2, 2, 1, 1, 16, 16, 1, 128, 4096, true, true, true, 10776754944ULL, 6048219136ULL},
      {"qwen3-30b-a3b", 1, 4, 1, 1, 8, 8, 2, 64, 4096, false, false, false, 26042803200ULL, 28820176896ULL},
      {"deepseek-moe-16b", 1, 2, 1, 1, 8, 8, 1, 64, 4096, true, false, false, 22169169408ULL, 8402937446ULL},
      {"deepseek-moe-16b", 2, 1, 1, 1, 4, 4, 1, 32, 4096, true, true, true, 40073103360ULL, 5484068864ULL},
      {"deepseek-v3", 1, 16, 1, 1, 128, 64, 1, 15360, 4096, true, false, false, 19123486218ULL, 64431351398ULL},
      {"deepseek-v3", 2, 8, 1, 1, 64, 32, 1, 1024, 4096, true, true, true, 24137381232ULL, 25446973440ULL},
      {"deepseek-v3", 4, 4, 1, 2, 32, 64, 1, 512, 8192, false, true, true, 33207291648ULL, 25388187648ULL},
  };
  for (const Row& row : rows) {
    ModelSpec m = Model(row.model);
    ParallelLayout l;
    l.tp = row.tp;
    l.pp = row.pp;
    l.vpp = row.vpp;
    l.cp = row.cp;
    l.dp = row.dp;
    l.ep = row.ep;
    l.micro_batch = row.mb;
    l.global_batch = row.gbs;
    l.zero = row.distopt ? 1 : 0;
    l.sequence_parallel = row.sp;
    l.recompute = row.selective ? Recompute::kSelective : Recompute::kNone;
    auto r = ResolveLayout(m, l, row.seq);
    INFO(row.model << " tp " << row.tp << " pp " << row.pp << " vpp " << row.vpp << " ep " << row.ep << ": "
                   << r.status().ToString());
    REQUIRE(r.ok());
    MegatronMemory mm = MegatronTheoreticalMemory(m, *r);
    CHECK(mm.weight_and_optimizer == row.weight_and_optimizer);
    CHECK(mm.activations == row.activations);
    CHECK(mm.sp_selective_path == (row.sp && row.selective));
  }
}

namespace {

// GPT-style layer (LayerNorm, GELU, d_ff = 4d, MHA) from explicit dimensions.
ModelSpec Gpt(int64_t layers, int64_t d, int64_t heads, int64_t vocab, bool tied) {
  Dimensions dims;
  dims.layers = layers;
  dims.d_model = d;
  dims.heads = heads;
  dims.vocab = vocab;
  dims.ffn = FfnKind::kGelu;
  dims.norm = NormKind::kLayerNorm;
  dims.tied = tied;
  auto m = FromDimensions(dims);
  REQUIRE(m.ok());
  return *m;
}

}  // namespace

TEST_CASE("training memory: one layer's activations follow Korthikanti et al. Table 2", "[accounting][training]") {
  const int64_t s = 2048, b = 2, h = 1024, a = 16, t = 4;
  ModelSpec m = Gpt(8, h, a, 1000, true);
  auto per_layer = [&](bool sp, Recompute rc) {
    TrainingMemoryOptions o;
    o.seq_len = s;
    o.layout.tp = t;
    o.layout.micro_batch = b;
    o.layout.sequence_parallel = sp;
    o.layout.recompute = rc;
    auto r = EstimateTrainingMemory(m, o);
    REQUIRE(r.ok());
    return r->activation_bytes_per_layer;
  };
  const double sbh = static_cast<double>(s * b * h), scores = 5.0 * a * s / h;
  // Table 2: tensor parallel sbh(10 + 24/t + 5as/(ht)); + sequence parallel sbh/t (34 + 5as/h); + selective
  // recomputation sbh/t · 34.
  CHECK(per_layer(false, Recompute::kNone) == static_cast<uint64_t>(sbh * (10 + 24.0 / t + scores / t)));
  CHECK(per_layer(true, Recompute::kNone) == static_cast<uint64_t>(sbh / t * (34 + scores)));
  CHECK(per_layer(true, Recompute::kSelective) == static_cast<uint64_t>(sbh / t * 34));
  CHECK(per_layer(false, Recompute::kSelective) == static_cast<uint64_t>(sbh * (10 + 24.0 / t)));
  // Full recomputation keeps the layer input, 2sbh (split by TP under SP).
  CHECK(per_layer(true, Recompute::kFull) == static_cast<uint64_t>(2 * sbh / t));
}

// DeepSeek-V3's own savings (technical report §3.2.3, §3.3.2), one layer by hand at seq 4096, micro-batch 1, TP 1:
// the norm inputs (2·s·h each), MLA's latents (2·s·(1536 + 512 + 64)), the attention output in E5M6 (1.5·s·128·128);
// dense MLP: SwiGLU inputs in FP8 (s·2·18432); MoE: fp32 router logits (4·s·256), FP8 dispatch (s·8·h), BF16
// combine (2·s·8·h), FP8 SwiGLU inputs of 8 routed experts and the shared one (s·8·2·2048 + s·2·2048).
TEST_CASE("training memory: --recompute deepseek keeps what DeepSeek-V3 kept", "[accounting][training]") {
  ModelSpec m = lmkit::test::Preset("deepseek-v3");
  TrainingMemoryOptions o;
  o.seq_len = 4096;
  o.layout.pp = 16;
  o.layout.ep = 64;
  o.layout.gpus = 2048;
  o.layout.global_batch = 15360;
  o.layout.zero = 1;
  o.layout.recompute = Recompute::kDeepSeek;
  auto r = EstimateTrainingMemory(m, o);
  REQUIRE(r.ok());
  const uint64_t s = 4096, h = 7168;
  const uint64_t attn = 2 * s * h + 2 * s * (1536 + 512 + 64) + 3 * s * 128 * 128 / 2;
  CHECK(r->activation_bytes_per_layer == attn + 2 * s * h + s * 2 * 18432);  // a dense layer
  const uint64_t moe = attn + 2 * s * h + 4 * s * 256 + s * 8 * h + 2 * s * 8 * h + s * 8 * 2 * 2048 + s * 2 * 2048;
  // Stage 1 holds layers 3-5 (MoE) for 15 micro-batches in flight.
  REQUIRE(r->stages[1].layers == 3);
  CHECK(r->stages[1].activations == 15 * 3 * moe);
  // Less than selective recomputation, more than full.
  o.layout.recompute = Recompute::kSelective;
  auto sel = EstimateTrainingMemory(m, o);
  REQUIRE(sel.ok());
  CHECK(sel->stages[1].activations > r->stages[1].activations);
  // Megatron's convention does not know the mode: its formula without SP, as for selective without SP.
  CHECK(r->megatron.activations == sel->megatron.activations);
  CHECK_FALSE(r->megatron.sp_selective_path);
}

TEST_CASE("training memory: stages hold their layers, the embedding and the head", "[accounting][training]") {
  // 4 layers, d 64, 4 heads, vocab 1000 (LayerNorm without biases, GELU 256): per layer attention 4·64² = 16384,
  // MLP 2·64·256 = 32768, two LayerNorms 2·64 = 128; final norm 64.
  ModelSpec m = Gpt(4, 64, 4, 1000, false);
  REQUIRE(CountParameters(m).total == 4 * (16384 + 32768 + 128) + 2 * 64000 + 64);
  TrainingMemoryOptions o;
  o.seq_len = 128;
  o.overhead_bytes = 0;
  o.layout.tp = 2;
  o.layout.pp = 2;
  o.layout.dp = 2;
  o.layout.global_batch = 4;  // 2 micro-batches per pipeline
  auto r = EstimateTrainingMemory(m, o);
  REQUIRE(r.ok());
  REQUIRE(r->stages.size() == 2);
  // TP 2 halves the matrices (norms replicated): 2 layers x (8192 + 16384 + 128); the embedding's 500 rows on
  // stage 0, the head's 500 rows and the final norm (64) on stage 1.
  CHECK(r->stages[0].params == 2 * (8192 + 16384 + 128) + 500 * 64);
  CHECK(r->stages[1].params == 2 * (8192 + 16384 + 128) + 500 * 64 + 64);
  CHECK(r->stages[0].weights == 2 * static_cast<uint64_t>(r->stages[0].params));     // bf16
  CHECK(r->stages[0].optimizer == 12 * static_cast<uint64_t>(r->stages[0].params));  // fp32 master, m, v
  CHECK(r->stages[0].in_flight == 2);  // 1F1B: pp − 0 micro-batches on the first stage
  CHECK(r->stages[1].in_flight == 1);
  CHECK(r->stages[0].activations == 2 * 2 * r->activation_bytes_per_layer);
  CHECK(r->stages[1].logits == 2 * 128 * 64 + 4 * 128 * 500);  // final norm input, fp32 logits over 500 vocab rows
  CHECK(r->most_loaded == 0);

  // ZeRO-1 shards the optimizer over DP, ZeRO-3 everything; tied embeddings put a copy of the table on the last stage.
  o.layout.zero = 3;
  auto z = EstimateTrainingMemory(m, o);
  REQUIRE(z.ok());
  CHECK(z->stages[0].optimizer == 6 * static_cast<uint64_t>(r->stages[0].params));
  CHECK(z->stages[0].weights == static_cast<uint64_t>(r->stages[0].params));
  ModelSpec tied = Gpt(4, 64, 4, 1000, true);
  o.layout.zero = 0;
  auto t = EstimateTrainingMemory(tied, o);
  REQUIRE(t.ok());
  CHECK(t->stages[1].params == r->stages[1].params);
}

TEST_CASE("training memory: interleaved 1F1B holds Megatron's in-flight chunks", "[accounting][training]") {
  ModelSpec m = Gpt(16, 64, 4, 1000, true);
  TrainingMemoryOptions o;
  o.seq_len = 128;
  o.layout.pp = 4;
  o.layout.vpp = 2;
  o.layout.global_batch = 8;
  auto r = EstimateTrainingMemory(m, o);
  REQUIRE(r.ok());
  // Rank 0 warms up 2·(p − 1) + (v − 1)·p = 10 chunk forwards and holds 11 chunks of 2 layers = 22 layers' activations:
  // 1 + (p − 1)/(p·v) = 11/8 times the 16 that 1F1B would hold (Megatron's interleaving penalty).
  CHECK(r->stages[0].in_flight == 11);
  CHECK(r->stages[0].activations == 22 * r->activation_bytes_per_layer);
  CHECK(r->stages[3].in_flight == 5);
}

TEST_CASE("training memory: experts split by EP, sharded over their own DP group", "[accounting][training]") {
  ModelSpec m = lmkit::test::Preset("mixtral-8x7b-v0.1");
  TrainingMemoryOptions o;
  o.seq_len = 4096;
  o.layout.tp = 2;
  o.layout.pp = 4;
  o.layout.ep = 8;
  o.layout.etp = 1;
  o.layout.dp = 8;
  o.layout.zero = 1;
  o.layout.global_batch = 64;
  auto r = EstimateTrainingMemory(m, o);
  REQUIRE(r.ok());
  CHECK(r->layout.expert_dp == 2);  // tp·cp·dp / (etp·ep) = 16 / 8
  // 8 layers per stage, one whole expert each (8 / EP 8, ETP 1): 3·4096·14336 per layer.
  CHECK(r->stages[1].expert_params == 8 * 3 * 4096 * 14336);
  const double dense = static_cast<double>(r->stages[1].params - r->stages[1].expert_params);
  CHECK(r->stages[1].optimizer == static_cast<uint64_t>(std::llround(12 * dense / 8)) +  // dense over DP 8
                                      6 * static_cast<uint64_t>(r->stages[1].expert_params));
}

TEST_CASE("training layout: uneven pipelines and one-line errors", "[accounting][training]") {
  ModelSpec llama405 = lmkit::test::Preset("llama-3-8b");
  llama405.layers = 126;
  llama405.kinds[0].count = 126;
  ParallelLayout l;
  l.tp = 8;
  l.pp = 16;
  auto r = ResolveLayout(llama405, l, 8192);
  REQUIRE(r.ok());
  CHECK(r->StageLayers(0) == 7);
  CHECK(r->StageLayers(15) == 7);
  CHECK(r->StageLayers(1) == 8);

  ModelSpec m = lmkit::test::Preset("llama-3-8b");
  auto bad = [&](ParallelLayout x, int64_t seq, const std::string& needle) {
    auto res = ResolveLayout(m, x, seq);
    REQUIRE_FALSE(res.ok());
    INFO(res.status().ToString());
    CHECK(res.status().code() == lmkit::ErrorCode::kInvalidArgument);
    CHECK(res.status().ToString().find(needle) != std::string::npos);
    CHECK(res.status().ToString().find('\n') == std::string::npos);
  };
  ParallelLayout x;
  x.tp = 3;
  bad(x, 4096, "32 attention heads do not divide by tp 3");
  x = {};
  x.tp = 16;
  bad(x, 4096, "8 KV heads do not divide by tp 16");
  x = {};
  x.ep = 2;
  bad(x, 4096, "needs a mixture-of-experts model");
  x = {};
  x.cp = 3;
  bad(x, 4096, "does not divide into 2 x cp");
  x = {};
  x.pp = 64;
  bad(x, 4096, "32 layers are fewer than pp x vpp (64)");
  x = {};
  x.gpus = 100;
  x.tp = 8;
  bad(x, 4096, "gpus (100) is not a multiple of tp x pp x cp (8)");
  x = {};
  x.dp = 4;
  x.micro_batch = 2;
  x.global_batch = 12;
  bad(x, 4096, "global_batch (12) is not a multiple of micro_batch x dp (8)");
  x = {};
  x.pp = 4;
  x.vpp = 2;
  x.global_batch = 6;
  bad(x, 4096, "multiple of pp 4");
  ModelSpec moe = lmkit::test::Preset("mixtral-8x7b-v0.1");
  x = {};
  x.ep = 3;
  x.dp = 3;
  auto e = ResolveLayout(moe, x, 4096);
  REQUIRE_FALSE(e.ok());
  CHECK(e.status().ToString().find("8 experts do not divide by ep 3") != std::string::npos);
}
