// The INT8 quantizer's threaded driver: work items of rows over the pool, the per-tensor absmax pass, the scale of each
// row or group, the first bad row's error and the stats reduced in a fixed order. What the codes and scales are is
// format_ref.h's; how a segment is coded fast is int8_kernels.h's; how rows come and go is row_stream.h's.
//
// Performance notes (docs/benchmarks/quant.md; the kernels' own notes are in int8_kernels.cpp):
// - Work items are blocks of rows (kRowsPerItem) so the pool's per-item overhead is negligible even for small rows.
// - Streamed items are >= 128 KiB of input, so the two system calls per item stay a small share of the time; larger
//   items were slower (per-worker blocks fall out of L2: 256 KiB +15%, 1 MiB +100% on the build VM). In memory, up to
//   4 groups per item while every worker still gets >= 16 items: an item's first row is not prefetched (the coding
//   loop prefetches the next row of its own item), and 8-row items paid that stall often enough to cost 5-10%.
#include "lmkit/quant/quantizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>

#include "lmkit/quant/int8_kernels.h"

namespace lmkit::quant {
namespace {

using formats::Int8Range;
using int8_kernels::RowAcc;

// Statistics are kept per group of kRowsPerItem rows and reduced in group order whatever the work-item size, so the
// in-memory and streamed variants give the same stats bit for bit.
constexpr uint64_t kRowsPerItem = 8;
constexpr uint64_t kNoRow = std::numeric_limits<uint64_t>::max();

Status CheckShape(io::DType dtype, uint64_t cols, const Granularity& g) {
  if (dtype != io::DType::kF32 && dtype != io::DType::kF16 && dtype != io::DType::kBF16)
    return Status::InvalidInput("", std::string("cannot quantize dtype ") + std::string(io::DTypeName(dtype)));
  if (g.kind == Granularity::Kind::kGroup && (g.group_size == 0 || cols % g.group_size != 0))
    return Status::InvalidInput(
        "", "group size " + std::to_string(g.group_size) + " does not divide the " + std::to_string(cols) + " columns");
  return Status::Ok();
}

// Rows per work item (see the performance notes).
uint64_t ItemRows(bool streamed, uint64_t rows, uint64_t row_bytes, unsigned workers) {
  if (streamed)
    return kRowsPerItem * std::max<uint64_t>(1, (128u << 10) / std::max<uint64_t>(1, kRowsPerItem * row_bytes));
  return kRowsPerItem * std::clamp<uint64_t>(rows / (kRowsPerItem * workers * 16), 1, 4);
}

// The error for bad row r (a non-finite value, or a weight whose code lo times its scale overflows the scale dtype).
Status BadRowError(RowBlocks& blocks, uint64_t r, io::DType dtype, uint64_t cols, Int8Range range,
                   io::DType scale_dtype) {
  std::vector<uint64_t> one;
  LMKIT_ASSIGN_OR_RETURN(const uint8_t* bytes, blocks.ReadRow(r, &one));
  std::vector<float> buf(cols);
  const float* row = int8_kernels::LoadRow(bytes, dtype, cols, buf.data());
  if (const uint64_t c = int8_kernels::FirstNonFinite(row, cols); c < cols)
    return Status::InvalidInput("", "non-finite value at [" + std::to_string(r) + ", " + std::to_string(c) + "]");
  uint64_t c = 0;
  for (uint64_t i = 1; i < cols; ++i)
    if (std::fabs(row[i]) > std::fabs(row[c])) c = i;
  return Status::InvalidInput("",
                              fmt::format("|w| = {:g} at [{}, {}]: the code {:g} times its scale is beyond the range "
                                          "of {}, so a loader would dequantize it to inf",
                                          std::fabs(row[c]), r, c, range.lo, io::DTypeName(scale_dtype)));
}

// One QuantizeMatrix call: pass 1 (per tensor only) finds the absmax, pass 2 codes the rows item by item. A bad row
// (non-finite, or a scale the loaders would overflow: the loaders dequantize code_max * scale in the scale's dtype)
// stops the coding; the lowest one found is reported.
class Int8Driver {
 public:
  Int8Driver(RowBlocks& blocks, io::DType dtype, uint64_t rows, uint64_t cols, const QuantizeMatrixOptions& options,
             ThreadPool* pool, float* scales)
      : blocks_(blocks),
        dtype_(dtype),
        rows_(rows),
        cols_(cols),
        options_(options),
        g_(options.granularity),
        range_(formats::RangeOf(options.convention)),
        code_max_(-range_.lo),
        row_bytes_(cols * io::DTypeSize(dtype)),
        pool_(pool),
        workers_(pool ? pool->size() : 1),
        item_rows_(ItemRows(blocks.streamed(), rows, row_bytes_, workers_)),
        items_((rows + item_rows_ - 1) / item_rows_),
        scales_(scales),
        buffers_(workers_, std::vector<float>(cols)),
        group_stats_((rows + kRowsPerItem - 1) / kRowsPerItem) {}

  Status Run(ErrorStats* stats) {
    if (g_.kind == Granularity::Kind::kTensor) {
      FindTensorScale();
      if (blocks_.failed()) return blocks_.error();
    }
    if (bad_row_.load() == kNoRow) {
      ForEachItem([this](size_t item, unsigned w) { CodeItem(item, w); });
      if (blocks_.failed()) return blocks_.error();
    }
    if (const uint64_t r = bad_row_.load(); r != kNoRow)
      return BadRowError(blocks_, r, dtype_, cols_, range_, options_.scale_dtype);
    if (stats) {
      ErrorStats total;
      for (const ErrorStats& s : group_stats_) total.Merge(s);
      *stats = total;
    }
    return Status::Ok();
  }

 private:
  template <typename Fn>
  void ForEachItem(Fn&& fn) {
    if (pool_)
      pool_->ParallelFor(items_, fn);
    else
      for (uint64_t i = 0; i < items_; ++i) fn(i, 0);
  }

  uint64_t ItemBegin(uint64_t item) const { return item * item_rows_; }
  uint64_t ItemSize(uint64_t item) const { return std::min(rows_, ItemBegin(item) + item_rows_) - ItemBegin(item); }

  void NoteBad(uint64_t r) {
    uint64_t cur = bad_row_.load();
    while (r < cur && !bad_row_.compare_exchange_weak(cur, r)) {
    }
  }

  // Pass 1, per tensor: the absmax of everything and the tensor's scale (scales_[0] unless a row is bad).
  void FindTensorScale() {
    std::vector<float> item_max(items_, 0.0f);
    std::vector<uint64_t> item_max_row(items_, 0);
    ForEachItem([&](size_t item, unsigned w) {
      const uint64_t r0 = ItemBegin(item), n = ItemSize(item);
      const uint8_t* block = blocks_.Read(item, r0, n, w);
      if (!block) return;
      for (uint64_t k = 0; k < n; ++k) {
        bool finite = true;
        float m = 0;
        int8_kernels::LoadRow(block + k * row_bytes_, dtype_, cols_, buffers_[w].data(), &m, &finite);
        if (m > item_max[item]) item_max[item] = m, item_max_row[item] = r0 + k;
        if (!finite) NoteBad(r0 + k);
      }
    });
    if (blocks_.failed()) return;
    uint64_t max_row = 0;
    for (uint64_t i = 0; i < items_; ++i)
      if (item_max[i] > tensor_max_) tensor_max_ = item_max[i], max_row = item_max_row[i];
    tensor_scale_ = StoredScale(tensor_max_, options_.convention, options_.scale_dtype);
    if (!DequantizesFinite(tensor_scale_, code_max_, options_.scale_dtype)) NoteBad(max_row);
    if (bad_row_.load() == kNoRow) scales_[0] = tensor_scale_;
  }

  // Pass 2: the rows of one item, their codes handed to the stream when all of them are good.
  void CodeItem(uint64_t item, unsigned w) {
    const uint64_t r0 = ItemBegin(item), n = ItemSize(item);
    const uint8_t* block = blocks_.Read(item, r0, n, w);
    if (!block) return;
    int8_t* out_block = blocks_.Codes(r0, w);
    bool all_good = true;
    for (uint64_t k = 0; k < n; ++k) {
      // The next row of the item is prefetched while this one is coded (read in place or widened, a row is first
      // touched by this loop, and a core's hardware prefetcher alone left it waiting on memory: F32 rows 1.4x).
      const uint8_t* next = k + 1 < n ? block + (k + 1) * row_bytes_ : nullptr;
      if (!CodeRow(r0 + k, block + k * row_bytes_, next, out_block + k * cols_, buffers_[w].data())) {
        NoteBad(r0 + k);
        all_good = false;
      }
    }
    if (all_good) blocks_.Write(item, r0, n, w);
  }

  // Codes row r (raw bytes at `src`) into `out` and adds its stats to its group's; false for a bad row.
  bool CodeRow(uint64_t r, const uint8_t* src, const uint8_t* next, int8_t* out, float* buf) {
    bool finite = true;
    float row_max = 0;
    // Per-channel rows get their absmax as they are loaded (widened rows: in the same loop).
    const float* row = int8_kernels::LoadRow(src, dtype_, cols_, buf,
                                             g_.kind == Granularity::Kind::kChannel ? &row_max : nullptr, &finite);
    RowAcc acc;
    const uint64_t next_bytes = next ? row_bytes_ : 0;
    int8_t* next_out = next ? out + cols_ : nullptr;
    switch (g_.kind) {
      case Granularity::Kind::kTensor:
        int8_kernels::CodeSegment(row, cols_, tensor_scale_, tensor_max_, range_, out, acc, next, next_bytes, next_out);
        break;
      case Granularity::Kind::kChannel: {
        if (!finite) return false;
        const float s = StoredScale(row_max, options_.convention, options_.scale_dtype);
        if (!DequantizesFinite(s, code_max_, options_.scale_dtype)) return false;
        scales_[r] = s;
        int8_kernels::CodeSegment(row, cols_, s, row_max, range_, out, acc, next, next_bytes, next_out);
        break;
      }
      case Granularity::Kind::kGroup:
        if (!CodeGroups(r, row, out, acc)) return false;
        break;
    }
    int8_kernels::FinishRow(acc, cols_, &group_stats_[r / kRowsPerItem]);
    return true;
  }

  // The groups of row r, each with its own scale; false at the first bad group.
  bool CodeGroups(uint64_t r, const float* row, int8_t* out, RowAcc& acc) {
    const uint64_t gs = g_.group_size, ng = cols_ / gs;
    for (uint64_t k = 0; k < ng; ++k) {
      bool finite = true;
      const float m = int8_kernels::AbsMax(row + k * gs, gs, &finite);
      if (!finite) return false;
      const float s = StoredScale(m, options_.convention, options_.scale_dtype);
      if (!DequantizesFinite(s, code_max_, options_.scale_dtype)) return false;
      scales_[r * ng + k] = s;
      int8_kernels::CodeSegment(row + k * gs, gs, s, m, range_, out + k * gs, acc);
    }
    return true;
  }

  RowBlocks& blocks_;
  const io::DType dtype_;
  const uint64_t rows_, cols_;
  const QuantizeMatrixOptions& options_;
  const Granularity& g_;
  const Int8Range range_;
  const float code_max_;
  const uint64_t row_bytes_;
  ThreadPool* const pool_;
  const unsigned workers_;
  const uint64_t item_rows_, items_;
  float* const scales_;
  std::vector<std::vector<float>> buffers_;  // one fp32 row per worker
  std::vector<ErrorStats> group_stats_;      // per kRowsPerItem rows
  std::atomic<uint64_t> bad_row_{kNoRow};
  float tensor_scale_ = 0, tensor_max_ = 0;
};

}  // namespace

void ForceBaselineKernelsForTesting(bool on) { int8_kernels::g_force_baseline = on; }
void ForceAvx2KernelsForTesting(bool on) { int8_kernels::g_force_avx2 = on; }

Status QuantizeMatrix(const void* data, io::DType dtype, uint64_t rows, uint64_t cols,
                      const QuantizeMatrixOptions& options, ThreadPool* pool, int8_t* codes, float* scales,
                      ErrorStats* stats) {
  LMKIT_RETURN_IF_ERROR(CheckShape(dtype, cols, options.granularity));
  RowBlocks blocks(static_cast<const uint8_t*>(data), codes, cols * io::DTypeSize(dtype), cols);
  return Int8Driver(blocks, dtype, rows, cols, options, pool, scales).Run(stats);
}

Status QuantizeMatrix(const RowStreams& streams, io::DType dtype, uint64_t rows, uint64_t cols,
                      const QuantizeMatrixOptions& options, ThreadPool* pool, float* scales, ErrorStats* stats) {
  LMKIT_RETURN_IF_ERROR(CheckShape(dtype, cols, options.granularity));
  const uint64_t row_bytes = cols * io::DTypeSize(dtype);
  const unsigned workers = pool ? pool->size() : 1;
  RowBlocks blocks(streams, row_bytes, cols, ItemRows(true, rows, row_bytes, workers), workers);
  return Int8Driver(blocks, dtype, rows, cols, options, pool, scales).Run(stats);
}

void DequantizeMatrix(const int8_t* codes, const float* scales, uint64_t rows, uint64_t cols,
                      const Granularity& granularity, float* out) {
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) {
      float s = 0;
      switch (granularity.kind) {
        case Granularity::Kind::kChannel:
          s = scales[r];
          break;
        case Granularity::Kind::kTensor:
          s = scales[0];
          break;
        case Granularity::Kind::kGroup:
          s = scales[r * (cols / granularity.group_size) + c / granularity.group_size];
          break;
      }
      out[r * cols + c] = static_cast<float>(codes[r * cols + c]) * s;
    }
}

}  // namespace lmkit::quant
