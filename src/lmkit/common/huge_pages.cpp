#include "lmkit/common/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace lmkit {

namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

size_t PageRounded(size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

void* HugeAllocate(size_t bytes) {
  if (bytes < kHugeMinBytes) return ::operator new(bytes);
  const size_t len = PageRounded(bytes);
  // Over-map by one huge page and trim both ends, so the block starts on a 2 MiB boundary.
  void* raw = mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + len + kHugePage;
  if (end > aligned + len) munmap(reinterpret_cast<void*>(aligned + len), end - (aligned + len));
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(aligned), len, MADV_HUGEPAGE);  // advice only: ordinary pages when refused
#endif
  return reinterpret_cast<void*>(aligned);
}

void HugeFree(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes < kHugeMinBytes) {
    ::operator delete(p);
    return;
  }
  munmap(p, PageRounded(bytes));
}

}  // namespace lmkit
