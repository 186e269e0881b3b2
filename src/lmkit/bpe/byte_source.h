// Where EncodeStream reads its input: a ByteSource yields bytes in order until it is exhausted.
//
// Contract: Read(dst, capacity) copies up to `capacity` bytes and returns how many (0 at the end); errors are the
// source's, naming it. SizeHint() is the total when known (a regular file), else 0, for progress only. A source is
// used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lmkit/common/status.h"

namespace lmkit::bpe {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual Result<size_t> Read(char* dst, size_t capacity) = 0;
  virtual uint64_t SizeHint() const { return 0; }
};

// A string held by the caller; `max_read` caps each Read (tests use it to force short reads).
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

// Reads a file descriptor (a file, a pipe, stdin); does not own it. Errors: kIo naming `subject`.
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

}  // namespace lmkit::bpe
