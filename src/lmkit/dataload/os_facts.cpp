#include "lmkit/dataload/os_facts.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

namespace lmkit::dataload {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

int64_t ReadIntFile(const std::string& path) {
  std::ifstream in(path);
  long long v = -1;
  if (!(in >> v)) return -1;
  return v;
}

const char* FsName(unsigned long magic) {
  switch (magic) {
    case 0xEF53:
      return "ext4";  // ext2/3/4 share the magic
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x794C7630:
      return "overlay";
    case 0x6969:
      return "nfs";
    case 0x2FC12FC1:
      return "zfs";
    case 0x65735546:
      return "fuse";
    case 0x01021997:
      return "9p";
    case 0xFF534D42:
      return "cifs";
    case 0x5346544E:
      return "ntfs";
    case 0xF2F52010:
      return "f2fs";
    case 0x6A656A63:
      return "fakeowner";
    default:
      return nullptr;
  }
}

}  // namespace

uint64_t PageSize() {
  static const uint64_t kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return kPage;
}

IoCounters ReadIoCounters() {
  IoCounters c;
  if (std::FILE* f = std::fopen("/proc/self/io", "r")) {
    char key[64];
    unsigned long long v = 0;
    while (std::fscanf(f, "%63s %llu", key, &v) == 2) {
      if (std::strcmp(key, "read_bytes:") == 0) c.read_bytes = v;
      if (std::strcmp(key, "rchar:") == 0) c.rchar = v;
    }
    std::fclose(f);
  }
  struct rusage ru {};
  if (::getrusage(RUSAGE_SELF, &ru) == 0) {
    c.minor_faults = static_cast<uint64_t>(ru.ru_minflt);
    c.major_faults = static_cast<uint64_t>(ru.ru_majflt);
  }
  return c;
}

Result<uint64_t> ResidentBytes(const std::string& path) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) return Status::FromErrno(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return Status::FromErrno(path, "cannot stat", errno);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) return uint64_t{0};
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, f.fd, 0);
  if (p == MAP_FAILED) return Status::FromErrno(path, "cannot mmap for mincore", errno);
  const uint64_t page = PageSize();
  const uint64_t pages = (size + page - 1) / page;
  std::vector<unsigned char> vec(pages);
  int rc = ::mincore(p, size, vec.data());
  int e = errno;
  ::munmap(p, size);
  if (rc != 0) return Status::FromErrno(path, "mincore failed", e);
  uint64_t resident = 0;
  for (uint64_t i = 0; i < pages; ++i) {
    if (vec[i] & 1) resident += (i + 1 == pages) ? size - i * page : page;
  }
  return resident;
}

Status EvictFileRange(int fd, uint64_t offset, uint64_t length, const std::string& path) {
  int rc = ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(length), POSIX_FADV_DONTNEED);
  if (rc != 0) return Status::FromErrno(path, "posix_fadvise(DONTNEED) failed", rc);
  return Status::Ok();
}

Status EvictFile(const std::string& path) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) return Status::FromErrno(path, "cannot open", errno);
  return EvictFileRange(f.fd, 0, 0, path);
}

Status WarmFile(const std::string& path) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) return Status::FromErrno(path, "cannot open", errno);
  (void)::posix_fadvise(f.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::unique_ptr<char[]> buf(new char[1 << 20]);
  off_t off = 0;
  for (;;) {
    ssize_t n = ::pread(f.fd, buf.get(), 1 << 20, off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(path, "read failed while warming the page cache", errno);
    }
    if (n == 0) break;
    off += n;
  }
  return Status::Ok();
}

FileSystemFacts FileSystemFactsFor(const std::string& path) {
  FileSystemFacts facts;
  struct statfs sf {};
  if (::statfs(path.c_str(), &sf) == 0) {
    const char* name = FsName(static_cast<unsigned long>(sf.f_type));
    if (name != nullptr) {
      facts.fs_type = name;
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(sf.f_type));
      facts.fs_type = buf;
    }
    facts.block_size = static_cast<uint64_t>(sf.f_bsize);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    const std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
    facts.device = dev;
    // The backing-device info holds the read-ahead every file system uses, including partitions and device mappers.
    facts.read_ahead_kb = ReadIntFile("/sys/class/bdi/" + dev + "/read_ahead_kb");
    if (facts.read_ahead_kb < 0) facts.read_ahead_kb = ReadIntFile("/sys/dev/block/" + dev + "/queue/read_ahead_kb");
    int64_t rot = ReadIntFile("/sys/dev/block/" + dev + "/queue/rotational");
    if (rot < 0) rot = ReadIntFile("/sys/dev/block/" + dev + "/../queue/rotational");  // a partition
    if (rot >= 0) {
      facts.rotational_known = true;
      facts.rotational = rot != 0;
    }
  }
  return facts;
}

}  // namespace lmkit::dataload
