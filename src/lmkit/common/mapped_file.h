// Read-only memory-mapped files.
//
// Contract: MappedFile::Open maps a whole regular file read-only (MAP_PRIVATE). An empty file is valid: data() is
// nullptr and size() is 0. The mapping lives as long as the MappedFile (move-only); views handed out (spans, tensor
// data) must not outlive it. Thread-safe for concurrent reads. Errors: kNotFound (no such file), kIo (open/stat/mmap
// failed), kInvalidInput (not a regular file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lmkit/common/status.h"

namespace lmkit {

class MappedFile {
 public:
  enum class Advice { kNormal, kSequential, kRandom, kWillNeed, kDontNeed };

  static Result<MappedFile> Open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }
  const std::string& path() const { return path_; }

  // madvise over [offset, offset+length) (clamped to the file, page-aligned outward). Advice is a hint: errors are
  // ignored because the kernel is free to refuse it.
  void Advise(Advice advice, size_t offset = 0, size_t length = SIZE_MAX) const;

 private:
  void Reset();
  std::string path_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace lmkit
