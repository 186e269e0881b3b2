#include "lmkit/quant/sample_range.h"

#include <algorithm>
#include <vector>

#include "lmkit/common/thread_pool.h"
#include "lmkit/quant/histogram_kernels.h"

namespace lmkit::quant {

void SampleRange::Merge(const SampleRange& o) {
  finite = finite && o.finite;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  abs_min = std::min(abs_min, o.abs_min);
  abs_max = std::max(abs_max, o.abs_max);
}

SampleRange ScanSamples(const float* x, uint64_t n, ThreadPool* pool) {
  constexpr uint64_t kItem = kernels::kParallelItem;
  const uint64_t items = (n + kItem - 1) / kItem;
  if (!pool || pool->size() == 1 || items <= 1) {
    SampleRange r;
    ScanRange(x, n, &r);
    return r;
  }
  std::vector<SampleRange> parts(pool->size());
  pool->ParallelFor(items,
                    [&](size_t c, unsigned w) { ScanRange(x + c * kItem, std::min(kItem, n - c * kItem), &parts[w]); });
  SampleRange r;
  for (const SampleRange& p : parts) r.Merge(p);
  return r;
}

}  // namespace lmkit::quant
