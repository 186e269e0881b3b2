// SpeculativeAbsHistogram counts in the max pass already: docs/quant.md, "One read where the data allow".
#include "lmkit/quant/abs_histogram.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include "lmkit/quant/histogram_kernels.h"

namespace lmkit::quant {

AbsHistogram::AbsHistogram(uint32_t bins, float amax) : counts_(bins, 0), amax_(amax) {}

void AbsHistogram::Add(const float* x, uint64_t n, SampleRange* range) {
  const uint32_t bins = this->bins();
  if (!(amax_ > 0)) {  // all samples zero: everything is in bin 0
    for (uint64_t i = 0; i < n; ++i) counts_[0] += std::fabs(x[i]) <= amax_;
    if (range) ScanRange(x, n, range);
    return;
  }
  if (tables_.empty()) tables_.assign(kernels::TableSlots(bins), 0);
  while (n > 0) {
    const uint64_t block = std::min(n, kernels::kMaxBlock);
    if (pending_ + block > std::numeric_limits<uint32_t>::max()) Flush();
    kernels::CountAbs(x, block, amax_, bins, tables_.data(), range);
    pending_ += block;
    x += block;
    n -= block;
  }
}

void AbsHistogram::Flush() const {
  if (pending_ == 0) return;
  const uint32_t bins = this->bins(), stride = kernels::TableStride(bins);
  for (uint32_t t = 0; t < kernels::kTables; ++t)
    for (uint32_t b = 0; b < bins; ++b) counts_[b] += tables_[t * stride + b];
  const uint32_t* pairs = tables_.data() + kernels::PairBase(bins);
  const uint32_t paired = std::min(kernels::kPairBins, bins);  // the kernel pairs only bins below this
  for (uint32_t first = 0; first < paired; ++first)
    for (uint32_t second = 0; second < paired; ++second) {
      const uint32_t c = pairs[first * kernels::kPairBins + second];
      counts_[first] += c;
      counts_[second] += c;
    }
  std::fill(tables_.begin(), tables_.end(), 0u);
  pending_ = 0;
}

const std::vector<uint64_t>& AbsHistogram::counts() const {
  Flush();
  return counts_;
}

std::vector<uint64_t>& AbsHistogram::mutable_counts() {
  Flush();
  return counts_;
}

void AbsHistogram::Merge(const AbsHistogram& other) {
  Flush();
  const std::vector<uint64_t>& c = other.counts();
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += c[i];
}

double AbsHistogram::Edge(uint32_t i) const { return static_cast<float>(static_cast<double>(amax_) * i / bins()); }

uint64_t AbsHistogram::total() const {
  const std::vector<uint64_t>& c = counts();
  return std::accumulate(c.begin(), c.end(), uint64_t{0});
}

namespace {
// A stretch of the stream and the maximum it was counted under in pass 0; r < 0: not counted (pass 1 counts it).
struct Run {
  uint64_t begin, end;
  float r;
};
// Appends [begin, end) under r, extending the last run when it is contiguous with the same r.
void AppendRun(std::vector<Run>& runs, uint64_t begin, uint64_t end, float r) {
  if (!runs.empty() && runs.back().end == begin && runs.back().r == r)
    runs.back().end = end;
  else
    runs.push_back({begin, end, r});
}
}  // namespace

struct SpeculativeAbsHistogram::State {
  struct Worker {
    std::unique_ptr<AbsHistogram> hist;  // the counts of this worker's pieces under `r` (pass 0), or under amax (1)
    float r = -1;
    std::vector<Run> runs;  // pass 0 records since the last Compact
  };
  uint32_t bins;
  std::vector<Worker> workers;
  // Running max|x| of the pieces scanned so far, as float bits (for non-negative floats the integer order is the
  // float order, so an atomic integer max is a float max).
  std::atomic<uint32_t> running{0};
  std::atomic<bool> stop{false};  // a non-finite sample (the caller fails the tensor) or too many records
  std::vector<Run> runs;          // folded records, in stream order
  bool second = false;
  std::unique_ptr<AbsHistogram> kept;  // pass 0 counts that stand
  std::vector<Run> recount;            // pass 1's stretches (sorted, disjoint)
  bool recount_all = false;
  std::atomic<uint64_t> recounted{0};
  State(uint32_t b, unsigned w) : bins(b), workers(std::max(1u, w)) {}

  float Running() const { return std::bit_cast<float>(running.load(std::memory_order_acquire)); }
  void RaiseRunning(float v) {
    const uint32_t bits = std::bit_cast<uint32_t>(v);
    uint32_t cur = running.load(std::memory_order_relaxed);
    while (bits > cur && !running.compare_exchange_weak(cur, bits, std::memory_order_acq_rel)) {
    }
  }
};

SpeculativeAbsHistogram::SpeculativeAbsHistogram(uint32_t bins, unsigned workers)
    : s_(std::make_unique<State>(bins, workers)) {}
SpeculativeAbsHistogram::~SpeculativeAbsHistogram() = default;
SpeculativeAbsHistogram::SpeculativeAbsHistogram(SpeculativeAbsHistogram&&) noexcept = default;
SpeculativeAbsHistogram& SpeculativeAbsHistogram::operator=(SpeculativeAbsHistogram&&) noexcept = default;

void SpeculativeAbsHistogram::AddFirst(uint64_t offset, const float* x, uint64_t n, unsigned worker,
                                       SampleRange* range) {
  State& s = *s_;
  if (n == 0) return;
  State::Worker& w = s.workers.at(worker);
  SampleRange local;
  float r = s.Running();
  const bool speculating = !s.stop.load(std::memory_order_relaxed);
  // Stopped, or nothing scanned yet: scan this piece first (then, in the second case, count it from cache under its
  // own max rather than under max 0).
  const bool scanned = !speculating || !(r > 0);
  if (scanned) {
    ScanRange(x, n, &local);
    if (local.finite) r = std::max(r, local.abs_max);
  }
  const bool count = speculating && (!scanned || local.finite);
  if (count) {
    if (!w.hist || w.r != r) {  // a new running max: the worker's earlier counts can no longer be the final ones
      w.hist = std::make_unique<AbsHistogram>(s.bins, r);
      w.r = r;
    }
    w.hist->Add(x, n, scanned ? nullptr : &local);  // the scan in the same pass (one read of the piece)
  }
  // r < 0: not counted, or not finite (the caller fails the tensor); pass 1 counts it. With recount_all it counts
  // everything and keeps no record.
  if (!s.recount_all) AppendRun(w.runs, offset, offset + n, count && local.finite ? r : -1.0f);
  if (!local.finite)
    s.stop = true;
  else if (speculating)
    s.RaiseRunning(local.abs_max);
  range->Merge(local);
}

void SpeculativeAbsHistogram::Compact() {
  State& s = *s_;
  if (s.second) return;
  std::vector<Run> fresh;
  for (State::Worker& w : s.workers) {
    fresh.insert(fresh.end(), w.runs.begin(), w.runs.end());
    w.runs.clear();
  }
  std::sort(fresh.begin(), fresh.end(), [](const Run& a, const Run& b) { return a.begin < b.begin; });
  // Counts under a maximum below the running one are final-wrong already: mark them, then merge neighbours.
  const float now = s.Running();
  std::vector<Run> folded;
  auto fold = [&](const Run& run) { AppendRun(folded, run.begin, run.end, run.r < now ? -1.0f : run.r); };
  for (const Run& run : s.runs) fold(run);
  for (const Run& run : fresh) fold(run);
  s.runs = std::move(folded);
  if (s.runs.size() > kMaxRuns) {
    // Pathological streams (a new maximum in piece after piece, interleaved): stop speculating; pass 1 counts all.
    s.stop = true;
    s.recount_all = true;
    s.runs.clear();
    for (State::Worker& w : s.workers) w.hist.reset();
  }
}

void SpeculativeAbsHistogram::BeginSecond(float amax) {
  State& s = *s_;
  Compact();
  s.second = true;
  s.kept = std::make_unique<AbsHistogram>(s.bins, amax);
  for (State::Worker& w : s.workers) {
    // Only counts made under the final maximum stand (the maximum never decreases, so r == amax is that test).
    if (w.hist && w.r == amax && !s.recount_all) s.kept->Merge(*w.hist);
    w.hist = std::make_unique<AbsHistogram>(s.bins, amax);
    w.r = amax;
  }
  if (!s.recount_all)
    for (const Run& run : s.runs)
      if (run.r != amax) AppendRun(s.recount, run.begin, run.end, -1.0f);
  s.runs.clear();
}

std::vector<std::pair<uint64_t, uint64_t>> SpeculativeAbsHistogram::Recount(uint64_t offset, uint64_t n) const {
  const State& s = *s_;
  std::vector<std::pair<uint64_t, uint64_t>> out;
  if (n == 0) return out;
  if (s.recount_all) return {{offset, offset + n}};
  // The recount stretches that meet [offset, offset + n): the first whose end is past offset, and on.
  auto it = std::upper_bound(s.recount.begin(), s.recount.end(), offset,
                             [](uint64_t o, const Run& run) { return o < run.end; });
  for (; it != s.recount.end() && it->begin < offset + n; ++it)
    out.emplace_back(std::max(it->begin, offset), std::min(it->end, offset + n));
  return out;
}

bool SpeculativeAbsHistogram::Covered(uint64_t offset, uint64_t n) const { return Recount(offset, n).empty(); }

void SpeculativeAbsHistogram::AddSecond(uint64_t offset, const float* x, uint64_t n, unsigned worker) {
  State& s = *s_;
  AbsHistogram& h = *s.workers.at(worker).hist;
  for (const auto& [lo, hi] : Recount(offset, n)) {
    h.Add(x + (lo - offset), hi - lo);
    s.recounted += hi - lo;
  }
}

AbsHistogram SpeculativeAbsHistogram::Finish() {
  State& s = *s_;
  AbsHistogram out = *s.kept;
  for (State::Worker& w : s.workers) out.Merge(*w.hist);
  return out;
}

uint64_t SpeculativeAbsHistogram::recounted() const { return s_->recounted; }
}  // namespace lmkit::quant
