// Each function follows its reference's arithmetic step by step (sources in docs/quant.md), including the quirks that
// change results: NVIDIA's bins[0] = bins[1] and last-argmin, ORT's integer truncation of the expanded Q and its eps
// smoothing. Search loops are O(bins^2) over at most a few thousand bins. The NVIDIA entropy search (2048 bins: 2M
// logs, 16 ms on one thread of the build VM) was a third of an in-memory calibration of 1e8 values, so its candidates
// run in parallel and are shortlisted by a regrouped O(128)-per-candidate form before the literal one decides (see
// NvidiaEntropyAmax). The ORT entropy candidates run in parallel too, fused so that empty bins cost no logarithm of
// their own (OrtCandidate); the others stay serial.
#include "lmkit/quant/calibrators.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "lmkit/common/thread_pool.h"

namespace lmkit::quant {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

namespace {

// The non-zero bins of the search histogram, shared by all candidates: their indices, and the sequential sums of their
// counts (prefix[j] = bins[idx[0]] + ... + bins[idx[j - 1]], added left to right from 0).
struct NonZeroBins {
  std::vector<uint32_t> idx;
  std::vector<double> prefix;
};

struct EntropyScratch {
  std::vector<double> group_sum, group_nz, group_avg;
  std::vector<int32_t> group;  // per non-zero bin below the candidate
};

// KL(P || Q) of candidate i (see calibrators.h) with the bits of a literal transcription of the reference (build P and
// Q as i-element arrays, group bins by np.digitize, then scipy's entropy). Only the non-zero bins are visited, which
// changes no bit: a zero bin is in no group, its q is 0, adding it to a sum of non-negative terms changes nothing and
// scipy skips p == 0 terms; what remains is done in the same order with the same operations. The groups come from an
// incremental walk (step = i / quant_bins and k * step are the same doubles as in the reference), and each group's
// average is divided once. On peaked activations most of the 2048 bins are empty, so this is several times faster.
double EntropyCandidate(const std::vector<double>& bins, const std::vector<double>& tail, const NonZeroBins& nz,
                        uint32_t i, uint32_t quant_bins, EntropyScratch& s) {
  const double step = static_cast<double>(i) / quant_bins;
  const size_t below = static_cast<size_t>(std::lower_bound(nz.idx.begin(), nz.idx.end(), i) - nz.idx.begin());
  s.group.resize(below);
  s.group_sum.assign(quant_bins + 1, 0.0);
  s.group_nz.assign(quant_bins + 1, 0.0);
  s.group_avg.assign(quant_bins + 1, 0.0);
  int32_t k = 0;
  for (size_t j = 0; j < below; ++j) {
    const uint32_t idx = nz.idx[j];
    // np.digitize(range(i), np.linspace(0, i, quant_bins + 1)) - 1: the last k with k * (i / quant_bins) <= idx.
    while (k + 1 <= static_cast<int32_t>(quant_bins) && (k + 1) * step <= idx) ++k;
    s.group[j] = k;
    s.group_sum[k] += bins[idx];
    s.group_nz[k] += 1;
  }
  for (uint32_t g = 0; g <= quant_bins; ++g)
    if (s.group_nz[g] > 0) s.group_avg[g] = s.group_sum[g] / s.group_nz[g];

  // P = bins[0, i) with the tail mass added to its last element.
  const uint32_t last = i - 1;
  const bool last_nonzero = below > 0 && nz.idx[below - 1] == last;
  const size_t before_last = below - (last_nonzero ? 1 : 0);
  const double p_last = bins[last] + tail[i];
  const double q_last = last_nonzero ? s.group_avg[s.group[below - 1]] : 0.0;
  // scipy.stats.entropy(p, q): both normalised, sum p log(p / q); p > 0 with q == 0 gives inf.
  const double sp = nz.prefix[before_last] + p_last;
  double sq = 0;
  for (size_t j = 0; j < below; ++j) sq += s.group_avg[s.group[j]];
  if (sp <= 0 || sq <= 0) return kInf;
  double kl = 0;
  auto term = [&](double p, double q) {
    const double a = p / sp, b = q / sq;
    if (!(a > 0)) return true;
    if (b <= 0) return false;
    kl += a * std::log(a / b);
    return true;
  };
  for (size_t j = 0; j < before_last; ++j)
    if (!term(bins[nz.idx[j]], s.group_avg[s.group[j]])) return kInf;
  if (!term(p_last, q_last)) return kInf;
  return kl;
}

}  // namespace

namespace {

// The search histogram (bins[0] = bins[1]) with the sums both searches share.
struct SearchBins {
  std::vector<double> bins;
  std::vector<double> tail;  // tail[i] = bins[i] + ... + bins[n - 1]
  NonZeroBins nz;
};

SearchBins MakeSearchBins(const AbsHistogram& h) {
  SearchBins sb;
  sb.bins.assign(h.counts().begin(), h.counts().end());
  const uint32_t n = static_cast<uint32_t>(sb.bins.size());
  sb.bins[0] = sb.bins[1];
  sb.tail.assign(n + 1, 0.0);
  for (uint32_t i = n; i-- > 0;) sb.tail[i] = sb.tail[i + 1] + sb.bins[i];
  sb.nz.prefix.push_back(0.0);
  for (uint32_t b = 0; b < n; ++b) {
    if (sb.bins[b] == 0) continue;
    sb.nz.idx.push_back(b);
    sb.nz.prefix.push_back(sb.nz.prefix.back() + sb.bins[b]);
  }
  return sb;
}

// Runs fn(i, scratch) for every candidate i in [first, first + count) into out[i - first]. Tasks take every
// `tasks`-th candidate (the cost grows with i, so striding balances them); results do not depend on the thread count.
template <typename Scratch = EntropyScratch, typename Fn>
void ForCandidates(uint32_t first, uint32_t count, ThreadPool* pool, std::vector<double>& out, Fn fn) {
  out.assign(count, 0.0);
  const size_t tasks = std::min<size_t>(count, pool ? size_t{4} * pool->size() : 1);
  auto run = [&](size_t t, unsigned) {
    Scratch s;
    for (uint32_t c = static_cast<uint32_t>(t); c < count; c += static_cast<uint32_t>(tasks)) out[c] = fn(first + c, s);
  };
  if (pool && tasks > 1) {
    pool->ParallelFor(tasks, run);
  } else {
    for (size_t t = 0; t < tasks; ++t) run(t, 0);
  }
}

// KL(P || Q) of candidate i by the same definition as EntropyCandidate, regrouped so that it costs O(quant_bins)
// logarithms instead of one per non-zero bin: with p_j > 0 summing to sp and q constant (S_g / nz_g) within a group,
//   sum_j (p_j / sp) log((p_j / sp) / (q_j / sq)) = (sum p log p - sum_g P_g log q_g) / sp - log sp + log sq,
// where sum p log p comes from prefix sums over the bins and P_g is the group's P mass (its bins' counts, plus the tail
// for the group holding a non-zero last bin). Groups are the reference's: bin idx is in group k when k * step <= idx <
// (k + 1) * step with the same doubles, i.e. [ceil(k * step), ceil((k + 1) * step)). The infinite cases are decided
// exactly as there (an empty last bin under tail mass, or no mass). Rounding differs from the literal sums by ~1e-13
// absolute (terms of size log(count) cancel), which is why NvidiaEntropyAmax only uses it to shortlist.
struct FastSums {
  std::vector<double> count, nonzero, plogp;  // prefix sums over bins [0, j)
};

FastSums MakeFastSums(const std::vector<double>& bins) {
  FastSums f;
  const size_t n = bins.size();
  f.count.assign(n + 1, 0.0);
  f.nonzero.assign(n + 1, 0.0);
  f.plogp.assign(n + 1, 0.0);
  for (size_t j = 0; j < n; ++j) {
    f.count[j + 1] = f.count[j] + bins[j];
    f.nonzero[j + 1] = f.nonzero[j] + (bins[j] > 0 ? 1.0 : 0.0);
    f.plogp[j + 1] = f.plogp[j] + (bins[j] > 0 ? bins[j] * std::log(bins[j]) : 0.0);
  }
  return f;
}

double FastEntropyCandidate(const SearchBins& sb, const FastSums& f, uint32_t i, uint32_t quant_bins) {
  const uint32_t last = i - 1;
  const double tail = sb.tail[i], b_last = sb.bins[last], p_last = b_last + tail;
  const bool last_nonzero = b_last > 0;
  if (!last_nonzero && p_last > 0) return kInf;  // Q is 0 where P has the tail's mass
  const double sp = f.count[last] + p_last;
  const double step = static_cast<double>(i) / quant_bins;
  double sq = 0, plogq = 0;
  uint32_t lo = 0;
  for (uint32_t k = 0; k < quant_bins && lo < i; ++k) {
    const uint32_t hi = std::min<uint32_t>(i, static_cast<uint32_t>(std::ceil((k + 1) * step)));
    if (hi <= lo) continue;
    const double nz = f.nonzero[hi] - f.nonzero[lo];
    if (nz > 0) {
      const double mass = f.count[hi] - f.count[lo];
      const double q = mass / nz;
      sq += mass;
      plogq += (last_nonzero && hi == i ? mass + tail : mass) * std::log(q);
    }
    lo = hi;
  }
  if (sp <= 0 || sq <= 0) return kInf;
  double plogp = f.plogp[last];
  if (p_last > 0) plogp += p_last * std::log(p_last);
  return (plogp - plogq) / sp - std::log(sp) + std::log(sq);
}

// Whether a search over candidates [start_bin, bins] exists (the divergence functions return {} otherwise).
bool Searchable(uint32_t bins, uint32_t start_bin) { return bins >= 2 && start_bin <= bins && start_bin != 0; }

std::vector<double> FastDivergences(const SearchBins& sb, uint32_t start_bin, uint32_t quant_bins, ThreadPool* pool) {
  const FastSums f = MakeFastSums(sb.bins);
  std::vector<double> kl;
  ForCandidates(start_bin, static_cast<uint32_t>(sb.bins.size()) + 1 - start_bin, pool, kl,
                [&](uint32_t i, EntropyScratch&) { return FastEntropyCandidate(sb, f, i, quant_bins); });
  return kl;
}

}  // namespace

std::vector<double> NvidiaEntropyDivergences(const AbsHistogram& h, uint32_t start_bin, uint32_t quant_bins,
                                             ThreadPool* pool) {
  if (!Searchable(h.bins(), start_bin)) return {};
  const SearchBins sb = MakeSearchBins(h);
  std::vector<double> kl;
  ForCandidates(start_bin, h.bins() + 1 - start_bin, pool, kl, [&](uint32_t i, EntropyScratch& s) {
    return EntropyCandidate(sb.bins, sb.tail, sb.nz, i, quant_bins, s);
  });
  return kl;
}

std::vector<double> NvidiaEntropyDivergencesFast(const AbsHistogram& h, uint32_t start_bin, uint32_t quant_bins,
                                                 ThreadPool* pool) {
  if (!Searchable(h.bins(), start_bin)) return {};
  return FastDivergences(MakeSearchBins(h), start_bin, quant_bins, pool);
}

double NvidiaEntropyAmax(const AbsHistogram& h, uint32_t start_bin, uint32_t quant_bins, ThreadPool* pool) {
  // The regrouped divergences shortlist every candidate within kBand of their minimum (their error is ~1e-13, so the
  // literal minimum is among them); the literal ones decide among those, with the reference's last-minimum rule. Same
  // result as searching with the literal divergences alone (a test checks it), ~8x less work: the literal search was
  // 7 ms of a 60 ms in-memory calibration of 1e8 values. Infinite candidates are infinite in both.
  constexpr double kBand = 1e-9;
  if (!Searchable(h.bins(), start_bin)) return h.amax();
  const SearchBins sb = MakeSearchBins(h);
  const std::vector<double> approx = FastDivergences(sb, start_bin, quant_bins, pool);
  double low = kInf;
  for (double v : approx) low = std::min(low, v);
  uint32_t best_i = h.bins();
  if (low == kInf) {
    best_i = start_bin + static_cast<uint32_t>(approx.size()) - 1;  // all infinite: the last one is a minimum too
  } else {
    EntropyScratch s;
    double best = kInf;
    for (uint32_t c = 0; c < approx.size(); ++c) {
      if (!(approx[c] <= low + kBand * (1.0 + std::fabs(low)))) continue;
      const double kl = EntropyCandidate(sb.bins, sb.tail, sb.nz, start_bin + c, quant_bins, s);
      if (kl <= best) {  // <=: the last minimum wins
        best = kl;
        best_i = start_bin + c;
      }
    }
  }
  return h.Edge(best_i);
}

double NvidiaPercentileAmax(const AbsHistogram& h, double percentile) {
  const auto& c = h.counts();
  const double total = static_cast<double>(h.total());
  if (total == 0) return 0;
  const double target = percentile / 100.0;
  double cum = 0;
  for (uint32_t i = 0; i < c.size(); ++i) {
    cum += static_cast<double>(c[i]) / total;
    if (cum >= target) return h.Edge(i);
  }
  return h.Edge(static_cast<uint32_t>(c.size()));
}

double NvidiaMseAmax(const AbsHistogram& h, uint32_t start_bin) {
  const auto& c = h.counts();
  const uint32_t n = h.bins();
  if (start_bin >= n) return h.amax();
  // The centres are (e_j + e_j+1) / 2 of the fp32 edges, as the reference computes them in fp32; summed in fp64 and
  // rounded once, which gives the same value wherever the fp32 sum is finite (halving is exact) and a finite one near
  // FLT_MAX, where the fp32 sum overflowed to inf and made every candidate NaN.
  std::vector<float> centers(n);
  for (uint32_t j = 0; j < n; ++j)
    centers[j] = static_cast<float>(
        (static_cast<double>(static_cast<float>(h.Edge(j))) + static_cast<double>(static_cast<float>(h.Edge(j + 1)))) /
        2.0);
  double best = kInf;
  uint32_t best_i = start_bin;
  for (uint32_t i = start_bin; i < n; ++i) {
    const float amax = centers[i];
    if (!(amax > 0)) continue;
    const float scale = 127.0f / amax;  // pytorch-quantization fake_tensor_quant: round(x * 127 / amax) / (127 / amax)
    double mse = 0;
    for (uint32_t j = 0; j < n; ++j) {
      const float code = std::min(std::nearbyint(centers[j] * scale), 127.0f);
      const float qv = code / scale;
      // Near FLT_MAX the fp32 quotient can round past it to inf; fp64 keeps that candidate's error finite.
      const double e = (std::isfinite(qv) ? static_cast<double>(qv) : static_cast<double>(code) / scale) - centers[j];
      mse += e * e * static_cast<double>(c[j]);
    }
    if (mse < best) {  // np.argmin: the first minimum
      best = mse;
      best_i = i;
    }
  }
  return centers[best_i];
}

namespace {

struct OrtScratch {
  std::vector<double> p;        // the window's P, smoothed
  std::vector<double> term;     // the window's KL terms, summed in order at the end
  std::vector<double> q_group;  // the smoothed Q of each group (constant over its bins); [quant_bins]: past `covered`
  std::vector<int64_t> quantized, norm;
};

// What every candidate shares: prefix sums of the counts, and the indices of the non-zero bins.
struct OrtSearch {
  const std::vector<uint64_t>& hist;
  std::vector<double> prefix;
  std::vector<uint32_t> nonzero;
};

// eps1 of ORT's smooth_distribution for `zeros` of `size` values; false when all are zero (ORT returns None: inf).
bool SmoothEps1(size_t zeros, size_t size, float* eps1) {
  constexpr double kEps = 1e-4;
  const size_t nonzeros = size - zeros;
  if (nonzeros == 0) return false;
  *eps1 = static_cast<float>(kEps * static_cast<double>(zeros) / static_cast<double>(nonzeros));
  return true;
}

// smooth_distribution of one value, in float32 as ORT does it: a zero becomes eps, the rest lose eps1. Both are
// computed and one is picked by mask: as a branch it mispredicted on the scattered empty bins of a sparse histogram.
double SmoothOne(double v, float eps1) {
  constexpr float kEps = static_cast<float>(1e-4);
  const double zero = static_cast<double>(0.0f + kEps), other = static_cast<double>(static_cast<float>(v) - eps1);
  const uint64_t mask = 0 - static_cast<uint64_t>(v == 0);
  return std::bit_cast<double>((std::bit_cast<uint64_t>(zero) & mask) | (std::bit_cast<uint64_t>(other) & ~mask));
}

// Calls fn(g, begin, end) for each group's bins [begin, end) of a window of `size` bins, in order: groups 0 ..
// quant_bins - 1 of `merged` bins each, then g = quant_bins for the bins past them.
template <typename Fn>
void ForEachGroup(uint32_t quant_bins, uint32_t merged, uint32_t size, Fn fn) {
  for (uint32_t g = 0, k = 0; g <= quant_bins; ++g) {
    const uint32_t group_end = g < quant_bins ? k + merged : size;
    fn(g, k, group_end);
    k = group_end;
  }
}

// ORT's divergence of candidate i (the central 2i + 1 bins around `zero`), in float32 as ORT keeps it: P = the
// window with the mass outside it added to its end bins, Q = the window's counts merged into quant_bins groups and
// spread (truncated, as ORT stores it in int64) over each group's non-zero P bins, both smoothed, then
// scipy.stats.entropy. Every value and every floating-point sum is formed with the same operations in the same order
// as the step-by-step transcription (the oracle in calibrators_test.cpp: same bits); the integer group sums are exact
// in any order. What changes is the work: Q is kept per group (it is constant over a group's bins), and the terms
// a log(a / b) of the empty bins, which are most bins when ORT's range spans the outliers, are one per group, since an
// empty bin's P is the same smoothed eps everywhere; only the non-zero bins (listed once for all candidates) take a
// logarithm of their own. The terms are then summed in bin order, as scipy's loop would.
double OrtCandidate(const OrtSearch& o, uint32_t i, uint32_t zero, uint32_t quant_bins, OrtScratch& s) {
  const std::vector<uint64_t>& hist = o.hist;
  const uint32_t num_bins = static_cast<uint32_t>(hist.size());
  const uint32_t start = zero - i;
  const uint32_t end = std::min(zero + i + 1, num_bins);
  const uint32_t size = end - start;
  const uint32_t merged = size / quant_bins, covered = merged * quant_bins;  // bins past `covered`: last group's Q
  s.p.resize(size);
  s.quantized.assign(quant_bins, 0);
  s.norm.assign(quant_bins + 1, 0);
  // Bins are visited group by group (g = quant_bins for the bins past `covered`), in order.
  // Pass 1: P with the outside mass at its ends, its zeros, each group's count sum (of the window's own counts) and
  // number of non-zero P bins.
  size_t zeros_p = size;
  ForEachGroup(quant_bins, merged, size, [&](uint32_t g, uint32_t begin, uint32_t group_end) {
    int64_t sum = 0, nonzero = 0;  // in registers: s.p's stores could alias the vectors' elements
    for (uint32_t k = begin; k < group_end; ++k) {
      double c = static_cast<double>(hist[start + k]);
      sum += static_cast<int64_t>(c);
      if (k == 0) c += o.prefix[start];
      if (k == size - 1) c += o.prefix[num_bins] - o.prefix[end];
      s.p[k] = c;
      nonzero += c != 0;
    }
    s.quantized[std::min(g, quant_bins - 1)] += sum;  // the bins past `covered` go into the last group's sum
    s.norm[g] = nonzero;                              // norm[quant_bins] (the bins past `covered`): empty-bin test only
    zeros_p -= nonzero;
  });
  // Q per group, and its zeros (groups without a non-zero P bin, or whose truncated average is 0; the bins past
  // `covered`, which ORT leaves at 0).
  s.q_group.assign(quant_bins + 1, 0.0);
  size_t zeros_q = size - covered;
  for (uint32_t g = 0; g < quant_bins; ++g) {
    if (s.norm[g] != 0) s.q_group[g] = std::trunc(static_cast<double>(s.quantized[g]) / static_cast<double>(s.norm[g]));
    if (s.q_group[g] == 0) zeros_q += merged;
  }
  float eps1_p, eps1_q;
  if (!SmoothEps1(zeros_p, size, &eps1_p) || !SmoothEps1(zeros_q, size, &eps1_q)) return kInf;
  for (double& q : s.q_group) q = SmoothOne(q, eps1_q);
  // Pass 2: smooth P; sum P and Q bin by bin, left to right.
  double sp = 0, sq = 0;
  ForEachGroup(quant_bins, merged, size, [&](uint32_t g, uint32_t begin, uint32_t group_end) {
    const double q = s.q_group[g];
    for (uint32_t k = begin; k < group_end; ++k) {
      s.p[k] = SmoothOne(s.p[k], eps1_p);
      sp += s.p[k];
      sq += q;
    }
  });
  if (sp <= 0 || sq <= 0) return kInf;
  // Pass 3: the terms. A term not added by scipy (a == 0) is 0 here: adding +0 to the sum changes no bit, since the
  // sum starts at +0 and a round-to-nearest sum of terms is never -0.
  bool infinite = false;  // a > 0 where b <= 0
  auto term = [&](double p, double q) {
    const double a = p / sp, b = q / sq;
    if (!(a > 0)) return 0.0;
    if (b <= 0) infinite = true;
    return a * std::log(a / b);
  };
  const double p_empty = SmoothOne(0.0, eps1_p);
  s.term.resize(size);
  ForEachGroup(quant_bins, merged, size, [&](uint32_t g, uint32_t begin, uint32_t group_end) {
    // Only a group with an empty bin has this term (an infinite one must not come from a group without).
    const bool has_empty = static_cast<int64_t>(group_end - begin) > s.norm[g];
    std::fill(s.term.begin() + begin, s.term.begin() + group_end, has_empty ? term(p_empty, s.q_group[g]) : 0.0);
  });
  auto group_of = [&](uint32_t k) { return k < covered ? k / merged : quant_bins; };
  // The non-zero interior bins; a run of equal (P, Q) pairs (counts of 1 in one group, say) reuses its first term.
  const auto first = std::upper_bound(o.nonzero.begin(), o.nonzero.end(), start);
  const auto last = std::lower_bound(first, o.nonzero.end(), end - 1);
  double last_p = -1, last_q = -1, last_term = 0;
  for (auto it = first; it < last; ++it) {
    const uint32_t k = *it - start;
    const double p = s.p[k], q = s.q_group[group_of(k)];
    if (p != last_p || q != last_q) last_p = p, last_q = q, last_term = term(p, q);
    s.term[k] = last_term;
  }
  // The end bins, whatever they hold (the outside mass makes them non-zero where the histogram is empty).
  s.term[0] = term(s.p[0], s.q_group[group_of(0)]);
  s.term[size - 1] = term(s.p[size - 1], s.q_group[group_of(size - 1)]);
  if (infinite) return kInf;
  double kl = 0;
  for (double t : s.term) kl += t;
  return static_cast<float>(kl);  // ORT keeps divergences as float32
}

}  // namespace

std::vector<double> OrtEntropyDivergences(const OrtSignedHistogram& h, uint32_t quant_bins, ThreadPool* pool) {
  const auto& hist = h.counts();
  const uint32_t num_bins = static_cast<uint32_t>(hist.size());
  const uint32_t zero = num_bins / 2, half_q = quant_bins / 2;
  std::vector<double> divs;
  if (num_bins == 0 || quant_bins == 0 || half_q > zero) return divs;
  OrtSearch o{hist, std::vector<double>(num_bins + 1, 0.0), {}};
  for (uint32_t i = 0; i < num_bins; ++i) {
    o.prefix[i + 1] = o.prefix[i] + static_cast<double>(hist[i]);
    if (hist[i] != 0) o.nonzero.push_back(i);
  }
  // Candidates are independent (each in parallel when a pool is given).
  ForCandidates<OrtScratch>(half_q, zero - half_q + 1, pool, divs,
                            [&](uint32_t i, OrtScratch& s) { return OrtCandidate(o, i, zero, quant_bins, s); });
  return divs;
}

std::pair<double, double> OrtEntropyThreshold(const OrtSignedHistogram& h, uint32_t quant_bins, ThreadPool* pool) {
  const auto& edges = h.edges();
  if (h.counts().empty()) return {0, 0};
  const uint32_t num_bins = static_cast<uint32_t>(h.counts().size());
  const uint32_t zero = num_bins / 2, half_q = quant_bins / 2;
  std::pair<double, double> best_t{edges.front(), edges.back()};
  const std::vector<double> divs = OrtEntropyDivergences(h, quant_bins, pool);
  double best = kInf;
  for (uint32_t c = 0; c < divs.size(); ++c) {
    if (c == 0 || divs[c] < best) {  // np.argmin: the first minimum
      best = divs[c];
      const uint32_t i = half_q + c;
      best_t = {edges[zero - i], edges[std::min(zero + i + 1, num_bins)]};
    }
  }
  if (best_t.first < h.min()) best_t.first = h.min();
  if (best_t.second > h.max()) best_t.second = h.max();
  return best_t;
}

std::pair<double, double> OrtPercentileThreshold(const OrtAbsHistogram& h, double percentile) {
  const auto& c = h.counts();
  if (c.empty()) return {0, 0};
  const double total = static_cast<double>(std::accumulate(c.begin(), c.end(), uint64_t{0}));
  const double target = percentile / 100.0;
  double cum = 0;
  size_t idx = c.size();
  for (size_t i = 0; i < c.size(); ++i) {
    cum += static_cast<double>(c[i]) / total;
    if (cum >= target) {
      idx = i;
      break;
    }
  }
  const double e = h.edges()[std::min(idx, h.edges().size() - 1)];
  std::pair<double, double> t{-e, e};
  if (t.first < h.min()) t.first = h.min();
  if (t.second > h.max()) t.second = h.max();
  return t;
}

}  // namespace lmkit::quant
