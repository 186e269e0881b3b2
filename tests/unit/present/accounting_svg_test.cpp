// The accounting charts: what each column and segment holds (the segments' tooltips carry the shares), which series
// are left out, and valid SVG by the shared checks.
#include "lmkit/present/accounting_svg.h"

#include <catch2/catch.hpp>
#include <string>

#include "support/svg_check.h"
#include "unit/accounting/test_models.h"

using namespace lmkit::accounting;
using lmkit::test::CheckSvgText;
using lmkit::test::TempDir;

namespace {

bool AccountingSvgHas(const std::string& svg, const std::string& what) { return svg.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("accounting svg: FLOP shares of a sweep, components without FLOPs left out", "[present][accounting][svg]") {
  FlopsRequest req;
  req.source.model = "cs336-gpt2-xl";
  req.sweep = Sweep{"seq-len", {"1024", "16384"}};
  auto r = RunFlops(req);
  REQUIRE(r.ok());
  const std::string svg = lmkit::present::FlopsSweepSvg(*r);
  TempDir dir;
  CheckSvgText(svg, dir, "flops.svg");
  CHECK(AccountingSvgHas(svg, "Forward FLOP shares by component: cs336-gpt2-xl (seq-len sweep)"));
  // CS336's GPT-2 XL table at T = 1024: FFN 66.91%, LM head 3.65%.
  CHECK(AccountingSvgHas(svg, "<title>FFN/experts at seq-len 1024: 66.91%</title>"));
  CHECK(AccountingSvgHas(svg, "<title>LM head at seq-len 1024: 3.65%</title>"));
  CHECK(AccountingSvgHas(svg, "data-point=\"seq-len 16384\""));
  CHECK_FALSE(AccountingSvgHas(svg, "data-series=\"router\""));  // dense: zero at every point
}

TEST_CASE("accounting svg: memory shares of a sweep, and the plan's memory map", "[present][accounting][svg]") {
  MemoryRequest mreq;
  mreq.source.model = "llama-2-7b";
  mreq.mode = Mode::kInference;
  mreq.seq_len = 4096;
  mreq.sweep = Sweep{"batch", {"1"}};
  auto m = RunMemory(mreq);
  REQUIRE(m.ok());
  const std::string msvg = lmkit::present::MemorySweepSvg(*m);
  TempDir dir;
  CheckSvgText(msvg, dir, "memory.svg");
  // 13,476,831,232 B of weights and 2 GiB of KV cache in a total of 16,945,648,640 B.
  CHECK(AccountingSvgHas(msvg, "<title>weights at batch 1: 79.53%</title>"));
  CHECK(AccountingSvgHas(msvg, "<title>KV cache at batch 1: 12.67%</title>"));
  CHECK_FALSE(AccountingSvgHas(msvg, "data-series=\"gradients\""));  // inference

  const std::string psvg = lmkit::present::PlanMemoryMapSvg(
      lmkit::test::PlanResultOf(R"({"gpu": "h100", "models": [{"name": "a", "model": "llama-2-7b", "seq_len": 4096},
                                {"name": "b", "model": "llama-2-7b", "seq_len": 4096}]})"));
  CheckSvgText(psvg, dir, "plan.svg");
  // Of 80e9 B: each model 15,871,906,816 B, reserved 1 GiB, margin 5%, free the rest of the 74,926,258,176 usable.
  CHECK(AccountingSvgHas(psvg, "<title>a at GPU 0: 19.84%</title>"));
  CHECK(AccountingSvgHas(psvg, "<title>b at GPU 0: 19.84%</title>"));
  CHECK(AccountingSvgHas(psvg, "<title>reserved (context, workspaces) at GPU 0: 1.34%</title>"));
  CHECK(AccountingSvgHas(psvg, "<title>fragmentation margin at GPU 0: 5.00%</title>"));
  CHECK(AccountingSvgHas(psvg, "<title>free at GPU 0: 53.98%</title>"));
}
