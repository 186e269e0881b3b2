// The rows of a matrix being quantized, in blocks of consecutive rows (work items): read in place from memory, or read
// through RowStreams into per-worker buffers with the codes written back the same way. Shared by the quantizers'
// threaded drivers (quantizer.h, fp8_quantizer.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit::quant {

// Streaming I/O for the quantizers. `read` fills `dst` with the raw bytes of rows [first, first + count)
// (count * cols * dtype size bytes); `write` receives the codes of rows [first, first + count) (count * cols bytes).
// Both are called from pool workers at the same time for disjoint row ranges, in no particular order, so they must be
// thread-safe; a non-ok status stops the work.
struct RowStreams {
  std::function<Status(uint64_t first, uint64_t count, uint8_t* dst)> read;
  std::function<Status(uint64_t first, uint64_t count, const int8_t* codes)> write;
};

// Work items of `item_rows` rows over `workers` workers (worker ids 0 .. workers - 1, as ThreadPool::ParallelFor
// numbers them). In memory, Read and Codes point into the caller's arrays and Write does nothing; streamed, they use
// one input and one code buffer per worker (8-byte aligned, so F32 rows can be used in place). The first failed stream
// call in item order is kept, so the error does not depend on scheduling; after a failure no more reads are made.
// Thread-safe for distinct workers.
class RowBlocks {
 public:
  // Rows at `src`, codes to `codes` (rows * cols bytes).
  RowBlocks(const uint8_t* src, int8_t* codes, uint64_t row_bytes, uint64_t cols);
  // Rows through `streams` (which must outlive this).
  RowBlocks(const RowStreams& streams, uint64_t row_bytes, uint64_t cols, uint64_t item_rows, unsigned workers);

  bool streamed() const { return streams_ != nullptr; }
  // The raw bytes of rows [r0, r0 + n) of item `item` for worker w, or nullptr once a stream call failed.
  const uint8_t* Read(uint64_t item, uint64_t r0, uint64_t n, unsigned w);
  // Where worker w puts the codes of the rows starting at r0.
  int8_t* Codes(uint64_t r0, unsigned w);
  // Hands the codes of rows [r0, r0 + n) (at Codes(r0, w)) to the stream; nothing in memory.
  void Write(uint64_t item, uint64_t r0, uint64_t n, unsigned w);
  // Keeps `st` as the failure of item `item` unless an earlier item failed.
  void Fail(uint64_t item, Status st);
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  // The first failure in item order (Ok when none).
  const Status& error() const { return error_; }
  // The raw bytes of row r alone, read into `buf` when streamed (for error messages, after the work).
  Result<const uint8_t*> ReadRow(uint64_t r, std::vector<uint64_t>* buf);

 private:
  const uint8_t* src_ = nullptr;
  int8_t* codes_ = nullptr;
  const RowStreams* streams_ = nullptr;
  uint64_t row_bytes_, cols_;
  std::vector<std::vector<uint64_t>> raw_;
  std::vector<std::vector<int8_t>> code_blocks_;
  std::mutex mu_;
  uint64_t error_item_ = std::numeric_limits<uint64_t>::max();
  Status error_;
  std::atomic<bool> failed_{false};
};

}  // namespace lmkit::quant
