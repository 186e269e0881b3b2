// Charts of `lmkit flops`, `lmkit memory` and `lmkit plan` (present/chart.h): the component shares of a sweep and the
// GPU memory map of a plan. Each returns the SVG document; the caller writes it (the CLI through AtomicFile).
// Deterministic; thread-safe.
#pragma once

#include <string>

#include "lmkit/accounting/plan.h"
#include "lmkit/accounting/run_flops.h"
#include "lmkit/accounting/run_memory.h"

namespace lmkit::present {

// 100%-stacked columns of forward FLOPs by component, one column per sweep point (components that are zero at every
// point are left out). A result without a sweep gives a chart with no columns.
std::string FlopsSweepSvg(const accounting::FlopsResult& r);
// The same for per-GPU memory by component (weights, gradients, optimizer state, activations, KV cache, overhead).
std::string MemorySweepSvg(const accounting::MemoryResult& r);
// The chart of a flops or memory answer (its svg_path): the layout's step or stages (TrainingStepSvg,
// TrainingMemorySvg) when it has a layout, else the sweep's.
std::string FlopsSvg(const accounting::FlopsResult& r);
std::string MemorySvg(const accounting::MemoryResult& r);
// One 100% column per GPU: reserved (bottom), the placed models (a tensor-parallel model on each of its GPUs), the
// fragmentation margin and free memory (top), in the semantic colours of chart.h for reserved, margin and free.
std::string PlanMemoryMapSvg(const accounting::PlanResult& r);
// With a timeline: reserved bytes per policy and the default's allocated bytes over the day, the default's failures
// marked, and each policy's fragmentation.
std::string PlanTimelineSvg(const accounting::PlanResult& r);

}  // namespace lmkit::present
