// Presentation of a training layout's answer (accounting::TrainingResult): the per-stage memory table beside
// Megatron-LM's estimate, the step-time breakdown, the layout search; its --json document and the two charts (memory
// by stage, the step's parts). Deterministic; never fails.
#pragma once

#include <string>

#include "lmkit/accounting/run_training.h"
#include "lmkit/common/json.h"
#include "lmkit/present/table.h"

namespace lmkit::present {

// `step_first`: `flops` leads with the step time, `memory` with the memory table.
std::string RenderTraining(const accounting::TrainingResult& r, Format f, bool step_first);
Json TrainingJson(const accounting::TrainingResult& r);
std::string TrainingMemorySvg(const accounting::TrainingResult& r);  // stacked columns, one per stage ("" if none)
std::string TrainingStepSvg(const accounting::TrainingResult& r);    // one column of the step's parts ("" if none)

}  // namespace lmkit::present
