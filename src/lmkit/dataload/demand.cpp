#include "lmkit/dataload/demand.h"

#include <cmath>

namespace lmkit::dataload {

Result<Demand> ResolveDemand(const DemandSpec& spec, uint64_t batch_tokens, uint64_t context) {
  (void)context;
  Demand d;
  const double tokens = static_cast<double>(batch_tokens);
  switch (spec.kind) {
    case DemandSpec::Kind::kNone:
      return d;
    case DemandSpec::Kind::kTokensPerSecond:
      if (!(spec.tokens_per_s > 0) || !std::isfinite(spec.tokens_per_s))
        return Status::Usage("--tokens-per-s must be a positive number");
      d.given = true;
      d.source = "tokens-per-s";
      d.tokens_per_s = spec.tokens_per_s;
      d.step_time_s = tokens / spec.tokens_per_s;
      d.description = "given: tokens/s";
      return d;
    case DemandSpec::Kind::kStepTime:
      if (!(spec.step_time_s > 0) || !std::isfinite(spec.step_time_s))
        return Status::Usage("--step-time-ms must be a positive number");
      d.given = true;
      d.source = "step-time";
      d.step_time_s = spec.step_time_s;
      d.tokens_per_s = tokens / spec.step_time_s;
      d.description = "given: step time per batch";
      return d;
    case DemandSpec::Kind::kModel:
      return Status::Unsupported(spec.model, "--model needs lmkit's accounting tables, not in this build yet; "
                                             "pass --tokens-per-s or --step-time-ms");
  }
  return d;
}

}  // namespace lmkit::dataload
