// Reading token windows from shards three ways — the "gather" stage of a dataload run.
//
// With random advice the pipeline also calls Prefetch for every window of a batch before reading any: the B reads are
// then in flight together (queue depth B instead of 1), which is what makes a cold cache usable.
//
//   mmap   one read-only mapping per shard; a window is a memcpy from it (page faults do the I/O). Advice normal lets
//          the kernel read around each fault (read_ahead_kb); random (MADV_RANDOM) reads only the faulting page.
//   pread  one pread(2) per window into the caller's buffer. Advice random sets POSIX_FADV_RANDOM (no read-ahead).
//   direct O_DIRECT pread of the page-aligned span around the window into an aligned scratch buffer, then a copy:
//          bypasses the page cache entirely (every read goes to storage; nothing is cached or evicted).
//
// Contract: Open keeps one descriptor (and for mmap one mapping) per shard until the reader is destroyed. Read is
// thread-safe given one ReaderScratch per thread. Errors name the file: kIo for a failed read or a short file,
// kUnsupported when the file system refuses O_DIRECT. Names of the enums: knobs.h. Evict* only request eviction (see
// os_facts.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/dataload/token_shards.h"

namespace lmkit::dataload {

enum class Access { kMmap, kPread, kDirect };
enum class Advice { kNormal, kRandom };

// Per-thread scratch for O_DIRECT (page-aligned, grows on demand). Unused by mmap and pread.
class ReaderScratch {
 public:
  ReaderScratch() = default;
  ~ReaderScratch();
  ReaderScratch(const ReaderScratch&) = delete;
  ReaderScratch& operator=(const ReaderScratch&) = delete;
  uint8_t* Reserve(size_t bytes);

 private:
  uint8_t* p_ = nullptr;
  size_t cap_ = 0;
};

class TokenReader {
 public:
  static Result<std::unique_ptr<TokenReader>> Open(const std::vector<TokenShard>& shards, Access access, Advice advice);
  ~TokenReader();
  TokenReader(const TokenReader&) = delete;
  TokenReader& operator=(const TokenReader&) = delete;

  // Copies tokens [start, start + count) of `shard` (token_bytes each) to dst.
  Status Read(uint32_t shard, uint64_t start, uint64_t count, uint8_t* dst, ReaderScratch* scratch) const;
  // Makes the bytes of tokens [start, start + count) plus `margin_bytes` on each side cold: drops this reader's
  // page-table entries for them (mmap) and asks the kernel to evict them from the page cache.
  Status EvictRange(uint32_t shard, uint64_t start, uint64_t count, uint64_t margin_bytes) const;
  Status EvictAll() const;
  // Asks the kernel to start reading tokens [start, start + count) now (POSIX_FADV_WILLNEED: asynchronous, returns
  // before the data arrives), so a batch's windows are fetched in parallel rather than one read at a time. A hint:
  // errors are ignored. No-op for direct access.
  void Prefetch(uint32_t shard, uint64_t start, uint64_t count) const;

  const std::vector<TokenShard>& shards() const { return shards_; }
  Access access() const { return access_; }

 private:
  TokenReader() = default;
  std::vector<TokenShard> shards_;
  Access access_ = Access::kMmap;
  std::vector<int> fds_;         // buffered descriptors (pread, eviction)
  std::vector<int> direct_fds_;  // O_DIRECT descriptors (direct only)
  std::vector<uint8_t*> maps_;   // whole-file mappings (mmap only)
};

}  // namespace lmkit::dataload
