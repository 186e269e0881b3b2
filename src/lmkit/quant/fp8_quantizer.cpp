// Performance: a scalar loop per element (fp32 division, the E4M3 rounding in integer bit operations, fp64 metric
// sums), split over the pool by blocks of rows. FP8 output is not on a measured hot path yet; the INT8 quantizer's
// vector kernels (int8_kernels.cpp) are the model if it becomes one.
#include "lmkit/quant/fp8_quantizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "lmkit/formats/fp8.h"

namespace lmkit::quant {
namespace {

constexpr uint64_t kRowsPerItem = 8;
constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();

// Codes x[0, n) with scale s (0: all codes 0) and adds the segment's error metrics to *st (fp64 sums in element
// order, so the result depends only on the row).
void CodeSegment(const float* x, uint64_t n, float s, uint8_t* out, ErrorStats* st) {
  double x2 = 0, e2 = 0, xx = 0, h2 = 0, em = st->max_abs_err;
  uint64_t clipped = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const float v = s > 0.0f ? x[i] / s : 0.0f;
    clipped += std::fabs(v) > formats::kE4M3Max ? 1 : 0;
    const uint8_t c = formats::E4M3FromF32(v);
    out[i] = c;
    const float xhat = formats::E4M3ToF32(c) * s;
    const double xv = x[i], e = xv - static_cast<double>(xhat);
    x2 += xv * xv;
    e2 += e * e;
    xx += xv * xhat;
    h2 += static_cast<double>(xhat) * xhat;
    em = std::max(em, std::fabs(e));
  }
  st->count += n;
  st->clipped += clipped;
  st->sum_x2 += x2;
  st->sum_err2 += e2;
  st->sum_x_xhat += xx;
  st->sum_xhat2 += h2;
  st->max_abs_err = em;
}

// absmax of x[0, n), and the index of the first non-finite value (n when none).
float AbsMax(const float* x, uint64_t n, uint64_t* bad) {
  float m = 0;
  *bad = n;
  for (uint64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      *bad = i;
      return 0;
    }
    m = std::max(m, std::fabs(x[i]));
  }
  return m;
}

Status Run(const uint8_t* src, uint8_t* codes, const RowStreams* streams, io::DType dtype, uint64_t rows, uint64_t cols,
           const Fp8MatrixOptions& o, ThreadPool* pool, float* scales, ErrorStats* stats) {
  if (dtype != io::DType::kF32 && dtype != io::DType::kF16 && dtype != io::DType::kBF16)
    return Status::InvalidInput("", std::string("cannot quantize dtype ") + std::string(io::DTypeName(dtype)));
  if (o.granularity.kind == Granularity::Kind::kGroup)
    return Status::InvalidInput("", "FP8 weights take channel or tensor scales, not group");
  const bool tensor = o.granularity.kind == Granularity::Kind::kTensor;
  const uint64_t row_bytes = cols * io::DTypeSize(dtype);
  const unsigned workers = pool ? pool->size() : 1;
  const uint64_t items = (rows + kRowsPerItem - 1) / kRowsPerItem;
  std::vector<std::vector<float>> rowbuf(workers, std::vector<float>(cols));
  std::vector<std::vector<uint8_t>> raw(streams ? workers : 0, std::vector<uint8_t>(kRowsPerItem * row_bytes));
  std::vector<std::vector<uint8_t>> out(streams ? workers : 0, std::vector<uint8_t>(kRowsPerItem * cols));
  std::vector<ErrorStats> item_stats(items);
  std::vector<float> item_max(items, 0.0f);
  // The first failure in item order wins, so the error does not depend on scheduling.
  std::mutex mu;
  uint64_t fail_item = kNone;
  Status failure;
  std::atomic<bool> failed{false};
  auto fail = [&](uint64_t item, Status st) {
    std::lock_guard<std::mutex> lock(mu);
    if (item < fail_item) {
      fail_item = item;
      failure = std::move(st);
    }
    failed = true;
  };
  auto fetch = [&](uint64_t item, uint64_t r0, uint64_t n, unsigned w) -> const uint8_t* {
    if (!streams) return src + r0 * row_bytes;
    Status st = streams->read(r0, n, raw[w].data());
    if (st.ok()) return raw[w].data();
    fail(item, std::move(st));
    return nullptr;
  };
  auto row_values = [&](const uint8_t* block, uint64_t k, unsigned w) {
    float* row = rowbuf[w].data();
    io::ConvertToF32(dtype, block + k * row_bytes, row, cols);
    return row;
  };
  auto non_finite = [&](uint64_t r, uint64_t c) {
    return Status::InvalidInput("", "non-finite value at [" + std::to_string(r) + ", " + std::to_string(c) + "]");
  };
  auto too_large = [&](float absmax, uint64_t r) {
    return Status::InvalidInput("",
                                fmt::format("|w| = {:g} in row {}: 448 times its FP8 scale is beyond the range of {}, "
                                            "so a loader would dequantize it to inf",
                                            absmax, r, io::DTypeName(o.scale_dtype)));
  };
  auto run = [&](const std::function<void(size_t, unsigned)>& fn) {
    if (pool)
      pool->ParallelFor(items, fn);
    else
      for (uint64_t i = 0; i < items; ++i) fn(i, 0);
  };

  float tensor_scale = 0;
  if (tensor) {
    run([&](size_t item, unsigned w) {
      if (failed.load(std::memory_order_relaxed)) return;
      const uint64_t r0 = item * kRowsPerItem, n = std::min(rows, r0 + kRowsPerItem) - r0;
      const uint8_t* block = fetch(item, r0, n, w);
      if (!block) return;
      for (uint64_t k = 0; k < n; ++k) {
        uint64_t bad = 0;
        const float m = AbsMax(row_values(block, k, w), cols, &bad);
        if (bad < cols) return fail(item, non_finite(r0 + k, bad));
        item_max[item] = std::max(item_max[item], m);
      }
    });
    if (failed) return failure;
    float m = 0;
    uint64_t at = 0;
    for (uint64_t i = 0; i < items; ++i)
      if (item_max[i] > m) m = item_max[i], at = i * kRowsPerItem;
    tensor_scale = Fp8Scale(m, o.scale_dtype);
    if (!DequantizesFinite(tensor_scale, formats::kE4M3Max, o.scale_dtype)) return too_large(m, at);
    scales[0] = tensor_scale;
  }
  run([&](size_t item, unsigned w) {
    if (failed.load(std::memory_order_relaxed)) return;
    const uint64_t r0 = item * kRowsPerItem, n = std::min(rows, r0 + kRowsPerItem) - r0;
    const uint8_t* block = fetch(item, r0, n, w);
    if (!block) return;
    uint8_t* dst = streams ? out[w].data() : codes + r0 * cols;
    for (uint64_t k = 0; k < n; ++k) {
      const float* row = row_values(block, k, w);
      float s = tensor_scale;
      if (!tensor) {
        uint64_t bad = 0;
        const float m = AbsMax(row, cols, &bad);
        if (bad < cols) return fail(item, non_finite(r0 + k, bad));
        s = Fp8Scale(m, o.scale_dtype);
        if (!DequantizesFinite(s, formats::kE4M3Max, o.scale_dtype)) return fail(item, too_large(m, r0 + k));
        scales[r0 + k] = s;
      }
      CodeSegment(row, cols, s, dst + k * cols, &item_stats[item]);
    }
    if (streams) {
      Status st = streams->write(r0, n, reinterpret_cast<const int8_t*>(dst));
      if (!st.ok()) fail(item, std::move(st));
    }
  });
  if (failed) return failure;
  if (stats) {
    ErrorStats total;
    for (const ErrorStats& s : item_stats) total.Merge(s);
    *stats = total;
  }
  return Status::Ok();
}

}  // namespace

Status QuantizeMatrixFp8(const void* data, io::DType dtype, uint64_t rows, uint64_t cols,
                         const Fp8MatrixOptions& options, ThreadPool* pool, uint8_t* codes, float* scales,
                         ErrorStats* stats) {
  return Run(static_cast<const uint8_t*>(data), codes, nullptr, dtype, rows, cols, options, pool, scales, stats);
}

Status QuantizeMatrixFp8(const RowStreams& streams, io::DType dtype, uint64_t rows, uint64_t cols,
                         const Fp8MatrixOptions& options, ThreadPool* pool, float* scales, ErrorStats* stats) {
  return Run(nullptr, nullptr, &streams, dtype, rows, cols, options, pool, scales, stats);
}

}  // namespace lmkit::quant
