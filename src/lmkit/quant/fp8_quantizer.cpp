// Performance: a scalar loop per element (fp32 division, the E4M3 rounding in integer bit operations, fp64 metric
// sums), split over the pool by blocks of rows (row_stream.h's RowBlocks, as the INT8 driver's). FP8 output is not on a
// measured hot path yet; the INT8 quantizer's vector kernels (int8_kernels.cpp) are the model if it becomes one.
#include "lmkit/quant/fp8_quantizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "lmkit/formats/fp8.h"
#include "lmkit/quant/row_stream.h"

namespace lmkit::quant {
namespace {

constexpr uint64_t kRowsPerItem = 8;

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

Status Run(RowBlocks& blocks, io::DType dtype, uint64_t rows, uint64_t cols, const Fp8MatrixOptions& o,
           ThreadPool* pool, float* scales, ErrorStats* stats) {
  const bool tensor = o.granularity.kind == Granularity::Kind::kTensor;
  const uint64_t row_bytes = cols * io::DTypeSize(dtype);
  const unsigned workers = pool ? pool->size() : 1;
  const uint64_t items = (rows + kRowsPerItem - 1) / kRowsPerItem;
  std::vector<std::vector<float>> rowbuf(workers, std::vector<float>(cols));
  std::vector<ErrorStats> item_stats(items);
  std::vector<float> item_max(items, 0.0f);
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
      if (blocks.failed()) return;
      const uint64_t r0 = item * kRowsPerItem, n = std::min(rows, r0 + kRowsPerItem) - r0;
      const uint8_t* block = blocks.Read(item, r0, n, w);
      if (!block) return;
      for (uint64_t k = 0; k < n; ++k) {
        uint64_t bad = 0;
        const float m = AbsMax(row_values(block, k, w), cols, &bad);
        if (bad < cols) return blocks.Fail(item, non_finite(r0 + k, bad));
        item_max[item] = std::max(item_max[item], m);
      }
    });
    if (blocks.failed()) return blocks.error();
    float m = 0;
    uint64_t at = 0;
    for (uint64_t i = 0; i < items; ++i)
      if (item_max[i] > m) m = item_max[i], at = i * kRowsPerItem;
    tensor_scale = Fp8Scale(m, o.scale_dtype);
    if (!DequantizesFinite(tensor_scale, formats::kE4M3Max, o.scale_dtype)) return too_large(m, at);
    scales[0] = tensor_scale;
  }
  run([&](size_t item, unsigned w) {
    if (blocks.failed()) return;
    const uint64_t r0 = item * kRowsPerItem, n = std::min(rows, r0 + kRowsPerItem) - r0;
    const uint8_t* block = blocks.Read(item, r0, n, w);
    if (!block) return;
    // E4M3 bytes in the code block (RowBlocks holds int8_t codes; the bytes are the same).
    uint8_t* dst = reinterpret_cast<uint8_t*>(blocks.Codes(r0, w));
    for (uint64_t k = 0; k < n; ++k) {
      const float* row = row_values(block, k, w);
      float s = tensor_scale;
      if (!tensor) {
        uint64_t bad = 0;
        const float m = AbsMax(row, cols, &bad);
        if (bad < cols) return blocks.Fail(item, non_finite(r0 + k, bad));
        s = Fp8Scale(m, o.scale_dtype);
        if (!DequantizesFinite(s, formats::kE4M3Max, o.scale_dtype)) return blocks.Fail(item, too_large(m, r0 + k));
        scales[r0 + k] = s;
      }
      CodeSegment(row, cols, s, dst + k * cols, &item_stats[item]);
    }
    blocks.Write(item, r0, n, w);
  });
  if (blocks.failed()) return blocks.error();
  if (stats) {
    ErrorStats total;
    for (const ErrorStats& s : item_stats) total.Merge(s);
    *stats = total;
  }
  return Status::Ok();
}

Status CheckRequest(io::DType dtype, const Fp8MatrixOptions& o) {
  if (dtype != io::DType::kF32 && dtype != io::DType::kF16 && dtype != io::DType::kBF16)
    return Status::InvalidInput("", std::string("cannot quantize dtype ") + std::string(io::DTypeName(dtype)));
  if (o.granularity.kind == Granularity::Kind::kGroup)
    return Status::InvalidInput("", "FP8 weights take channel or tensor scales, not group");
  return Status::Ok();
}

}  // namespace

Status QuantizeMatrixFp8(const void* data, io::DType dtype, uint64_t rows, uint64_t cols,
                         const Fp8MatrixOptions& options, ThreadPool* pool, uint8_t* codes, float* scales,
                         ErrorStats* stats) {
  LMKIT_RETURN_IF_ERROR(CheckRequest(dtype, options));
  RowBlocks blocks(static_cast<const uint8_t*>(data), reinterpret_cast<int8_t*>(codes), cols * io::DTypeSize(dtype),
                   cols);
  return Run(blocks, dtype, rows, cols, options, pool, scales, stats);
}

Status QuantizeMatrixFp8(const RowStreams& streams, io::DType dtype, uint64_t rows, uint64_t cols,
                         const Fp8MatrixOptions& options, ThreadPool* pool, float* scales, ErrorStats* stats) {
  LMKIT_RETURN_IF_ERROR(CheckRequest(dtype, options));
  RowBlocks blocks(streams, cols * io::DTypeSize(dtype), cols, kRowsPerItem, pool ? pool->size() : 1);
  return Run(blocks, dtype, rows, cols, options, pool, scales, stats);
}

}  // namespace lmkit::quant
