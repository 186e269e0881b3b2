#include "lmkit/common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "lmkit/common/interrupt_cleanup.h"

namespace lmkit {
namespace {

std::string DirName(const std::string& path) {
  auto pos = path.rfind('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

constexpr size_t kBufferSize = 1 << 20;

}  // namespace

Result<AtomicFile> AtomicFile::Create(const std::string& path) {
  if (path.empty()) return Status::InvalidArgument("empty output path");
  std::string dir = DirName(path);
  std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  if (base.empty()) return Status::InvalidInput(path, "output path names a directory");
  // An existing destination that is not a regular file (/dev/null, /dev/full, /dev/stdout, a FIFO) must not be
  // replaced by rename(2): that swaps the device node or pipe for a plain file (run as root, /dev/null itself). Such a
  // destination is written in place instead; it holds no old content a half-written file could spoil, and write
  // errors (ENOSPC from /dev/full) still reach the caller.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return Status::InvalidInput(path, "is a directory");
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(path, "cannot open for writing", errno);
    AtomicFile f;
    f.path_ = path;
    f.fd_ = fd;
    f.buffer_.reserve(kBufferSize);
    return f;
  }
  std::string templ = (dir == "/" ? std::string("/") : dir + "/") + "." + base + ".tmp.XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  if (fd < 0) {
    int e = errno;
    return Status::FromErrno(path, "cannot create output in " + dir, e);
  }
  ::fchmod(fd, 0644);  // mkstemp makes 0600; outputs are ordinary files
  AtomicFile f;
  f.path_ = path;
  f.temp_path_ = buf.data();
  f.fd_ = fd;
  f.slot_ = RegisterCleanup(f.temp_path_);
  f.buffer_.reserve(kBufferSize);
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : path_(std::move(o.path_)),
      temp_path_(std::move(o.temp_path_)),
      fd_(o.fd_),
      slot_(o.slot_),
      written_(o.written_),
      synced_(o.synced_),
      buffer_(std::move(o.buffer_)) {
  o.fd_ = -1;
  o.slot_ = -1;
}

AtomicFile& AtomicFile::operator=(AtomicFile&& o) noexcept {
  if (this != &o) {
    Abort();
    path_ = std::move(o.path_);
    temp_path_ = std::move(o.temp_path_);
    fd_ = o.fd_;
    slot_ = o.slot_;
    written_ = o.written_;
    synced_ = o.synced_;
    buffer_ = std::move(o.buffer_);
    o.fd_ = -1;
    o.slot_ = -1;
  }
  return *this;
}

AtomicFile::~AtomicFile() { Abort(); }

Status AtomicFile::Flush() {
  size_t off = 0;
  while (off < buffer_.size()) {
    ssize_t n = ::write(fd_, buffer_.data() + off, buffer_.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(path_, "write failed", errno);
    }
    off += static_cast<size_t>(n);
  }
  written_ += buffer_.size();
  buffer_.clear();
  return Status::Ok();
}

Status AtomicFile::Write(const void* data, size_t size) {
  if (fd_ < 0) return Status::Internal("write to a closed AtomicFile");
  synced_ = false;
  const uint8_t* p = static_cast<const uint8_t*>(data);
  if (size >= kBufferSize) {
    LMKIT_RETURN_IF_ERROR(Flush());
    size_t off = 0;
    while (off < size) {
      ssize_t n = ::write(fd_, p + off, size - off);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(path_, "write failed", errno);
      }
      off += static_cast<size_t>(n);
    }
    written_ += size;
    return Status::Ok();
  }
  if (buffer_.size() + size > kBufferSize) LMKIT_RETURN_IF_ERROR(Flush());
  buffer_.insert(buffer_.end(), p, p + size);
  return Status::Ok();
}

Status AtomicFile::WriteAt(uint64_t offset, const void* data, size_t size) {
  if (fd_ < 0) return Status::Internal("write to a closed AtomicFile");
  synced_ = false;
  LMKIT_RETURN_IF_ERROR(Flush());
  return WriteRegion(offset, data, size);
}

Result<uint64_t> AtomicFile::ReserveRegion(uint64_t size) {
  if (fd_ < 0) return Status::Internal("write to a closed AtomicFile");
  LMKIT_RETURN_IF_ERROR(Flush());
  const uint64_t offset = written_;
  if (::lseek(fd_, static_cast<off_t>(offset + size), SEEK_SET) < 0)
    return Status::FromErrno(path_, "seek failed", errno);
  written_ += size;
  return offset;
}

Status AtomicFile::WriteRegion(uint64_t offset, const void* data, size_t size) const {
  if (fd_ < 0) return Status::Internal("write to a closed AtomicFile");
  const uint8_t* p = static_cast<const uint8_t*>(data);
  size_t off = 0;
  while (off < size) {
    ssize_t n = ::pwrite(fd_, p + off, size - off, static_cast<off_t>(offset + off));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(path_, "write failed", errno);
    }
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status AtomicFile::Sync() {
  if (fd_ < 0) return Status::Internal("sync of a closed AtomicFile");
  LMKIT_RETURN_IF_ERROR(Flush());
  if (temp_path_.empty() || synced_) return Status::Ok();  // devices and pipes reject fsync
  if (::fsync(fd_) != 0) return Status::FromErrno(path_, "fsync failed", errno);
  synced_ = true;
  return Status::Ok();
}

Status AtomicFile::Commit() {
  if (fd_ < 0) return Status::Internal("commit of a closed AtomicFile");
  Status st = Flush();
  if (temp_path_.empty()) {  // written in place (see Create): nothing to rename, and devices and pipes reject fsync
    if (::close(fd_) != 0 && st.ok()) st = Status::FromErrno(path_, "close failed", errno);
    fd_ = -1;
    return st;
  }
  if (st.ok() && !synced_ && ::fsync(fd_) != 0) st = Status::FromErrno(path_, "fsync failed", errno);
  if (st.ok() && ::close(fd_) != 0)
    st = Status::FromErrno(path_, "close failed", errno);
  else if (!st.ok())
    ::close(fd_);
  fd_ = -1;
  if (st.ok() && ::rename(temp_path_.c_str(), path_.c_str()) != 0)
    st = Status::FromErrno(path_, "rename failed", errno);
  if (!st.ok()) {
    ::unlink(temp_path_.c_str());
    UnregisterCleanup(slot_);
    slot_ = -1;
    return st;
  }
  UnregisterCleanup(slot_);
  slot_ = -1;
  // Make the rename itself durable.
  int dfd = ::open(DirName(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

void AtomicFile::Abort() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  }
  UnregisterCleanup(slot_);
  slot_ = -1;
  buffer_.clear();
}

Status CommitAll(std::initializer_list<AtomicFile*> files) {
  Status st;
  for (AtomicFile* f : files) {
    st = f->Sync();
    if (!st.ok()) break;
  }
  if (!st.ok()) {
    for (AtomicFile* f : files) f->Abort();
    return st;
  }
  for (AtomicFile* f : files) LMKIT_RETURN_IF_ERROR(f->Commit());
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  LMKIT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(path));
  LMKIT_RETURN_IF_ERROR(f.Write(content));
  return f.Commit();
}

}  // namespace lmkit
