// Step time (MFU and HFU) and the roofline's bytes: KV cache dtype, weight scope, fused attention.
#include "lmkit/accounting/roofline.h"

#include <catch2/catch.hpp>

#include "lmkit/accounting/run_flops.h"
#include "test_models.h"

using namespace lmkit::accounting;

namespace {
GpuSpec H100() {
  auto g = FindGpu("h100");
  REQUIRE(g.ok());
  return *g;
}
const Matmul& Row(const std::vector<Matmul>& ops, const std::string& name) {
  for (const auto& x : ops)
    if (x.name == name) return x;
  FAIL("no row " << name);
  return ops.front();
}
const RooflineRow& Row(const Roofline& r, const std::string& name) {
  for (const auto& x : r.rows)
    if (x.op.name == name) return x;
  FAIL("no row " << name);
  return r.rows.front();
}
}  // namespace

// Issue #26 item 1: MFU divides model FLOPs (PaLM, torchtitan), so recomputation lengthens nothing at a given MFU;
// the HFU it implies is reported beside it.
TEST_CASE("roofline: the step time at an MFU counts model FLOPs, HFU counts recomputation", "[accounting][roofline]") {
  FlopsRequest req;
  req.source.model = "llama-3-8b";
  req.options.seq_len = 8192;
  req.options.recompute = Recompute::kFull;
  req.training = true;
  req.gpu = "h100";
  req.mfu = 0.4;
  auto r = RunFlops(req);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE(r->step);
  // torchtitan / PaLM: (6 x 7,504,924,672 + 12 x 32 x 32 x 128 x 8192) x 8192 tokens / (989.4 TFLOP/s x 0.4) = 1.199 s
  // (lmkit's exact count, which drops the norms' FLOP-free parameters, is within 0.1% of it).
  const double palm = (6.0 * 7504924672.0 + 12.0 * 32 * 32 * 128 * 8192) * 8192;
  CHECK(r->step->seconds == Approx(palm / (989.4e12 * 0.4)).epsilon(0.001));
  CHECK(r->step->seconds == Approx(1.199).epsilon(0.001));
  CHECK(r->step->seconds == Approx(static_cast<double>(r->report.model) / (989.4e12 * 0.4)));
  CHECK(r->step->hfu == Approx(0.4 * static_cast<double>(r->report.training) / static_cast<double>(r->report.model)));
  // 0.4 x (4F - head) / 3F: the LM head (128,256 x 4,096) runs three times, the layers four.
  CHECK(r->step->hfu == Approx(0.526).margin(0.0005));
  // Without recomputation HFU = MFU.
  req.options.recompute = Recompute::kNone;
  auto plain = RunFlops(req);
  REQUIRE(plain.ok());
  CHECK(plain->step->seconds == Approx(r->step->seconds));
  CHECK(plain->step->hfu == Approx(0.4));
}

// Issue #26 item 6: the KV cache has its own dtype; 8-bit weights no longer shrink the cache's bytes.
TEST_CASE("roofline: decode reads the KV cache at the KV dtype, not the weights'", "[accounting][roofline]") {
  auto m = lmkit::test::Preset("llama-3-8b");
  auto ops = BuildDecodeMatmuls(m, 8, 4096);
  REQUIRE(ops.ok());
  const Matmul& scores = Row(*ops, "scores (QK^T)");
  CHECK(scores.b == Operand::kKvCache);
  const double kv_reads = static_cast<double>(scores.k * scores.n) * scores.b_reads;  // cached keys
  Precision fp8{Dtype::kFp8, AutoKvDtype(Dtype::kFp8), QuantScope::kLinear};
  CHECK(fp8.kv_dtype == Dtype::kBf16);
  auto r = ComputeRoofline(*ops, H100(), fp8, Attention::kUnfused);
  REQUIRE(r.ok());
  const double act = 2.0 * static_cast<double>((scores.m * scores.k + scores.m * scores.n) * scores.count);
  CHECK(Row(*r, "scores (QK^T)").bytes == act + 2.0 * kv_reads);
  fp8.kv_dtype = Dtype::kFp8;
  auto r8 = ComputeRoofline(*ops, H100(), fp8, Attention::kUnfused);
  REQUIRE(r8.ok());
  CHECK(Row(*r8, "scores (QK^T)").bytes == act + 1.0 * kv_reads);
  // Weights: the decoder's Linear layers at 1 byte, the LM head at 2 (llm-compressor's recipes ignore lm_head).
  const Matmul& head = Row(*ops, "lm_head");
  const Matmul& q = Row(*ops, "q_proj");
  auto lin = [](const Matmul& x, double b) {
    return 2.0 * static_cast<double>((x.m * x.k + x.m * x.n) * x.count) +
           b * static_cast<double>(x.k * x.n) * x.b_reads;
  };
  CHECK(Row(*r8, "lm_head").bytes == lin(head, 2.0));
  CHECK(Row(*r8, "q_proj").bytes == lin(q, 1.0));
  fp8.scope = QuantScope::kAll;
  auto all = ComputeRoofline(*ops, H100(), fp8, Attention::kUnfused);
  REQUIRE(all.ok());
  CHECK(Row(*all, "lm_head").bytes == lin(head, 1.0));
}

// Issue #26 item 7: FlashAttention-style kernels never write the T x T scores; the default roofline says so.
TEST_CASE("roofline: fused attention moves Q, K, V and the output only", "[accounting][roofline]") {
  auto m = lmkit::test::Preset("llama-3-8b");
  FlopsOptions o;
  o.seq_len = 8192;
  auto ops = BuildMatmuls(m, o);
  REQUIRE(ops.ok());
  Precision bf16;
  auto fused = ComputeRoofline(*ops, H100(), bf16);
  auto unfused = ComputeRoofline(*ops, H100(), bf16, Attention::kUnfused);
  REQUIRE(fused.ok());
  REQUIRE(unfused.ok());
  const RooflineRow& a = Row(*fused, "attention (fused)");
  // Per layer and sequence: Q and O (8192 x 32 heads x 128) read/written once per head, K and V (8192 x 8 KV heads x
  // 128) once per KV head; 2 bytes each, 32 layers.
  CHECK(a.bytes == 2.0 * 8192 * 128 * (32 + 8 + 8 + 32) * 32);
  CHECK(a.op.flops == 2ULL * 2 * 8192 * 8192 * 128 * 32 * 32);
  CHECK(a.compute_bound);
  CHECK(Row(*unfused, "scores (QK^T)").bytes > 16 * a.bytes);  // the 8192^2 scores per head, written and read
  CHECK_FALSE(Row(*unfused, "scores (QK^T)").compute_bound);
  CHECK(fused->flops == unfused->flops);
  // The unfused "lower bound" was 1.4-1.7x the fused estimate at long context (here 8K on an H100).
  const double ratio = unfused->time_s / fused->time_s;
  CHECK(ratio > 1.3);
  CHECK(ratio < 1.8);
  CHECK(fused->attention == Attention::kFused);
}

TEST_CASE("roofline: decode is memory-bound, long prefill compute-bound", "[accounting][roofline]") {
  auto m = lmkit::test::Preset("llama-3-8b");
  auto h100 = FindGpu("h100");
  REQUIRE(h100.ok());
  auto dec = BuildDecodeMatmuls(m, 1, 4096);
  REQUIRE(dec.ok());
  auto rd = ComputeRoofline(*dec, *h100, Precision{});
  REQUIRE(rd.ok());
  for (const auto& row : rd->rows) CHECK_FALSE(row.compute_bound);
  // One decode token reads every weight once: at least 2 bytes x (params - embedding) over 3.35 TB/s.
  CHECK(rd->time_s >= 2.0 * (8030261248.0 - 128256.0 * 4096) / 3.35e12);
  FlopsOptions o;
  o.seq_len = 4096;
  auto pre = BuildMatmuls(m, o);
  REQUIRE(pre.ok());
  auto rp = ComputeRoofline(*pre, *h100, Precision{});
  REQUIRE(rp.ok());
  for (const auto& row : rp->rows)
    if (row.op.name == "q_proj") CHECK(row.compute_bound);
  CHECK(rd->ridge == Approx(989.4 / 3.35));
  // q_proj at M=1: intensity ~ 1 FLOP/byte (2·K·N FLOPs over 2·K·N bytes).
  for (const auto& row : rd->rows)
    if (row.op.name == "q_proj") CHECK(row.intensity == Approx(1.0).epsilon(0.01));
}
