// The chart of `lmkit eval --compare`: KL by position as points and lines, a log axis only when the values span more
// than two decades and none is 0, and no panel without a comparison.
#include "lmkit/present/eval_svg.h"

#include <catch2/catch.hpp>
#include <string>

#include "support/svg_check.h"

using lmkit::model::EvalResult;

namespace {

EvalResult EvalCompared(std::vector<double> mean, std::vector<double> max) {
  EvalResult r;
  // Moved-in strings: GCC 12 at -O3 reports a false -Wrestrict on assigning these literals (its bug 105329).
  r.model = std::string("m");
  r.compare.emplace();
  r.compare->model = std::string("m-int8");
  r.sequences = 2;
  r.seq_len = 4;
  r.compare->kl_mean_by_position = std::move(mean);
  r.compare->kl_max_by_position = std::move(max);
  return r;
}

bool EvalSvgHas(const std::string& svg, const std::string& what) { return svg.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("eval svg: one point per position for mean and max, on a log axis across decades", "[present][eval][svg]") {
  const EvalResult r = EvalCompared({1e-4, 1e-3, 1e-2}, {1e-3, 1e-2, 1e-1});
  const std::string svg = lmkit::present::EvalKlSvg(r);
  lmkit::test::TempDir dir;
  lmkit::test::CheckSvgText(svg, dir, "kl.svg");
  CHECK(EvalSvgHas(svg, "KL(model || compare) by position: m vs m-int8"));
  CHECK(EvalSvgHas(svg, "2 windows of up to 4 tokens"));
  // Positions count from 1 (the token predicted).
  CHECK(EvalSvgHas(svg, "<title>mean over windows: 1, 0.0001</title>"));
  CHECK(EvalSvgHas(svg, "<title>max over windows: 3, 0.1</title>"));
  CHECK(EvalSvgHas(svg, ">1e-4<"));  // decade ticks: the log axis
  CHECK(EvalSvgHas(svg, ">0.001<"));
}

TEST_CASE("eval svg: a zero keeps the axis linear, no comparison, no panel", "[present][eval][svg]") {
  const std::string lin = lmkit::present::EvalKlSvg(EvalCompared({0, 1e-3, 1e-2}, {1e-3, 1e-2, 1e-1}));
  CHECK(EvalSvgHas(lin, "<title>mean over windows: 1, 0</title>"));
  CHECK_FALSE(EvalSvgHas(lin, ">1e-4<"));
  CHECK_FALSE(EvalSvgHas(lin, ">0.001<"));
  EvalResult plain;
  plain.model = "m";
  const std::string none = lmkit::present::EvalKlSvg(plain);
  lmkit::test::TempDir dir;
  lmkit::test::CheckSvgText(none, dir, "none.svg");
  CHECK_FALSE(EvalSvgHas(none, "data-series="));
  CHECK_FALSE(EvalSvgHas(none, "KL (nats)"));
}
