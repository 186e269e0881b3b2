// What the operating system says about token files and this process's I/O: page-cache residency (mincore), eviction
// of one file's pages (posix_fadvise DONTNEED — never a global cache drop), warming, storage bytes read and page
// faults, file system type and read-ahead size.
//
// Contract: functions that take a path open it read-only and close it before returning. Counters never fail (zeros
// when /proc is missing). EvictFileRange and WarmFile return kIo naming the file on failure. An eviction is a request:
// file systems without a page cache of their own (tmpfs) or pages still mapped by a process stay resident; callers that
// depend on it check ResidentBytes afterwards. Thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "lmkit/common/status.h"

namespace lmkit::dataload {

struct IoCounters {
  uint64_t read_bytes = 0;    // /proc/self/io read_bytes: bytes this process caused to be fetched from storage
  uint64_t rchar = 0;         // /proc/self/io rchar: bytes passed through read()/pread() (page cache hits included)
  uint64_t minor_faults = 0;  // getrusage ru_minflt
  uint64_t major_faults = 0;  // getrusage ru_majflt (a fault that waited for storage)
};
IoCounters ReadIoCounters();

// Bytes of [0, file size) resident in the page cache, from mincore over a fresh read-only mapping.
Result<uint64_t> ResidentBytes(const std::string& path);

// posix_fadvise(POSIX_FADV_DONTNEED) on [offset, offset + length) of `fd` (length 0 = to the end).
Status EvictFileRange(int fd, uint64_t offset, uint64_t length, const std::string& path);
// Opens `path` and evicts it all.
Status EvictFile(const std::string& path);
// Reads the whole file once (1 MiB preads) so it is in the page cache.
Status WarmFile(const std::string& path);

struct FileSystemFacts {
  std::string fs_type;         // "ext4", "xfs", "tmpfs", "overlay", ... or "0x<magic>"
  std::string device;          // "major:minor" of the backing device
  int64_t read_ahead_kb = -1;  // from /sys/class/bdi/<device>/read_ahead_kb, -1 when unknown
  uint64_t block_size = 0;     // statfs f_bsize
  bool rotational_known = false;
  bool rotational = false;  // /sys/dev/block/<device>/queue/rotational (or the parent device's)
};
FileSystemFacts FileSystemFactsFor(const std::string& path);

uint64_t PageSize();

}  // namespace lmkit::dataload
