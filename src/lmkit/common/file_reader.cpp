#include "lmkit/common/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace lmkit {

Result<OpenedFile> OpenRegularFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
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
    return Status::InvalidInput(path, S_ISDIR(st.st_mode) ? "is a directory, expected a file" : "not a regular file");
  }
  return OpenedFile{fd, static_cast<uint64_t>(st.st_size)};
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
