// Atomic output files: a reader sees either the old file or the complete new one, never a half-written one.
//
// Contract: AtomicFile::Create opens a temporary file next to the destination (same directory, so rename(2) is atomic).
// Write() appends through a buffer; Commit() flushes, fsyncs, renames onto the destination and fsyncs the directory.
// If Commit() is not reached (an error, an early return, a destroyed object) the temporary file is removed and an
// existing destination file is untouched. A live temporary file is also removed when a terminating signal kills the
// process (interrupt_cleanup.h). An existing destination that is not a regular file (a device such as /dev/null, a
// FIFO) is written in place, without a temporary file or rename; a directory is kInvalidInput. Not thread-safe per
// object; distinct objects may be used from distinct threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit {

class AtomicFile {
 public:
  // Errors: kIo when the directory does not exist or is not writable (the subject is `path`).
  static Result<AtomicFile> Create(const std::string& path);

  AtomicFile() = default;
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // aborts when not committed

  Status Write(const void* data, size_t size);
  Status Write(std::string_view s) { return Write(s.data(), s.size()); }
  // Writes at an absolute offset of the temporary file (after flushing the buffer); for writers that fill a header
  // last. Does not move the append position.
  Status WriteAt(uint64_t offset, const void* data, size_t size);
  uint64_t bytes_written() const { return written_ + buffer_.size(); }
  // Parallel filling: flushes the buffer and hands out the next `size` bytes of the file as a region, returning its
  // offset; appends continue after it. The caller fills the region with WriteRegion before Commit (a part left unfilled
  // reads as zeros).
  Result<uint64_t> ReserveRegion(uint64_t size);
  // pwrite into a reserved region. The one method that may run on several threads at once (with itself only).
  Status WriteRegion(uint64_t offset, const void* data, size_t size) const;

  // Flushes and fsyncs the temporary file without renaming it: after Sync, Commit is only the rename. Errors (a full
  // disk) surface here, so a caller with several outputs can Sync them all before the first is renamed (CommitAll).
  Status Sync();
  Status Commit();
  void Abort();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }  // empty when written in place

 private:
  Status Flush();
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  int slot_ = -1;  // index in the interrupt-cleanup registry
  uint64_t written_ = 0;
  bool synced_ = false;  // fsynced by Sync; a later write clears it
  std::vector<uint8_t> buffer_;
};

// Writes `content` to `path` atomically.
Status WriteFileAtomically(const std::string& path, std::string_view content);

// Outputs that go together (a main output and its report): syncs every file first and renames them only when all
// synced, in the order given; on a sync error every file is aborted and no destination changes. Only a failing rename
// (after the first) can leave some renamed.
Status CommitAll(std::initializer_list<AtomicFile*> files);

}  // namespace lmkit
