#include "lmkit/dataload/demand.h"

#include <cmath>
#include <cstdio>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/model.h"

namespace lmkit::dataload {

Result<Demand> ResolveDemand(const DemandSpec& spec, uint64_t batch_tokens, uint64_t context) {
  Demand d;
  const double tokens = static_cast<double>(batch_tokens);
  switch (spec.kind) {
    case DemandSpec::Kind::kNone:
      return d;
    case DemandSpec::Kind::kTokensPerSecond:
      if (!(spec.tokens_per_s > 0) || !std::isfinite(spec.tokens_per_s))
        return Status::InvalidArgument(Field("tokens_per_s") + " must be a positive number");
      d.given = true;
      d.source = "tokens-per-s";
      d.tokens_per_s = spec.tokens_per_s;
      d.step_time_s = tokens / spec.tokens_per_s;
      d.description = "given: tokens/s";
      return d;
    case DemandSpec::Kind::kStepTime:
      if (!(spec.step_time_s > 0) || !std::isfinite(spec.step_time_s))
        return Status::InvalidArgument(Field("step_time_s") + " must be a positive number");
      d.given = true;
      d.source = "step-time";
      d.step_time_s = spec.step_time_s;
      d.tokens_per_s = tokens / spec.step_time_s;
      d.description = "given: step time per batch";
      return d;
    case DemandSpec::Kind::kModel: {
      if (!(spec.mfu > 0 && spec.mfu <= 1))
        return Status::InvalidArgument(Field("mfu") + " must be in (0, 1], e.g. 0.4 for 40%");
      LMKIT_ASSIGN_OR_RETURN(accounting::ModelSpec m, accounting::ResolveModel(spec.model));
      LMKIT_ASSIGN_OR_RETURN(accounting::GpuSpec g, accounting::FindGpu(spec.gpu));
      // bf16 is the dtype LM training runs its matmuls in; the table's dense peak (no 2:4 sparsity).
      const double peak = g.PeakFlops(accounting::Dtype::kBf16);
      if (!(peak > 0)) return Status::Unsupported(g.name, "the GPU table has no bf16 peak for this GPU");
      d.flops_per_token = accounting::TrainingFlopsPerTokenPalm(m, static_cast<int64_t>(context));
      if (!(d.flops_per_token > 0)) return Status::InvalidInput(spec.model, "the model has no FLOPs per token");
      d.given = true;
      d.source = "model";
      d.tokens_per_s = spec.mfu * peak / d.flops_per_token;
      d.step_time_s = tokens / d.tokens_per_s;
      char buf[256];
      std::snprintf(buf, sizeof buf, "%s on %s (bf16 %.0f TFLOP/s) at %.0f%% MFU, %.3g GFLOP/token = 6N + 12LdT",
                    spec.model.c_str(), g.name.c_str(), peak / 1e12, spec.mfu * 100, d.flops_per_token / 1e9);
      d.description = buf;
      return d;
    }
  }
  return d;
}

}  // namespace lmkit::dataload
