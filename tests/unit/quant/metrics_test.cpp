// Error metrics of a reconstruction: SQNR, cosine, MSE and clipped share from fp64 sums, their edge cases, and merging.
#include "lmkit/quant/metrics.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

using namespace lmkit::quant;

TEST_CASE("metrics: golden values of a small reconstruction", "[quant][metrics]") {
  // x = 1, 1, 1, 1; xhat = 0.5, 1.5, 1, 1: err^2 sums to 0.5, x.xhat = 4, |xhat|^2 = 4.5.
  const std::vector<float> x = {1, 1, 1, 1}, xhat = {0.5f, 1.5f, 1, 1};
  const ErrorStats s = CompareValues(x.data(), xhat.data(), 4);
  CHECK(s.count == 4);
  CHECK(s.sum_x2 == 4);
  CHECK(s.sum_err2 == 0.5);
  CHECK(s.sum_xhat2 == 4.5);
  CHECK(s.max_abs_err == 0.5);
  CHECK(s.SqnrDb() == Approx(10 * std::log10(8.0)));  // 9.031 dB
  CHECK(s.Cosine() == Approx(4 / std::sqrt(4 * 4.5)));
  CHECK(s.Mse() == 0.125);
  CHECK(s.ClippedShare() == 0);
}

TEST_CASE("metrics: exact, all-zero and empty inputs", "[quant][metrics]") {
  const std::vector<float> x = {3, -2}, zero = {0, 0};
  const ErrorStats exact = CompareValues(x.data(), x.data(), 2);
  CHECK(std::isinf(exact.SqnrDb()));
  CHECK(exact.SqnrDb() > 0);
  CHECK(exact.Cosine() == 1.0);
  const ErrorStats zeros = CompareValues(zero.data(), zero.data(), 2);
  CHECK(zeros.SqnrDb() > 0);     // an exact reconstruction of nothing: +inf
  CHECK(zeros.Cosine() == 1.0);  // both all zero
  const ErrorStats lost = CompareValues(x.data(), zero.data(), 2);
  CHECK(lost.Cosine() == 0.0);          // exactly one all zero
  CHECK(lost.SqnrDb() == Approx(0.0));  // error as large as the signal
  const ErrorStats empty;
  CHECK(empty.Mse() == 0);
  CHECK(empty.ClippedShare() == 0);
}

TEST_CASE("metrics: merging per-row stats equals the stats of the whole", "[quant][metrics]") {
  std::vector<float> x(64), xhat(64);
  for (int i = 0; i < 64; ++i) {
    x[i] = static_cast<float>(std::sin(0.37 * i));
    xhat[i] = x[i] + static_cast<float>((i % 5) - 2) * 0.01f;
  }
  ErrorStats rows;
  for (int r = 0; r < 4; ++r) {
    ErrorStats part = CompareValues(x.data() + 16 * r, xhat.data() + 16 * r, 16);
    part.clipped = static_cast<uint64_t>(r);
    rows.Merge(part);
  }
  const ErrorStats whole = CompareValues(x.data(), xhat.data(), 64);
  CHECK(rows.count == 64);
  CHECK(rows.clipped == 6);
  CHECK(rows.ClippedShare() == 6.0 / 64);
  CHECK(rows.sum_x2 == Approx(whole.sum_x2).epsilon(1e-12));
  CHECK(rows.sum_err2 == Approx(whole.sum_err2).epsilon(1e-12));
  CHECK(rows.max_abs_err == whole.max_abs_err);
  CHECK(rows.SqnrDb() == Approx(whole.SqnrDb()).epsilon(1e-12));
}
