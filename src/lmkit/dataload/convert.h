// The "convert" stage: B windows of T+1 stored tokens become the model's x and y (y = x shifted by one), widened to
// the dtype the training loop feeds the embedding (int64 like torch's LongTensor, int32, or uint16 kept narrow so the
// GPU widens it — 4× fewer host→device bytes than int64).
//
// Contract: `windows` holds B rows of T+1 tokens of `token_bytes` (2 or 4) each, row-major. x and y each receive B×T
// values of `out` (row r of x = window r tokens [0, T), row r of y = tokens [1, T+1)). When vocab_size > 0 every id of
// every window is checked: the offset of each id ≥ vocab_size is recorded, in order. kUint16 output from uint32 tokens
// truncates; callers reject that combination (see CheckOutDtype). Pure function; thread-safe. Names of OutDtype:
// knobs.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit::dataload {

enum class OutDtype { kInt64, kInt32, kUint16 };
unsigned OutDtypeBytes(OutDtype d);
// Errors: kInvalidArgument for uint16 output of uint32 tokens.
Status CheckOutDtype(OutDtype out, unsigned token_bytes);

// The vocabulary check of one batch.
struct VocabCheck {
  uint64_t ids_checked = 0;  // B × (T+1): every id of every window
  uint64_t max_id = 0;
  std::vector<uint64_t> bad;      // offsets r × (T+1) + t in the window buffer of the ids ≥ vocab_size, ascending
  std::vector<uint64_t> bad_ids;  // the ids at those offsets
};

void ConvertWindows(const uint8_t* windows, unsigned token_bytes, size_t batch, size_t context, OutDtype out,
                    uint8_t* x, uint8_t* y, uint64_t vocab_size, VocabCheck* check);

}  // namespace lmkit::dataload
