// The "convert" stage: B windows of T+1 stored tokens become the model's x and y (y = x shifted by one), widened to
// the dtype the training loop feeds the embedding (int64 like torch's LongTensor, int32, or uint16 kept narrow so the
// GPU widens it — 4× fewer host→device bytes than int64).
//
// Contract: `windows` holds B rows of T+1 tokens of `token_bytes` (2 or 4) each, row-major. x and y each receive B×T
// values of `out` (row r of x = window r tokens [0, T), row r of y = tokens [1, T+1)). When vocab_size > 0 every id of
// every window is checked: ids ≥ vocab_size are counted (the first one's position kept). kUint16 output from uint32
// tokens truncates; callers reject that combination (see CheckOutDtype). Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lmkit/common/status.h"

namespace lmkit::dataload {

enum class OutDtype { kInt64, kInt32, kUint16 };
const char* OutDtypeName(OutDtype d);
unsigned OutDtypeBytes(OutDtype d);
Status CheckOutDtype(OutDtype out, unsigned token_bytes);

struct VocabCheck {
  uint64_t ids_checked = 0;
  uint64_t out_of_range = 0;
  uint64_t max_id = 0;
  int64_t first_bad_row = -1;  // row and column in the window buffer of the first id ≥ vocab_size
  int64_t first_bad_col = -1;
  uint64_t first_bad_id = 0;
};

void ConvertWindows(const uint8_t* windows, unsigned token_bytes, size_t batch, size_t context, OutDtype out,
                    uint8_t* x, uint8_t* y, uint64_t vocab_size, VocabCheck* check);

}  // namespace lmkit::dataload
