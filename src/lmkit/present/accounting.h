// Presentation of the accounting results (`flops`, `memory`, `plan`): text tables (aligned, CSV, Markdown) and the
// JSON documents --json prints (the charts: accounting_svg.h). Text may name request fields with Field() (a
// convention's option,
// "(--causal-half halves it)"); the front end renders them (the CLI as flags). Deterministic; never fails.
#pragma once

#include <string>

#include "lmkit/accounting/plan.h"
#include "lmkit/accounting/run_flops.h"
#include "lmkit/accounting/run_memory.h"
#include "lmkit/common/json.h"
#include "lmkit/present/table.h"

namespace lmkit::present {

// A flops or memory answer; one with a training layout renders as that layout (RenderTraining, TrainingJson).
std::string RenderFlops(const accounting::FlopsResult& r, Format f);
Json FlopsJson(const accounting::FlopsResult& r);

std::string RenderMemory(const accounting::MemoryResult& r, Format f);
Json MemoryJson(const accounting::MemoryResult& r);
// "note: <fields> only apply to <mode> ...; ignored" for the request fields the mode did not use; "" when none.
std::string MemoryIgnoredNote(const accounting::MemoryResult& r);

std::string RenderPlan(const accounting::PlanResult& r, Format f);
Json PlanJson(const accounting::PlanResult& r);
// Why model `m` of `r` was left out of the placement (m.unplaced), as one sentence; "" when it was placed.
std::string UnplacedReason(const accounting::PlanResult& r, const accounting::ModelEstimate& m);
// A what-if change as the plan prints it ("batch 64 -> 25", "dtype fp8", "gpu H200-SXM-141GB") and its detail (the
// footprint per GPU after it, or how many models the larger GPU places).
std::string WhatIfText(const accounting::WhatIf& w);
std::string WhatIfDetail(const accounting::WhatIf& w);
// What bounds each phase of `m`'s latency: "prefill compute-bound, decode memory-bound, tp 2", "measured latency".
std::string BoundDetail(const accounting::ModelEstimate& m);
// The timeline of a plan run with one (plan_timeline.h): the policies compared, the events (up to 40), each failure
// of the default allocator and what avoids it; "" / null without a timeline. PlanJson includes it as "timeline".
std::string RenderPlanTimeline(const accounting::PlanResult& r, Format f);
Json PlanTimelineJson(const accounting::PlanResult& r);
// Every allocator call of the replayed policies with the simulated reserved bytes and failures per event, for
// scripts/gpu_replay.py ("lmkit.plan-trace/1").
Json PlanTimelineTraceJson(const accounting::PlanResult& r);

}  // namespace lmkit::present
