#include "lmkit/dataload/verdict.h"

#include <catch2/catch.hpp>

using namespace lmkit::dataload;

TEST_CASE("verdict: thresholds at 5% and 20% of step time", "[dataload]") {
  CHECK(ClassifyWaitShare(0.0) == InputBound::kNot);
  CHECK(ClassifyWaitShare(0.0499) == InputBound::kNot);
  CHECK(ClassifyWaitShare(0.05) == InputBound::kModerately);
  CHECK(ClassifyWaitShare(0.1999) == InputBound::kModerately);
  CHECK(ClassifyWaitShare(0.20) == InputBound::kHighly);
  CHECK(ClassifyWaitShare(1.0) == InputBound::kHighly);
  CHECK(std::string(InputBoundPhrase(InputBound::kModerately)) == "MODERATELY input-bound");
  CHECK(std::string(InputBoundName(InputBound::kHighly)) == "highly");
}

TEST_CASE("verdict: a loader faster than the step never makes it wait", "[dataload]") {
  auto s = SimulateConsumer({0.008}, 1, 2, 0.010, 1000);
  CHECK(s.first_batch_s == Approx(0.008));
  CHECK(s.wait_share == 0.0);
  CHECK(s.steps_waited_share == 0.0);
}

TEST_CASE("verdict: a loader twice as slow as the step waits half the time", "[dataload]") {
  // One thread, 20 ms per batch, 10 ms steps: in steady state each step waits 10 ms → 10 / (10 + 10) = 50%.
  auto s = SimulateConsumer({0.020}, 1, 4, 0.010, 1000);
  CHECK(s.wait_share == Approx(0.5).epsilon(0.01));
  CHECK(s.p50_wait_s == Approx(0.010).epsilon(0.01));
  // Two threads share the work: 10 ms of capacity per step, no waiting.
  auto two = SimulateConsumer({0.020}, 2, 4, 0.010, 1000);
  CHECK(two.wait_share < 0.001);
}

TEST_CASE("verdict: the simulated shares land on the 5% and 20% edges", "[dataload]") {
  // 1 thread, produce p, step S: wait = p − S per step, share = (p − S) / p.
  // share 0.20 ⇔ p = 1.25 S ; share 0.05 ⇔ p = S / 0.95.
  auto high = SimulateConsumer({0.0125}, 1, 2, 0.010, 2000);
  CHECK(high.wait_share == Approx(0.20).epsilon(1e-6));
  CHECK(ClassifyWaitShare(high.wait_share + 1e-9) == InputBound::kHighly);
  auto just_below = SimulateConsumer({0.0124}, 1, 2, 0.010, 2000);
  CHECK(ClassifyWaitShare(just_below.wait_share) == InputBound::kModerately);
  auto moderate = SimulateConsumer({0.0106}, 1, 2, 0.010, 2000);  // share 0.0566
  CHECK(ClassifyWaitShare(moderate.wait_share) == InputBound::kModerately);
  auto not_bound = SimulateConsumer({0.0105}, 1, 2, 0.010, 2000);  // share 0.0476
  CHECK(ClassifyWaitShare(not_bound.wait_share) == InputBound::kNot);
}

TEST_CASE("verdict: prefetch depth limits how many batches are in flight", "[dataload]") {
  // Two threads, 15 ms per batch, 10 ms steps. With prefetch 1 only one batch is in flight, so batch j starts when
  // batch j−1 is taken and the consumer waits 5 ms every step: 5 / 15 = 33%. With prefetch 2 both threads work.
  auto one = SimulateConsumer({0.015}, 2, 1, 0.010, 1000);
  CHECK(one.wait_share == Approx(1.0 / 3).epsilon(0.01));
  auto two = SimulateConsumer({0.015}, 2, 2, 0.010, 1000);
  CHECK(two.wait_share < 0.001);
}

TEST_CASE("verdict: jitter with enough mean capacity is absorbed by prefetch", "[dataload]") {
  // Mean 8 ms with one 40 ms batch in 10; steps of 10 ms. Deep prefetch absorbs it, a shallow one does not.
  std::vector<double> d(10, 0.0045);
  d[9] = 0.040;
  auto shallow = SimulateConsumer(d, 1, 1, 0.010, 1000);
  auto deep = SimulateConsumer(d, 1, 8, 0.010, 1000);
  CHECK(shallow.wait_share > 0.05);
  CHECK(deep.wait_share < shallow.wait_share);
  CHECK(shallow.steps_waited_share == Approx(0.1).epsilon(0.05));
}
