// `lmkit eval`'s text summary.
#include <fmt/format.h>

#include "lmkit/present/model.h"

namespace lmkit::present {

std::string EvalResultToText(const model::EvalResult& r) {
  std::string s =
      fmt::format("{} ({}): mean NLL {:.6f} nats, perplexity {:.6f} over {} tokens ({} sequences of <= {})\n", r.model,
                  r.mode, r.mean_nll, r.perplexity, r.tokens_scored, r.sequences, r.seq_len);
  if (r.compare) {
    const model::EvalComparison& c = *r.compare;
    s += fmt::format("{} ({}): mean NLL {:.6f} nats, perplexity {:.6f} (delta {:+.6f})\n", c.model, c.mode, c.mean_nll,
                     c.perplexity, c.ppl_delta);
    s += fmt::format("KL(model || compare): mean {:.3e}, p99 {:.3e}, max {:.3e} nats; top-1 agreement {:.4f}\n",
                     c.mean_kl, c.p99_kl, c.max_kl, c.top1_agreement);
  }
  return s;
}

}  // namespace lmkit::present
