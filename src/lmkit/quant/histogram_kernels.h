// The vector kernels under the calibration histograms (abs_histogram.h, ort_histogram.h) and the range scan
// (sample_range.h): counting into interleaved 32-bit tables, one kernel per instruction set (AVX-512, AVX2, portable),
// picked at run time; every level gives the same counts and ranges. Internal to src/lmkit/quant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lmkit/quant/sample_range.h"

namespace lmkit::quant::kernels {

// Values go to kTables interleaved tables (value i to table i % kTables) so that runs of equal bins do not serialise
// on one counter in memory.
constexpr uint32_t kTables = 4;
// Largest block one kernel call takes: with pending_ checked before each block, no 32-bit slot can overflow.
constexpr uint64_t kMaxBlock = uint64_t{1} << 30;
// Work items of the parallel scans and histograms: fixed pieces, so each worker's partial is a sum over whole items
// (integer counts and min/max: the merged result cannot depend on which worker took which item).
constexpr uint64_t kParallelItem = uint64_t{1} << 16;

// Slots between the starts of two tables (at least bins + 1; slot `bins` takes the values a kernel drops).
uint32_t TableStride(uint32_t bins);
// Two consecutive values whose bins are both below kPairBins may be counted by CountAbs as one increment of slot
// PairBase(bins) + first * kPairBins + second, which the owner adds to both bins when it folds the tables.
constexpr uint32_t kPairBins = 64;
uint32_t PairBase(uint32_t bins);
// Slots CountAbs's tables need: kTables tables and the pair table.
size_t TableSlots(uint32_t bins);

// 2: AVX-512, 1: AVX2, 0: portable (the best the CPU has, unless a test forced one).
int KernelLevel();

// Adds x[0, n) (n <= kMaxBlock) to the abs tables of a `bins`-bin |x| histogram over [0, amax] (amax > 0):
// formats::AbsBin of each |v| <= amax, the drop slot for larger values and NaN; with `range`, folds ScanRange of x
// into *range from the same pass over memory where the kernel allows.
void CountAbs(const float* x, uint64_t n, float amax, uint32_t bins, uint32_t* tables, SampleRange* range);

// HistogramUniform's rule for one value v in [first, last] (numpy's index from the affine map, then corrected
// against the edges). With non-decreasing edges the loops end at the one k with edges[k] <= v < edges[k + 1] (k =
// nb - 1 for v = last), whatever the first guess: the fast kernels below rely on that.
struct UniformEdges {
  const float* e;
  int64_t nb;
  float first, last, denom;
  explicit UniformEdges(const std::vector<float>& edges)
      : e(edges.data()),
        nb(static_cast<int64_t>(edges.size()) - 1),
        first(edges.front()),
        last(edges.back()),
        denom(edges.back() - edges.front()) {}
};

uint32_t NumpyBin(float v, const UniformEdges& u);

// The fast guess and when to trust it. For v in [first, last] the kernels compute f = fl(fl(v - first) * c) with c =
// fl(nb / fl(last - first)): four fp32 roundings, so |f - r| <= 4.0001 * 2^-24 * nb where r = (v - first) / (last -
// first) * nb in exact arithmetic. Edge i sits at r_i = r(edges[i]), within `dev` of i (measured from the edges in fp64
// when the binner is built: linspace edges are within 2^-24-ish of uniform, grown ones drift further). If the fraction
// of f is in (margin, 1 - margin) with margin >= err + dev, r lies strictly between r_k and r_k+1 for k = trunc(f),
// i.e. edges[k] < v < edges[k + 1]: k is NumpyBin's answer. Other values take NumpyBin. Degenerate edges (duplicates,
// overflowing ranges) give a margin that excludes everything, and every value takes NumpyBin.
struct UniformBinner {
  UniformEdges u;
  float c = 0, margin = 1;
  bool fast = false;
  explicit UniformBinner(const std::vector<float>& edges);
};

// Adds x[0, n) (|x| when `absolute`) to the kTables tables of TableStride(nb) slots: NumpyBin's bin for values in
// [first, last], the drop slot nb for the others; with `range`, also folds ScanRange of x into *range.
void CountUniform(const float* x, uint64_t n, const UniformBinner& b, bool absolute, uint32_t* tables,
                  SampleRange* range);

// Tests only: 0 forces the portable loop of AbsHistogram::Add, HistogramUniformFast and ScanRange, 1 the AVX2 one, 2
// the AVX-512 one (ignored where the CPU lacks it), -1 restores the run-time choice. All give the same results.
void SetAbsHistogramKernelForTesting(int level);

}  // namespace lmkit::quant::kernels
