// Is the training loop waiting for data? The verdict vocabulary of TensorFlow's input-pipeline analyzer (share of step
// time the consumer is blocked on input: < 5% not, 5–20% moderately, ≥ 20% highly input-bound; PyTorch's profiler warns
// from 5%), and the simulated consumer that produces that share.
//
// Contract: pure functions, thread-safe. SimulateConsumer is a deterministic discrete-event model of the prefetch
// pipeline: `threads` producers take batch indices in order (the earliest-free producer takes the next one); batch j
// may start only once the consumer has taken batch j − prefetch (at most `prefetch` batches in flight or ready); batch
// j takes produce_s[j mod n] seconds; the consumer takes batch s as soon as it is ready and its previous step is done,
// then computes for step_s. Step 0 (the first batch, an exposed start-up cost) is reported apart and excluded from the
// steady-state shares. With step_s 0 the consumer is free-running, and period_s is the pipeline's time per batch.
#pragma once

#include <cstdint>
#include <vector>

namespace lmkit::dataload {

enum class InputBound { kUnknown, kNot, kModerately, kHighly };

constexpr double kModeratelyInputBound = 0.05;
constexpr double kHighlyInputBound = 0.20;

InputBound ClassifyWaitShare(double wait_share);
const char* InputBoundName(InputBound b);    // "unknown", "not", "moderately", "highly"
const char* InputBoundPhrase(InputBound b);  // "NOT input-bound", "MODERATELY input-bound", ...

struct ConsumerSimulation {
  uint64_t steps = 0;             // simulated steps after the first
  double wait_share = 0;          // Σ wait ÷ (Σ wait + steps × step_s), steady state
  double steps_waited_share = 0;  // share of steady steps that waited at all (> 1 µs)
  double mean_wait_s = 0;
  double p50_wait_s = 0;
  double p99_wait_s = 0;
  double max_wait_s = 0;
  double first_batch_s = 0;  // wait for step 0
  double period_s = 0;       // mean time between the consumer's takes after step 0 (with step_s 0: the capacity)
};

ConsumerSimulation SimulateConsumer(const std::vector<double>& produce_s, unsigned threads, unsigned prefetch,
                                    double step_s, uint64_t steps);

}  // namespace lmkit::dataload
