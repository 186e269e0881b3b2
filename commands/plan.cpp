// `lmkit plan`: many models on a few GPUs — memory by component, latency and its bound, load/switch time, a placement.
#include "lmkit/accounting/plan.h"

#include "command.h"
#include "lmkit/accounting/plan_timeline.h"
#include "lmkit/present/accounting.h"
#include "lmkit/present/accounting_svg.h"
#include "model_args.h"

namespace lmkit::cli {

namespace {
const char* kPlanFooter = R"(PLAN.json (docs/plan.md has the full schema):
  {"gpu": "h100", "gpus": 2, "reserved_gib": 1, "fragmentation": 0.05,
   "host": {"disk_gb_s": 2, "pcie_pinned_gb_s": 25, "pcie_pageable_gb_s": 10, "pinned": true},
   "models": [{"name": "chat", "model": "llama-2-7b", "dtype": "bf16", "batch": 8, "seq_len": 4096,
               "output_tokens": 256, "requests_per_s": 2, "count": 1, "tp": 1, "kv_dtype": "fp8",
               "kv_tokens": 65536 or "gpu_memory_utilization": 0.45}]}
Memory per model is `lmkit memory --mode inference` (weights, KV cache, prefill working set) per GPU of its
tensor-parallel degree; the KV budget is batch x seq_len unless kv_tokens or gpu_memory_utilization (vLLM's) sets it.
Latency is the roofline of `lmkit flops --gpu` on one GPU's slice (prefill + output_tokens decode steps at the mean
context) plus the tensor-parallel all-reduces over the GPU's interconnect; cold load = weights over disk then
host->device, switch = host->device only. Placement holds the most models: branch and bound (exact up to 24 models
on 16 GPUs), else first-fit decreasing, and the report says which. --what-if names, for each model left out, the
cheapest single change that places it (smaller batch, fp8 KV cache, 8-bit weights, tensor parallelism, more GPUs, a
larger GPU). Defaults: reserved 1 GiB per GPU, margin 5% of capacity, disk 2 GB/s, PCIe 25 GB/s pinned, 10 GB/s
pageable, 10 us per all-reduce. Exit codes: 0 planned (models that do not fit are listed with the reason and the
largest batch that would fit), 1 invalid plan (unknown model, malformed JSON, a bad value), 2 bad flags.
A model may also be given by its weights: {"name": "ranker", "weights": "ranker/model.safetensors" (or .onnx, .gguf,
a folder), "flops_per_request": 2e9, "activation_bytes": 50000000, "latency_ms": 3}.
--timeline DAY.json replays {"events": [{"t": 0, "op": "load", "model": "chat"}, {"t": 5, "op": "request", "model":
"chat", "batch": 4, "duration_s": 2}, {"t": 9, "op": "switch", "from": "chat", "to": "code"}, {"t": 10, "op":
"unload", "model": "code"}, {"t": 11, "op": "empty_cache"}]} on one GPU against a simulation of PyTorch's caching
allocator, comparing the default allocator, expandable_segments, one weight buffer per architecture and a pinned
host pool: per event allocated, reserved, largest free block, fragmentation and failures; per load its latency.)";
}  // namespace

RunFn SetupPlan(CLI::App& sub, const GlobalOptions& g) {
  struct State {
    accounting::PlanRequest req;
    std::string format = "table";
  };
  auto st = std::make_shared<State>();
  sub.add_option("PLAN", st->req.plan_path, "plan file (JSON; '-' = stdin)")->required();
  sub.add_option("--gpu", st->req.gpu, "GPU from data/gpus.json (overrides the plan's \"gpu\")");
  sub.add_option("--gpu-spec", st->req.gpu_spec, "a JSON file describing the GPU (a gpus.json entry), instead");
  sub.add_option("--gpus", st->req.gpus, "number of GPUs (overrides the plan's \"gpus\"; default 1)")
      ->transform(DecimalInteger())
      ->check(CLI::Range(1, 4096));
  sub.add_flag("--what-if", st->req.what_if, "for each model left out, the cheapest change that places it");
  sub.add_option("--format", st->format, EnumChoices(present::FormatNames()) + " (default: table)");
  sub.add_option("--svg", st->req.svg_path,
                 "write the GPU memory map (models stacked per GPU; with a timeline: memory over the day) to this SVG");
  sub.add_option("--timeline", st->req.timeline_path,
                 "replay a day of load/unload/switch/request events (JSON) against the CUDA caching allocator");
  sub.add_option("--generate-events", st->req.generate_events, "replay a generated day of N events instead")
      ->transform(DecimalInteger())
      ->check(CLI::Range(1, 10000000));
  sub.add_option("--seed", st->req.seed, "seed of the generated day (default: 1)")->transform(DecimalInteger());
  sub.add_option("--trace", st->req.trace_path,
                 "write every simulated allocator call (for scripts/gpu_replay.py) to this JSON file");
  sub.footer(kPlanFooter);
  return [st, &g]() -> int {
    auto fail = [](const Status& s) {
      return ReportError("plan", s,
                         {{"plan_path", "PLAN"},
                          {"timeline_path", "--timeline"},
                          {"generate_events", "--generate-events"},
                          {"trace_path", "--trace"}});
    };
    auto fmt = ParseEnum(present::FormatNames(), g.json ? "json" : st->format, "format");
    if (!fmt.ok()) return fail(fmt.status());
    auto res = accounting::RunPlanWithTimeline(st->req);
    if (!res.ok()) return fail(res.status());
    if (!res->svg_path.empty()) {
      const std::string svg = res->timeline ? present::PlanTimelineSvg(*res) : present::PlanMemoryMapSvg(*res);
      if (Status w = WriteChart(res->svg_path, svg); !w.ok()) return fail(w);
    }
    if (!res->trace_path.empty())
      if (Status w = WriteChart(res->trace_path, DumpJson(present::PlanTimelineTraceJson(*res), -1) + "\n"); !w.ok())
        return fail(w);
    if (*fmt == present::Format::kJson) {
      PrintJson(present::PlanJson(*res));
    } else {
      PrintText(AsFlags(present::RenderPlan(*res, *fmt)));
    }
    return kExitOk;
  };
}

}  // namespace lmkit::cli
