#include "lmkit/accounting/roofline.h"

#include <algorithm>
#include <string>

namespace lmkit::accounting {
namespace {
Status NoPeak(const GpuSpec& gpu, Dtype dtype) {
  return Status::InvalidArgument("GPU " + gpu.name + " has no " + DtypeName(dtype) +
                       " peak in the GPU table; pick another --dtype");
}
}  // namespace

Result<StepTime> EstimateStepTime(double flops, double tokens, const GpuSpec& gpu, Dtype dtype, double mfu) {
  if (!(mfu > 0 && mfu <= 1)) return Status::InvalidArgument("--mfu must be in (0, 1] (got " + std::to_string(mfu) + ")");
  StepTime t;
  t.peak = gpu.PeakFlops(dtype);
  if (t.peak <= 0) return NoPeak(gpu, dtype);
  t.flops = flops;
  t.mfu = mfu;
  t.seconds = flops / (t.peak * mfu);
  t.tokens_per_s = t.seconds > 0 ? tokens / t.seconds : 0;
  return t;
}

Result<Roofline> ComputeRoofline(const std::vector<Matmul>& ops, const GpuSpec& gpu, Dtype dtype) {
  Roofline r;
  r.peak = gpu.PeakFlops(dtype);
  if (r.peak <= 0) return NoPeak(gpu, dtype);
  r.bandwidth = gpu.bandwidth_bytes_per_s;
  r.ridge = r.peak / r.bandwidth;
  const double e = DtypeBytes(dtype);
  for (const auto& op : ops) {
    RooflineRow row;
    row.op = op;
    double m = static_cast<double>(op.m), k = static_cast<double>(op.k), n = static_cast<double>(op.n);
    double runs = static_cast<double>(op.count);
    row.bytes = e * ((m * k + m * n) * runs + k * n * op.b_reads);
    double f = static_cast<double>(op.flops);
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
  }
  return r;
}

}  // namespace lmkit::accounting
