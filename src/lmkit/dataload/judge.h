// One verdict per run: the capacity ratio, the level, the "why", the knob and the cold-cache level all come from one
// model — the simulated consumer of verdict.h — so that no report can say two different things.
//
// The model is calibrated to the run. Fed the measured per-batch produce times alone it would miss what the timed
// stages leave out (chiefly the producer→consumer hand-off, tens of microseconds on a busy VM): so a per-batch
// hand-off cost is added to every batch, on the producer side (it overlaps with the step like the rest of a batch's
// work), chosen by bisection so that the free-running model makes exactly the measured tokens/s. When the stages alone
// already make the model slower than measured (threads overlapped better than modelled), the times are scaled down
// instead. Either way the model's capacity is the measured one; a run whose capacity ratio is r < 1 then waits at least
// 1 − r of the time, so it is never called NOT input-bound unless the shortfall is under the 5% threshold.
//
// The cold-cache level is the same model fed the projected per-batch time plus the same hand-off — or, for a run that
// was already cold for every batch (cache cold-each), the run's own verdict.
//
// Contract: pure functions of their inputs; deterministic; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "lmkit/dataload/profile.h"
#include "lmkit/dataload/verdict.h"

namespace lmkit::dataload {

struct PipelineModel {
  std::vector<double> produce_s;  // per batch, replayed in order (scaled when the stages alone were too slow)
  double handoff_s = 0;           // added to every batch
  unsigned threads = 1;
  unsigned prefetch = 1;
};

// The model whose free-running time per batch equals `measured_period_s` (steady time ÷ steady batches). With no
// samples or no measured period the times are taken as they are.
PipelineModel CalibratePipeline(const std::vector<double>& produce_s, unsigned threads, unsigned prefetch,
                                double measured_period_s);
// The consumer simulation of `model` at `step_s` per step over at least 2,000 steps (0: free-running).
ConsumerSimulation SimulateModel(const PipelineModel& model, double step_s);

// Calibrates the model of `run` (whose measurements are filled) from its steady-state produce times, re-states the
// projected cold throughput through it, and — when the run has a demand — fills sim, level, capacity_ratio, the cold
// level and the diagnosis. `cpus` is the number of CPUs the loader may use.
void Judge(const std::vector<double>& produce_s, unsigned cpus, RunResult* run);

}  // namespace lmkit::dataload
