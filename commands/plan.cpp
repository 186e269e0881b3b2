// `lmkit plan`: many models on a few GPUs — memory by component, latency and its bound, load/switch time, a packing.
#include "lmkit/accounting/plan.h"

#include "commands.h"
#include "lmkit/common/atomic_file.h"
#include "lmkit/present/accounting_svg.h"

namespace lmkit::cli {

namespace {
const char* kPlanFooter = R"(PLAN.json (docs/plan.md has the full schema):
  {"gpu": "h100", "gpus": 2, "reserved_gib": 1, "fragmentation": 0.05,
   "host": {"disk_gb_s": 2, "pcie_pinned_gb_s": 25, "pcie_pageable_gb_s": 10, "pinned": true},
   "models": [{"name": "chat", "model": "llama-2-7b", "dtype": "bf16", "batch": 8, "seq_len": 4096,
               "output_tokens": 256, "requests_per_s": 2, "count": 1}]}
Memory per model is `lmkit memory --mode inference` (weights, KV cache, prefill working set); latency is the
roofline of `lmkit flops --gpu` (prefill + output_tokens decode steps at the mean context); cold load = weights over
disk then host->device, switch = host->device only. Models are packed first-fit decreasing, then by an exact search
when that leaves some out. Defaults: reserved 1 GiB per GPU, margin 5% of capacity, disk 2 GB/s, PCIe 25 GB/s pinned,
10 GB/s pageable. Exit codes: 0 planned (models that fit alone but not together are listed), 1 invalid plan (unknown
model, malformed JSON, a model that fits no empty GPU at its batch), 2 bad flags.)";
}  // namespace

RunFn SetupPlan(CLI::App& sub, const GlobalOptions& g) {
  struct State {
    accounting::PlanRequest req;
    std::string format = "table";
  };
  auto st = std::make_shared<State>();
  sub.add_option("PLAN", st->req.plan_path, "plan file (JSON; '-' = stdin)")->required();
  sub.add_option("--gpu", st->req.gpu, "GPU from data/gpus.json (overrides the plan's \"gpu\")");
  sub.add_option("--gpus", st->req.gpus, "number of GPUs (overrides the plan's \"gpus\"; default 1)")
      ->transform(DecimalInteger())
      ->check(CLI::Range(1, 4096));
  sub.add_option("--format", st->format, "table, md, csv or json [table]");
  sub.add_option("--svg", st->req.svg_path, "write the GPU memory map (models stacked per GPU) to this SVG file");
  sub.footer(kPlanFooter);
  return [st, &g]() -> int {
    // The chart replaces its destination: not the plan file it is drawn from.
    if (Status s = CheckOutputIsNotAnInput({st->req.plan_path}, st->req.svg_path, "--svg"); !s.ok())
      return ReportError("plan", s);
    auto fmt = accounting::ParseFormat(g.json ? "json" : st->format);
    if (!fmt.ok()) return ReportError("plan", fmt.status());
    auto res = accounting::RunPlan(st->req);
    if (!res.ok()) return ReportError("plan", res.status());
    if (!res->svg_path.empty())
      if (Status s = WriteFileAtomically(res->svg_path, present::PlanMemoryMapSvg(*res)); !s.ok())
        return ReportError("plan", s);
    if (*fmt == accounting::Format::kJson) {
      PrintJson(accounting::PlanToJson(*res));
    } else {
      PrintText(accounting::RenderPlan(*res, *fmt));
    }
    return kExitOk;
  };
}

}  // namespace lmkit::cli
