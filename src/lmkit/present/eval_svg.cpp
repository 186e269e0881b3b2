#include "lmkit/present/eval_svg.h"

#include <fmt/format.h>

#include <algorithm>

#include "lmkit/present/chart.h"

namespace lmkit::present {

std::string EvalKlSvg(const model::EvalResult& r) {
  Figure f;
  f.title = "KL(model || compare) by position: " + r.model + " vs " + (r.compare ? r.compare->model : "");
  if (!r.compare) return FigureSvg(f);
  const model::EvalComparison& c = *r.compare;
  Panel p;
  p.title = fmt::format("{} windows of up to {} tokens", r.sequences, r.seq_len);
  p.note = fmt::format(
      "KL mean {:.3e}, p99 {:.3e}, max {:.3e} nats; top-1 agreement {:.2f}%; perplexity {:.4f} -> "
      "{:.4f}",
      c.mean_kl, c.p99_kl, c.max_kl, 100 * c.top1_agreement, r.perplexity, c.perplexity);
  p.x.label = "position in the window (the token predicted)";
  p.x.integer = true;
  p.y.label = "KL (nats)";
  XYSeries mean{"mean over windows", Mark::kLine, {}, c.kl_mean_by_position};
  XYSeries max{"max over windows", Mark::kLine, {}, c.kl_max_by_position};
  for (size_t t = 0; t < c.kl_mean_by_position.size(); ++t) {
    mean.x.push_back(static_cast<double>(t + 1));
    max.x.push_back(static_cast<double>(t + 1));
  }
  // A few positions (or one window) draw as points too, so a single value is visible.
  if (mean.x.size() <= 64) mean.mark = max.mark = Mark::kLinePoints;
  double lo = INFINITY, hi = 0;
  for (const auto* v : {&c.kl_mean_by_position, &c.kl_max_by_position})
    for (double x : *v) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  if (lo > 0 && hi / lo > 100) p.y.scale = Scale::kLog;
  p.series = {std::move(max), std::move(mean)};
  f.panels.push_back(std::move(p));
  f.plot_width = 640;
  f.plot_height = 240;
  return FigureSvg(f);
}

}  // namespace lmkit::present
