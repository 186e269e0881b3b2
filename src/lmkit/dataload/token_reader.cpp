#include "lmkit/dataload/token_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "lmkit/dataload/os_facts.h"

namespace lmkit::dataload {
namespace {

// O_DIRECT needs offsets, lengths and buffers aligned to the logical block size; 4 KiB covers every common device.
constexpr uint64_t kDirectAlign = 4096;

Status PreadFull(int fd, uint8_t* dst, uint64_t length, uint64_t offset, const std::string& path, uint64_t* got) {
  uint64_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(fd, dst + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(path, "read failed at byte " + std::to_string(offset + done), errno);
    }
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
  }
  if (got != nullptr) *got = done;
  return Status::Ok();
}

}  // namespace

ReaderScratch::~ReaderScratch() { std::free(p_); }

uint8_t* ReaderScratch::Reserve(size_t bytes) {
  if (bytes <= cap_) return p_;
  std::free(p_);
  p_ = nullptr;
  cap_ = 0;
  size_t rounded = (bytes + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
  void* p = nullptr;
  if (::posix_memalign(&p, kDirectAlign, rounded) != 0) return nullptr;
  p_ = static_cast<uint8_t*>(p);
  cap_ = rounded;
  return p_;
}

Result<std::unique_ptr<TokenReader>> TokenReader::Open(const std::vector<TokenShard>& shards, Access access,
                                                       Advice advice) {
  std::unique_ptr<TokenReader> r(new TokenReader());
  r->shards_ = shards;
  r->access_ = access;
  for (const auto& s : shards) {
    int fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(s.path, "cannot open", errno);
    r->fds_.push_back(fd);
    if (access == Access::kPread) {
      (void)::posix_fadvise(fd, 0, 0, advice == Advice::kRandom ? POSIX_FADV_RANDOM : POSIX_FADV_NORMAL);
    }
    if (access == Access::kDirect) {
      int dfd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
      if (dfd < 0) {
        int e = errno;
        if (e == EINVAL)
          return Status::Unsupported(s.path,
                                     "the file system does not support O_DIRECT (" + Field("access") + " direct)");
        return Status::FromErrno(s.path, "cannot open with O_DIRECT", e);
      }
      r->direct_fds_.push_back(dfd);
    }
    if (access == Access::kMmap) {
      uint8_t* p = nullptr;
      if (s.file_bytes > 0) {
        void* m = ::mmap(nullptr, s.file_bytes, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) return Status::FromErrno(s.path, "cannot mmap", errno);
        p = static_cast<uint8_t*>(m);
        (void)::madvise(m, s.file_bytes, advice == Advice::kRandom ? MADV_RANDOM : MADV_NORMAL);
      }
      r->maps_.push_back(p);
    }
  }
  return r;
}

TokenReader::~TokenReader() {
  for (size_t i = 0; i < maps_.size(); ++i) {
    if (maps_[i] != nullptr) ::munmap(maps_[i], shards_[i].file_bytes);
  }
  for (int fd : fds_) ::close(fd);
  for (int fd : direct_fds_) ::close(fd);
}

Status TokenReader::Read(uint32_t shard, uint64_t start, uint64_t count, uint8_t* dst, ReaderScratch* scratch) const {
  const TokenShard& s = shards_[shard];
  if (start + count > s.tokens) return Status::Internal("window past the end of " + s.path);
  const uint64_t offset = s.data_offset + start * s.token_bytes;
  const uint64_t length = count * s.token_bytes;
  switch (access_) {
    case Access::kMmap:
      std::memcpy(dst, maps_[shard] + offset, length);
      return Status::Ok();
    case Access::kPread: {
      uint64_t got = 0;
      LMKIT_RETURN_IF_ERROR(PreadFull(fds_[shard], dst, length, offset, s.path, &got));
      if (got != length) return Status::Io(s.path, "file shrank while reading (short read)");
      return Status::Ok();
    }
    case Access::kDirect: {
      const uint64_t begin = offset / kDirectAlign * kDirectAlign;
      const uint64_t end = (offset + length + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
      uint8_t* buf = scratch->Reserve(end - begin);
      if (buf == nullptr) return Status::Io(s.path, "out of memory for an O_DIRECT buffer");
      uint64_t got = 0;
      LMKIT_RETURN_IF_ERROR(PreadFull(direct_fds_[shard], buf, end - begin, begin, s.path, &got));
      if (got < offset + length - begin) return Status::Io(s.path, "file shrank while reading (short read)");
      std::memcpy(dst, buf + (offset - begin), length);
      return Status::Ok();
    }
  }
  return Status::Internal("unknown access mode");
}

Status TokenReader::EvictRange(uint32_t shard, uint64_t start, uint64_t count, uint64_t margin_bytes) const {
  const TokenShard& s = shards_[shard];
  const uint64_t page = PageSize();
  uint64_t begin = s.data_offset + start * s.token_bytes;
  uint64_t end = begin + count * s.token_bytes + margin_bytes;
  begin = begin > margin_bytes ? begin - margin_bytes : 0;
  if (end > s.file_bytes) end = s.file_bytes;
  begin = begin / page * page;
  end = (end + page - 1) / page * page;
  if (!maps_.empty() && maps_[shard] != nullptr) {
    // Pages mapped by this process are skipped by DONTNEED; drop our page-table entries first.
    uint64_t map_end = end > s.file_bytes ? (s.file_bytes + page - 1) / page * page : end;
    (void)::madvise(maps_[shard] + begin, map_end - begin, MADV_DONTNEED);
  }
  return EvictFileRange(fds_[shard], begin, end - begin, s.path);
}

void TokenReader::Prefetch(uint32_t shard, uint64_t start, uint64_t count) const {
  if (access_ == Access::kDirect) return;
  const TokenShard& s = shards_[shard];
  const uint64_t offset = s.data_offset + start * s.token_bytes;
  // WILLNEED on the file works for mmap too: the pages it reads are the ones the mapping faults in.
  (void)::posix_fadvise(fds_[shard], static_cast<off_t>(offset), static_cast<off_t>(count * s.token_bytes),
                        POSIX_FADV_WILLNEED);
}

Status TokenReader::EvictAll() const {
  for (uint32_t i = 0; i < shards_.size(); ++i) {
    if (!maps_.empty() && maps_[i] != nullptr) (void)::madvise(maps_[i], shards_[i].file_bytes, MADV_DONTNEED);
    LMKIT_RETURN_IF_ERROR(EvictFileRange(fds_[i], 0, 0, shards_[i].path));
  }
  return Status::Ok();
}

}  // namespace lmkit::dataload
