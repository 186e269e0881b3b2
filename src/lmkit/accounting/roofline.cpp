#include "lmkit/accounting/roofline.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace lmkit::accounting {
namespace {

constexpr EnumName<QuantScope> kQuantScopeNames[] = {{QuantScope::kLinear, "linear"}, {QuantScope::kAll, "all"}};
constexpr EnumName<Attention> kAttentionNames[] = {{Attention::kFused, "fused"}, {Attention::kUnfused, "unfused"}};

Status NoPeak(const GpuSpec& gpu, Dtype dtype) {
  return Status::InvalidArgument("GPU " + gpu.name + " has no " + DtypeName(dtype) +
                                 " peak in the GPU table; pick another " + Field("dtype"));
}

bool EightBit(Dtype d) { return d == Dtype::kFp8 || d == Dtype::kInt8; }

// The bytes of an op: its A and C operands per run, its B operand per read, at the bytes of what each is.
double OpBytes(const Matmul& op, const Precision& p) {
  const double m = static_cast<double>(op.m), k = static_cast<double>(op.k), n = static_cast<double>(op.n);
  const double runs = static_cast<double>(op.count), a = p.ActivationBytes();
  return a * (m * k + m * n) * runs + BOperandBytes(op, p) * k * n * op.b_reads;
}

}  // namespace

double BOperandBytes(const Matmul& op, const Precision& p) {
  switch (op.b) {
    case Operand::kKvCache:
      return p.KvBytes();
    case Operand::kActivation:
      return p.ActivationBytes();
    case Operand::kWeight:
      break;
  }
  return p.WeightBytes(op.component != Component::kLmHead && op.component != Component::kRouter);
}

std::span<const EnumName<QuantScope>> QuantScopeNames() { return kQuantScopeNames; }
std::span<const EnumName<Attention>> AttentionNames() { return kAttentionNames; }

double Precision::WeightBytes(bool linear) const {
  const double e = DtypeBytes(dtype);
  if (!EightBit(dtype) || linear || scope == QuantScope::kAll) return e;
  return 2.0;
}
double Precision::ActivationBytes() const { return std::max(DtypeBytes(dtype), 2.0); }
double Precision::KvBytes() const { return DtypeBytes(kv_dtype); }

Dtype AutoKvDtype(Dtype weights) {
  if (weights == Dtype::kFp32 || weights == Dtype::kTf32) return Dtype::kFp32;
  return weights == Dtype::kFp16 ? Dtype::kFp16 : Dtype::kBf16;
}

Result<StepTime> EstimateStepTime(double model_flops, double hardware_flops, double tokens, const GpuSpec& gpu,
                                  Dtype dtype, double mfu) {
  if (!(mfu > 0 && mfu <= 1))
    return Status::InvalidArgument(fmt::format("{} must be in (0, 1] (got {})", Field("mfu"), mfu));
  StepTime t;
  t.peak = gpu.PeakFlops(dtype);
  if (t.peak <= 0) return NoPeak(gpu, dtype);
  t.flops = model_flops;
  t.hardware_flops = hardware_flops;
  t.mfu = mfu;
  t.seconds = model_flops / (t.peak * mfu);
  t.hfu = t.seconds > 0 ? hardware_flops / (t.peak * t.seconds) : 0;
  t.tokens_per_s = t.seconds > 0 ? tokens / t.seconds : 0;
  return t;
}

Result<Roofline> ComputeRoofline(const std::vector<Matmul>& ops, const GpuSpec& gpu, const Precision& p,
                                 Attention attention) {
  Roofline r;
  r.attention = attention;
  r.peak = gpu.PeakFlops(p.dtype);
  if (r.peak <= 0) return NoPeak(gpu, p.dtype);
  r.bandwidth = gpu.bandwidth_bytes_per_s;
  r.ridge = r.peak / r.bandwidth;
  auto add = [&](RooflineRow row) {
    const double f = static_cast<double>(row.op.flops);
    row.intensity = row.bytes > 0 ? f / row.bytes : 0;
    row.compute_s = f / r.peak;
    row.memory_s = row.bytes / r.bandwidth;
    row.time_s = std::max(row.compute_s, row.memory_s);
    row.compute_bound = row.compute_s >= row.memory_s;
    r.flops += f;
    r.bytes += row.bytes;
    r.compute_s += row.compute_s;
    r.memory_s += row.memory_s;
    r.time_s += row.time_s;
    r.rows.push_back(std::move(row));
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const Matmul& op = ops[i];
    if (attention == Attention::kFused && op.component == Component::kAttnScores) {
      // One kernel per layer kind: QKᵀ, the softmax (when counted) and attention × V. It reads Q (the scores' A), K
      // (their B), V (attention × V's B) and writes the output (its C); the scores stay on chip.
      size_t j = i + 1;
      while (j < ops.size() && ops[j].component == Component::kSoftmax) ++j;
      if (j < ops.size() && ops[j].component == Component::kAttnValues) {
        const Matmul& av = ops[j];
        RooflineRow row;
        row.op = op;
        row.op.name = "attention (fused)";
        row.op.flops = 0;
        for (size_t x = i; x <= j; ++x) row.op.flops += ops[x].flops;
        const double a = p.ActivationBytes();
        row.bytes = a * static_cast<double>(op.m) * static_cast<double>(op.k) * static_cast<double>(op.count) +
                    BOperandBytes(op, p) * static_cast<double>(op.k) * static_cast<double>(op.n) * op.b_reads +
                    BOperandBytes(av, p) * static_cast<double>(av.k) * static_cast<double>(av.n) * av.b_reads +
                    a * static_cast<double>(av.m) * static_cast<double>(av.n) * static_cast<double>(av.count);
        add(std::move(row));
        i = j;
        continue;
      }
    }
    RooflineRow row;
    row.op = op;
    row.bytes = OpBytes(op, p);
    add(std::move(row));
  }
  return r;
}

}  // namespace lmkit::accounting
