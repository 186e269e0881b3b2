// Memory for large, randomly accessed arrays (hash tables, word records) backed by transparent huge pages.
//
// Contract: HugeAllocate(bytes) returns memory for `bytes` bytes aligned for any type, or throws std::bad_alloc;
// HugeFree(p, bytes) releases it (bytes as allocated). Blocks of at least kHugeMinBytes are mapped on their own at a
// 2 MiB boundary and marked for transparent huge pages (Linux madvise; elsewhere, or when the kernel says no, they are
// ordinary pages); smaller ones come from operator new. HugePageAllocator<T> is a std::allocator replacement on top.
// Why: on the benchmark VMs a 4 KiB page fault costs 2-5 us, and BPE training touched ~300 MB of fresh pages (79 k
// faults); a 2 MiB page is one fault. Only the aligned 2 MiB stretches of a block become huge, so a block never holds
// more resident memory than its size rounded up to a 4 KiB page.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace lmkit {

inline constexpr size_t kHugeMinBytes = size_t{4} << 20;

void* HugeAllocate(size_t bytes);
void HugeFree(void* p, size_t bytes) noexcept;

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n > size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(HugeAllocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { HugeFree(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

// An uninitialised buffer of `size` bytes from HugeAllocate (none when default-made).
class HugeBuffer {
 public:
  HugeBuffer() = default;
  explicit HugeBuffer(size_t size) : p_(static_cast<char*>(HugeAllocate(size))), size_(size) {}
  HugeBuffer(HugeBuffer&& o) noexcept : p_(o.p_), size_(o.size_) { o.Forget(); }
  HugeBuffer& operator=(HugeBuffer&& o) noexcept {
    if (this != &o) {
      HugeFree(p_, size_);
      p_ = o.p_;
      size_ = o.size_;
      o.Forget();
    }
    return *this;
  }
  ~HugeBuffer() { HugeFree(p_, size_); }
  char* get() const { return p_; }
  size_t size() const { return size_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  void Forget() {
    p_ = nullptr;
    size_ = 0;
  }
  char* p_ = nullptr;
  size_t size_ = 0;
};

template <typename T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace lmkit
