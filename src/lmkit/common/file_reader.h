// Positional reads (pread) of a regular file, for inputs streamed once in large blocks.
//
// Why not MappedFile: on the build VM, touching a mapped 2 GB file page by page ran at 1.8 GB/s (one page fault per
// 4 KiB page, no huge pages for tmpfs or the page cache) while pread into a reused buffer ran at 8.6 GB/s on one
// thread and 13.7 GB/s on two (docs/benchmarks/quant.md). Mapping stays right for random access and small files.
//
// Contract: Open fails with kNotFound / kIo / kInvalidInput (not a regular file) naming the path. ReadAt fills all
// `size` bytes at `offset` or fails: kIo with the errno text, or kInvalidInput "truncated: ..." when the file ends
// first (it shrank after Open). Thread-safe: concurrent ReadAt calls share nothing but the descriptor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lmkit/common/status.h"

namespace lmkit {

// Opens `path` read-only and checks that it is a regular file: the descriptor (the caller closes it) and the size.
// Errors name the path: kNotFound, kIo with the errno text, kInvalidInput for a directory, a pipe, a device or a
// socket (a FIFO without a writer does not block the open). Shared by FileReader, MappedFile and ReadFileToString.
struct OpenedFile {
  int fd = -1;
  uint64_t size = 0;
};
Result<OpenedFile> OpenRegularFile(const std::string& path);

// The most a whole-file read takes by default: far above any tokenizer, config, index, plan or calibration table
// (the largest tokenizer.json files in use are ~35 MB), far below what a mistaken input could take from memory.
constexpr uint64_t kMaxWholeFileBytes = uint64_t{256} << 20;

// Reads a whole regular file, or standard input for "-", into memory (configs, JSON documents, vocabularies).
// Errors: as OpenRegularFile, and kInvalidInput when the content is larger than `max_bytes` ("<stdin>" names standard
// input, which may be a pipe or a file).
Result<std::string> ReadFileToString(const std::string& path, uint64_t max_bytes = kMaxWholeFileBytes);

class FileReader {
 public:
  static Result<FileReader> Open(const std::string& path);

  FileReader() = default;
  FileReader(FileReader&& other) noexcept;
  FileReader& operator=(FileReader&& other) noexcept;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  ~FileReader();

  Status ReadAt(uint64_t offset, void* dst, size_t size) const;
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace lmkit
