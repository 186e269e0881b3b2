#include "lmkit/common/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace lmkit {

namespace {

std::string NotRegularFile(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory, expected a file";
  if (S_ISFIFO(mode)) return "is a pipe (FIFO), expected a regular file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device, expected a regular file";
  if (S_ISSOCK(mode)) return "is a socket, expected a regular file";
  return "not a regular file";
}

std::string Mib(uint64_t bytes) {
  return bytes % (uint64_t{1} << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

}  // namespace

Result<OpenedFile> OpenRegularFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; it changes nothing for a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) return Status::NotFound(path, "no such file");
    return Status::FromErrno(path, "cannot open", e);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return Status::FromErrno(path, "cannot stat", e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidInput(path, NotRegularFile(st.st_mode));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return OpenedFile{fd, static_cast<uint64_t>(st.st_size)};
}

Result<std::string> ReadFileToString(const std::string& path, uint64_t max_bytes) {
  const bool std_in = path == "-";
  const std::string subject = std_in ? "<stdin>" : path;
  int fd = STDIN_FILENO;
  std::string out;
  if (!std_in) {
    LMKIT_ASSIGN_OR_RETURN(OpenedFile f, OpenRegularFile(path));
    fd = f.fd;
    if (f.size > max_bytes) {
      ::close(fd);
      return Status::InvalidInput(
          path, "is " + std::to_string(f.size) + " bytes, over the " + Mib(max_bytes) + " limit for this kind of file");
    }
    out.reserve(static_cast<size_t>(f.size));
  }
  char buf[1 << 16];
  Status st;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      st = Status::FromErrno(subject, "read failed", errno);
      break;
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {  // stdin, or a file that grew after the check
      st = Status::InvalidInput(subject, "more than " + Mib(max_bytes) + ", the limit for this kind of file");
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  if (!std_in) ::close(fd);
  if (!st.ok()) return st;
  return out;
}

Result<FileReader> FileReader::Open(const std::string& path) {
  LMKIT_ASSIGN_OR_RETURN(OpenedFile f, OpenRegularFile(path));
  FileReader r;
  r.path_ = path;
  r.fd_ = f.fd;
  r.size_ = f.size;
  return r;
}

FileReader::FileReader(FileReader&& o) noexcept
    : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)), size_(std::exchange(o.size_, 0)) {}

FileReader& FileReader::operator=(FileReader&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    fd_ = std::exchange(o.fd_, -1);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status FileReader::ReadAt(uint64_t offset, void* dst, size_t size) const {
  auto* p = static_cast<uint8_t*>(dst);
  while (size > 0) {
    ssize_t n = ::pread(fd_, p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(path_, "cannot read", errno);
    }
    if (n == 0)
      return Status::InvalidInput(path_, "truncated: file ended at byte " + std::to_string(offset) +
                                             " while reading (did it change during the run?)");
    p += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace lmkit
