#include "lmkit/quant/row_stream.h"

namespace lmkit::quant {

RowBlocks::RowBlocks(const uint8_t* src, int8_t* codes, uint64_t row_bytes, uint64_t cols)
    : src_(src), codes_(codes), row_bytes_(row_bytes), cols_(cols) {}

RowBlocks::RowBlocks(const RowStreams& streams, uint64_t row_bytes, uint64_t cols, uint64_t item_rows, unsigned workers)
    : streams_(&streams),
      row_bytes_(row_bytes),
      cols_(cols),
      raw_(workers, std::vector<uint64_t>((item_rows * row_bytes + 7) / 8)),
      code_blocks_(workers, std::vector<int8_t>(item_rows * cols)) {}

const uint8_t* RowBlocks::Read(uint64_t item, uint64_t r0, uint64_t n, unsigned w) {
  if (!streams_) return src_ + r0 * row_bytes_;
  if (failed()) return nullptr;
  auto* dst = reinterpret_cast<uint8_t*>(raw_[w].data());
  Status st = streams_->read(r0, n, dst);
  if (st.ok()) return dst;
  Fail(item, std::move(st));
  return nullptr;
}

int8_t* RowBlocks::Codes(uint64_t r0, unsigned w) { return streams_ ? code_blocks_[w].data() : codes_ + r0 * cols_; }

void RowBlocks::Write(uint64_t item, uint64_t r0, uint64_t n, unsigned w) {
  if (!streams_ || failed()) return;
  Status st = streams_->write(r0, n, code_blocks_[w].data());
  if (!st.ok()) Fail(item, std::move(st));
}

void RowBlocks::Fail(uint64_t item, Status st) {
  std::lock_guard<std::mutex> lock(mu_);
  if (item < error_item_) {
    error_item_ = item;
    error_ = std::move(st);
  }
  failed_ = true;
}

Result<const uint8_t*> RowBlocks::ReadRow(uint64_t r, std::vector<uint64_t>* buf) {
  if (!streams_) return src_ + r * row_bytes_;
  buf->assign((row_bytes_ + 7) / 8, 0);
  auto* dst = reinterpret_cast<uint8_t*>(buf->data());
  LMKIT_RETURN_IF_ERROR(streams_->read(r, 1, dst));
  return static_cast<const uint8_t*>(dst);
}

}  // namespace lmkit::quant
