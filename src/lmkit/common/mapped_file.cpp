#include "lmkit/common/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "lmkit/common/file_reader.h"

namespace lmkit {

Result<MappedFile> MappedFile::Open(const std::string& path) {
  LMKIT_ASSIGN_OR_RETURN(OpenedFile opened, OpenRegularFile(path));
  const int fd = opened.fd;
  MappedFile f;
  f.path_ = path;
  f.size_ = static_cast<size_t>(opened.size);
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return Status::FromErrno(path, "cannot mmap", e);
    }
    f.data_ = static_cast<uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file referenced
  return f;
}

MappedFile::MappedFile(MappedFile&& o) noexcept : path_(std::move(o.path_)), data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    Reset();
    path_ = std::move(o.path_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() { Reset(); }

void MappedFile::Reset() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

void MappedFile::Advise(Advice advice, size_t offset, size_t length) const {
  if (data_ == nullptr || offset >= size_) return;
  if (length > size_ - offset) length = size_ - offset;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t begin = offset / page * page;
  size_t end = offset + length;
  int a = MADV_NORMAL;
  switch (advice) {
    case Advice::kNormal:
      a = MADV_NORMAL;
      break;
    case Advice::kSequential:
      a = MADV_SEQUENTIAL;
      break;
    case Advice::kRandom:
      a = MADV_RANDOM;
      break;
    case Advice::kWillNeed:
      a = MADV_WILLNEED;
      break;
    case Advice::kDontNeed:
      a = MADV_DONTNEED;
      break;
  }
  (void)::madvise(data_ + begin, end - begin, a);
}

}  // namespace lmkit
