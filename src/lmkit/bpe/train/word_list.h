// The BPE merger's list of the words a pair occurs in (merger.h): word ids appended as counts rise, taken whole when
// the pair is merged.
//
// Contract: AddOnce(w) appends w unless it is already the last entry; TakeInto moves the entries out in insertion
// order and leaves the list empty. Movable, not copyable; not thread-safe. Allocation failure throws std::bad_alloc.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace lmkit::bpe::train {

// A pair's word list: up to two word ids inline, more on the heap. Most pairs are in one or two words, and a
// std::vector each (1.5 M of them on debmix at vocab 30,000) cost a malloc per pair and 30 ms of free() at the end.
class WordList {
 public:
  WordList() = default;
  WordList(WordList&& o) noexcept : size_(o.size_), cap_(o.cap_), u_(o.u_) { o.Reset(); }
  WordList& operator=(WordList&& o) noexcept {
    if (this != &o) {
      Free();
      size_ = o.size_;
      cap_ = o.cap_;
      u_ = o.u_;
      o.Reset();
    }
    return *this;
  }
  WordList(const WordList&) = delete;
  WordList& operator=(const WordList&) = delete;
  ~WordList() { Free(); }

  // Appends w unless it is already the last entry (a word adds a pair once per step).
  void AddOnce(uint32_t w) {
    if (size_ > 0 && data()[size_ - 1] == w) return;
    if (size_ == cap_) Grow();
    data()[size_++] = w;
  }
  // Moves the entries into *out (replacing its contents) and empties the list.
  void TakeInto(std::vector<uint32_t>* out) {
    out->assign(data(), data() + size_);
    Free();
    Reset();
  }

 private:
  static constexpr uint32_t kInline = 2;
  uint32_t* data() { return cap_ > kInline ? u_.heap : u_.inline_ids; }
  void Grow() {
    const uint32_t cap = cap_ * 2;
    auto* heap = static_cast<uint32_t*>(std::malloc(sizeof(uint32_t) * cap));
    if (heap == nullptr) throw std::bad_alloc();
    std::memcpy(heap, data(), sizeof(uint32_t) * size_);
    Free();
    u_.heap = heap;
    cap_ = cap;
  }
  void Free() {
    if (cap_ > kInline) std::free(u_.heap);
  }
  void Reset() {
    size_ = 0;
    cap_ = kInline;
  }
  uint32_t size_ = 0, cap_ = kInline;
  union {
    uint32_t inline_ids[kInline];
    uint32_t* heap;
  } u_{};
};

}  // namespace lmkit::bpe::train
