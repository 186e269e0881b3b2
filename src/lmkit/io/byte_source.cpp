#include "lmkit/io/byte_source.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace lmkit::io {

Result<size_t> StringSource::Read(char* dst, size_t capacity) {
  const size_t n = std::min({capacity, s_.size() - pos_, max_read_});
  std::memcpy(dst, s_.data() + pos_, n);
  pos_ += n;
  return n;
}

Result<size_t> FdSource::Read(char* dst, size_t capacity) {
  size_t got = 0;
  while (got < capacity) {
    const ssize_t r = ::read(fd_, dst + got, capacity - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(subject_, "cannot read", errno);
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

}  // namespace lmkit::io
