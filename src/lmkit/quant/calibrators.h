// Threshold (amax) selection from histograms: entropy (KL), percentile and MSE, in the two reference flavours.
//
// Contract: pure functions of a histogram; no allocation beyond O(bins) scratch (per task of the pool, if given).
// docs/quant.md describes each algorithm, its source and how the flavours differ; reference/quant.md's parity values
// hold to 1e-5 relative (tests/unit/quant/calibrators_test.cpp).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "lmkit/quant/abs_histogram.h"
#include "lmkit/quant/ort_histogram.h"

namespace lmkit {
class ThreadPool;
}

namespace lmkit::quant {

// NVIDIA pytorch-quantization _compute_amax_entropy: bins[0] is replaced by bins[1]; for every i in [start_bin, bins]
// P = first i bins with the tail mass added to bin i-1, Q = those i bins merged into 128 groups (np.linspace group
// boundaries), each group's mass spread over its non-zero bins; KL(P||Q) with scipy's normalisation; the LAST i with
// the minimal divergence wins; amax = left edge of bin i (edge i). With `pool`, candidates are evaluated in parallel;
// the result is the same for any thread count.
double NvidiaEntropyAmax(const AbsHistogram& h, uint32_t start_bin = 128, uint32_t quant_bins = 128,
                         ThreadPool* pool = nullptr);
// The divergence of every candidate: element c is KL(P || Q) for i = start_bin + c (inf where Q is 0 under P's mass);
// empty when there is nothing to search (fewer than 2 bins, start_bin 0 or past the last bin).
std::vector<double> NvidiaEntropyDivergences(const AbsHistogram& h, uint32_t start_bin, uint32_t quant_bins,
                                             ThreadPool* pool = nullptr);
// The same divergences regrouped to cost O(quant_bins) per candidate instead of O(non-zero bins); they differ from
// NvidiaEntropyDivergences by rounding only (~1e-13 absolute) and are exactly infinite where those are. Used to
// shortlist candidates in NvidiaEntropyAmax.
std::vector<double> NvidiaEntropyDivergencesFast(const AbsHistogram& h, uint32_t start_bin, uint32_t quant_bins,
                                                 ThreadPool* pool = nullptr);
// NVIDIA _compute_amax_percentile: edge[idx] where idx is the first bin whose CDF reaches percentile/100.
double NvidiaPercentileAmax(const AbsHistogram& h, double percentile);
// NVIDIA _compute_amax_mse: bin centres c_i for i >= start_bin as candidates; minimise sum_j counts_j (fq(c_j) -
// c_j)^2 where fq fake-quantizes to [-127, 127] with scale 127 / c_i (half-even); first minimum wins.
double NvidiaMseAmax(const AbsHistogram& h, uint32_t start_bin = 128);

// ORT get_entropy_threshold on the signed histogram (num_quantized_bins, default 128): returns (lo, hi) clamped to
// the data's (min, max). With `pool`, candidates are evaluated in parallel; the result is the same for any count.
std::pair<double, double> OrtEntropyThreshold(const OrtSignedHistogram& h, uint32_t quant_bins = 128,
                                              ThreadPool* pool = nullptr);
// The divergences that search takes the first minimum of, one per candidate i in [quant_bins / 2, bins / 2] (the
// central 2i + 1 bins), as float32 values the way ORT keeps them; empty when there is no candidate. The same bits as a
// step-by-step transcription of ORT's arrays (calibrators_test.cpp holds them equal), for any pool.
std::vector<double> OrtEntropyDivergences(const OrtSignedHistogram& h, uint32_t quant_bins = 128,
                                          ThreadPool* pool = nullptr);
// ORT compute_percentile, symmetric: (-e, e) with e = edges[searchsorted(cdf, p/100)], clamped to (min, max).
std::pair<double, double> OrtPercentileThreshold(const OrtAbsHistogram& h, double percentile);

}  // namespace lmkit::quant
