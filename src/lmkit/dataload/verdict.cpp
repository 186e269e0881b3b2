#include "lmkit/dataload/verdict.h"

#include <algorithm>

namespace lmkit::dataload {

InputBound ClassifyWaitShare(double wait_share) {
  if (wait_share >= kHighlyInputBound) return InputBound::kHighly;
  if (wait_share >= kModeratelyInputBound) return InputBound::kModerately;
  return InputBound::kNot;
}

const char* InputBoundName(InputBound b) {
  switch (b) {
    case InputBound::kUnknown:
      return "unknown";
    case InputBound::kNot:
      return "not";
    case InputBound::kModerately:
      return "moderately";
    case InputBound::kHighly:
      return "highly";
  }
  return "unknown";
}

const char* InputBoundPhrase(InputBound b) {
  switch (b) {
    case InputBound::kUnknown:
      return "no verdict";
    case InputBound::kNot:
      return "NOT input-bound";
    case InputBound::kModerately:
      return "MODERATELY input-bound";
    case InputBound::kHighly:
      return "HIGHLY input-bound";
  }
  return "no verdict";
}

ConsumerSimulation SimulateConsumer(const std::vector<double>& produce_s, unsigned threads, unsigned prefetch,
                                    double step_s, uint64_t steps) {
  ConsumerSimulation out;
  if (produce_s.empty() || steps == 0) return out;
  threads = std::max(1u, threads);
  prefetch = std::max(1u, prefetch);
  const uint64_t total = steps + 1;
  std::vector<double> producer_free(threads, 0.0);
  std::vector<double> take(total, 0.0);  // when the consumer took batch j
  std::vector<double> waits;
  waits.reserve(steps);
  double consumer_ready = 0;  // when the consumer finished its previous step
  double wait_sum = 0;
  uint64_t waited = 0;
  for (uint64_t j = 0; j < total; ++j) {
    auto it = std::min_element(producer_free.begin(), producer_free.end());
    double start = *it;
    if (j >= prefetch) start = std::max(start, take[j - prefetch]);  // a buffer frees when its batch is taken
    const double ready = start + produce_s[j % produce_s.size()];
    *it = ready;
    const double t = std::max(ready, consumer_ready);
    const double wait = t - consumer_ready;
    take[j] = t;
    consumer_ready = t + step_s;
    if (j == 0) {
      out.first_batch_s = wait;
      continue;
    }
    waits.push_back(wait);
    wait_sum += wait;
    if (wait > 1e-6) ++waited;
  }
  out.steps = steps;
  out.period_s = (take[steps] - take[0]) / static_cast<double>(steps);
  const double busy = static_cast<double>(steps) * step_s;
  out.wait_share = wait_sum + busy > 0 ? wait_sum / (wait_sum + busy) : 0;
  out.steps_waited_share = static_cast<double>(waited) / static_cast<double>(steps);
  out.mean_wait_s = wait_sum / static_cast<double>(steps);
  std::sort(waits.begin(), waits.end());
  auto rank = [&](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(waits.size()));
    return waits[std::min(i, waits.size() - 1)];
  };
  out.p50_wait_s = rank(0.50);
  out.p99_wait_s = rank(0.99);
  out.max_wait_s = waits.back();
  return out;
}

}  // namespace lmkit::dataload
