// A pull-based stream of bytes: what the BPE trainer counts and the encoder encodes, whatever the input's format
// (a text file, a decompressed stream, the joined documents of a JSONL or Parquet corpus; io/corpus.h).
//
// Contract: Read fills up to `capacity` bytes and returns how many; 0 only at the end. It may return fewer than
// `capacity` before the end. Errors name the input (the Status subject). Not thread-safe; one reader at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lmkit/common/status.h"

namespace lmkit::io {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `capacity` bytes; 0 at the end.
  virtual Result<size_t> Read(char* dst, size_t capacity) = 0;
  // Total size when known up front (a regular file), else 0; for progress only.
  virtual uint64_t SizeHint() const { return 0; }
};

// Bytes of a string the caller keeps alive; `max_read` caps each Read (tests use it to cut reads short).
class StringSource final : public ByteSource {
 public:
  explicit StringSource(std::string_view s, size_t max_read = SIZE_MAX) : s_(s), max_read_(max_read) {}
  Result<size_t> Read(char* dst, size_t capacity) override;
  uint64_t SizeHint() const override { return s_.size(); }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  size_t max_read_;
};

// Reads a file descriptor (a file, a pipe, stdin) to its end; does not own it. Read fills `capacity` unless the end
// comes first.
class FdSource final : public ByteSource {
 public:
  FdSource(int fd, std::string subject, uint64_t size_hint = 0)
      : fd_(fd), subject_(std::move(subject)), size_hint_(size_hint) {}
  Result<size_t> Read(char* dst, size_t capacity) override;
  uint64_t SizeHint() const override { return size_hint_; }

 private:
  int fd_;
  std::string subject_;
  uint64_t size_hint_;
};

}  // namespace lmkit::io
