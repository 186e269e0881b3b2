#include "lmkit/dataload/judge.h"

#include <algorithm>

namespace lmkit::dataload {
namespace {

constexpr uint64_t kSimulatedSteps = 2000;

ConsumerSimulation Replay(const PipelineModel& m, double step_s, uint64_t steps) {
  std::vector<double> t(m.produce_s);
  for (double& x : t) x += m.handoff_s;
  return SimulateConsumer(t, m.threads, m.prefetch, step_s, steps);
}

uint64_t Steps(const PipelineModel& m) { return std::max<uint64_t>(kSimulatedSteps, m.produce_s.size()); }

void Diagnose(RunResult* r, unsigned cpus) {
  const LoaderConfig& c = r->config;
  Diagnosis& d = r->diagnosis;
  d.threads = c.threads;
  d.cpus = cpus;
  d.batch_s = r->produce.mean_s + r->handoff_s;
  struct Part {
    BatchPart part;
    double mean;
  };
  const Part parts[] = {{BatchPart::kSample, r->sample.mean_s},   {BatchPart::kGather, r->gather.mean_s},
                        {BatchPart::kConvert, r->convert.mean_s}, {BatchPart::kStage, r->stage.mean_s},
                        {BatchPart::kH2d, r->h2d.mean_s},         {BatchPart::kHandoff, r->handoff_s}};
  const Part* top = &parts[0];
  for (const auto& p : parts)
    if (p.mean > top->mean) top = &p;
  d.top = top->part;
  d.top_share = d.batch_s > 0 ? top->mean / d.batch_s : 0;

  if (r->level == InputBound::kNot) {
    d.why = Why::kKeepsUp;
    d.fix = Fix::kNone;
    if (r->cold.available && r->cold_level != InputBound::kNot && c.cache != CacheMode::kColdEach) {
      d.fix = c.access == Access::kMmap || c.advice == Advice::kNormal ? Fix::kColdPreadRandom : Fix::kColdThreads;
    }
    return;
  }
  if (r->capacity_ratio >= 1.0) {
    d.why = Why::kSlowBatches;
    d.fix = Fix::kDeeperPrefetch;
    d.next_prefetch = std::max(2u, c.prefetch * 2);
    return;
  }
  d.why = Why::kSlowerThanStep;
  const bool narrow = c.out == OutDtype::kUint16;
  switch (d.top) {
    case BatchPart::kGather:
      if (c.access == Access::kMmap && c.advice == Advice::kNormal && r->read_amplification > 4) {
        d.fix = Fix::kPreadRandomReadAround;
      } else if (c.access == Access::kMmap && r->read_amplification > 0.5) {
        d.fix = Fix::kPreadRandomFaults;
      } else if (c.cache == CacheMode::kCold || c.cache == CacheMode::kColdEach || r->read_amplification > 0.5) {
        d.fix = Fix::kThreadsOrStorage;
      } else {
        d.fix = Fix::kThreads;
      }
      break;
    case BatchPart::kConvert:
      d.fix = narrow ? Fix::kThreads : Fix::kNarrowOutConvert;
      break;
    case BatchPart::kStage:
      d.fix = narrow ? Fix::kThreads : Fix::kNarrowOutStage;
      break;
    case BatchPart::kH2d:
      d.fix = !c.pinned ? Fix::kPinned : narrow ? Fix::kThreads : Fix::kNarrowOutH2d;
      break;
    case BatchPart::kSample:
    case BatchPart::kHandoff:
      d.fix = Fix::kThreads;
      break;
  }
}

}  // namespace

PipelineModel CalibratePipeline(const std::vector<double>& produce_s, unsigned threads, unsigned prefetch,
                                double measured_period_s) {
  PipelineModel m;
  m.produce_s = produce_s;
  m.threads = std::max(1u, threads);
  m.prefetch = std::max(1u, prefetch);
  if (produce_s.empty() || !(measured_period_s > 0)) return m;
  const uint64_t steps = Steps(m);
  const double bare = Replay(m, 0, steps).period_s;
  if (bare >= measured_period_s) {
    // Free-running periods scale linearly with the produce times.
    const double scale = bare > 0 ? measured_period_s / bare : 1;
    for (double& x : m.produce_s) x *= scale;
    return m;
  }
  // The period grows monotonically with the hand-off; with a hand-off of the measured period times the batches in
  // flight it is at least the measured period.
  double lo = 0, hi = measured_period_s * static_cast<double>(std::min(m.threads, m.prefetch));
  for (int i = 0; i < 48 && hi - lo > 1e-12 * measured_period_s; ++i) {
    m.handoff_s = (lo + hi) / 2;
    (Replay(m, 0, steps).period_s < measured_period_s ? lo : hi) = m.handoff_s;
  }
  m.handoff_s = hi;
  return m;
}

ConsumerSimulation SimulateModel(const PipelineModel& model, double step_s) {
  return Replay(model, step_s, Steps(model));
}

void Judge(const std::vector<double>& produce_s, unsigned cpus, RunResult* r) {
  const LoaderConfig& c = r->config;
  const double measured_period = r->batches_per_s > 0 ? 1.0 / r->batches_per_s : 0;
  const PipelineModel model = CalibratePipeline(produce_s, c.threads, c.prefetch, measured_period);
  r->handoff_s = model.handoff_s;
  const double batch_tokens = static_cast<double>(c.batch_size * c.context_length);

  // The projected cold pipeline: the projection's per-thread batch time (its bandwidth cap included), plus the same
  // hand-off; its throughput is what that model makes free-running.
  PipelineModel cold;
  const bool cold_measured = c.cache == CacheMode::kColdEach && r->eviction_effective;
  if (!cold_measured && r->cold.available && r->cold.tokens_per_s > 0) {
    cold.threads = model.threads;
    cold.prefetch = model.prefetch;
    cold.handoff_s = model.handoff_s;
    cold.produce_s = {static_cast<double>(c.threads) * batch_tokens / r->cold.tokens_per_s};
    const double period = Replay(cold, 0, kSimulatedSteps).period_s;
    if (period > 0) r->cold.tokens_per_s = batch_tokens / period;
  }

  if (!r->demand.given || produce_s.empty()) return;
  const double step = r->demand.step_time_s;
  r->sim = SimulateModel(model, step);
  r->level = ClassifyWaitShare(r->sim.wait_share);
  r->capacity_ratio = r->tokens_per_s / r->demand.tokens_per_s;
  if (cold_measured) {
    r->cold_wait_share = r->sim.wait_share;
    r->cold_level = r->level;
  } else if (!cold.produce_s.empty()) {
    const ConsumerSimulation cs = Replay(cold, step, kSimulatedSteps);
    r->cold_wait_share = cs.wait_share;
    r->cold_level = ClassifyWaitShare(cs.wait_share);
  }
  Diagnose(r, cpus);
}

}  // namespace lmkit::dataload
