// The caching allocator's rules, one function per rule of the original (names in the comments), on a map of blocks
// keyed by address and one best-fit set per pool.
#include "lmkit/accounting/cuda_allocator_sim.h"

#include <algorithm>
#include <iterator>

namespace lmkit::accounting {
namespace {

// Expandable segments live far above the cudaMalloc'd ones, each with address space to spare.
constexpr uint64_t kExpandableSmallBase = uint64_t{1} << 60;
constexpr uint64_t kExpandableLargeBase = uint64_t{1} << 61;

uint64_t AllocCeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

}  // namespace

CudaAllocatorSim::CudaAllocatorSim(const AllocatorConfig& config) : config_(config) {}

// round_size: at least 512 B, a multiple of 512 B.
uint64_t CudaAllocatorSim::RoundSize(uint64_t bytes) {
  if (bytes < kAllocMinBlock) return kAllocMinBlock;
  return kAllocMinBlock * AllocCeilDiv(bytes, kAllocMinBlock);
}

// get_allocation_size: the segment cudaMalloc is asked for.
uint64_t CudaAllocatorSim::AllocationSize(uint64_t rounded) {
  if (rounded <= kAllocSmallSize) return kAllocSmallBuffer;
  if (rounded < kAllocMinLargeAlloc) return kAllocLargeBuffer;
  return kAllocRoundLarge * AllocCeilDiv(rounded, kAllocRoundLarge);
}

bool CudaAllocatorSim::FirstAndLastOfSegment(std::map<uint64_t, Block>::const_iterator it) const {
  const Segment& s = segments_.at(it->second.segment);
  return !s.expandable && it->first == it->second.segment && it->second.size == s.size;
}

// What releasing would return from a cached block: a whole free segment, or an expandable block's whole pages.
uint64_t CudaAllocatorSim::Releasable(std::map<uint64_t, Block>::const_iterator it) const {
  const Block& b = it->second;
  if (!b.mapped) return 0;
  const Segment& s = segments_.at(b.segment);
  if (!s.expandable) return FirstAndLastOfSegment(it) ? b.size : 0;
  const uint64_t page = PageOf(s.small);
  const uint64_t lo = AllocCeilDiv(it->first - b.segment, page), hi = (it->first + b.size - b.segment) / page;
  return hi > lo ? (hi - lo) * page : 0;
}

void CudaAllocatorSim::InsertFree(uint64_t addr) {
  auto it = blocks_.find(addr);
  const Block& b = it->second;
  free_addrs_.insert(addr);
  releasable_ += Releasable(it);
  if (b.mapped) PoolOf(IsSmall(b.segment)).insert({b.size, addr});
}

void CudaAllocatorSim::EraseFree(uint64_t addr) {
  auto it = blocks_.find(addr);
  const Block& b = it->second;
  if (free_addrs_.erase(addr) == 0) return;
  releasable_ -= Releasable(it);
  if (b.mapped) PoolOf(IsSmall(b.segment)).erase({b.size, addr});
}

// get_free_block: the smallest cached block of at least `size` (lowest address on ties), unless the oversize rules
// forbid it: a block of max_split_size or more only serves a request of max_split_size or more that it exceeds by
// less than max_non_split_rounding.
bool CudaAllocatorSim::GetFreeBlock(uint64_t size, bool small, uint64_t* addr) {
  FreeSet& pool = PoolOf(small);
  auto it = pool.lower_bound({size, 0});
  if (it == pool.end()) return false;
  if (config_.expandable_segments) {
    // A block followed by unmapped space counts as the size it could grow to (the segment's end: without limit), so
    // a larger block that cannot grow as far is taken first and the growable one kept for larger requests.
    auto growable = [&](const std::pair<uint64_t, uint64_t>& e) -> uint64_t {
      const Block& b = blocks_.at(e.second);
      auto next = blocks_.find(e.second + e.first);
      if (next == blocks_.end() || next->second.segment != b.segment) return kNoMaxSplit;
      return e.first + (next->second.allocated || next->second.mapped ? 0 : next->second.size);
    };
    for (auto next = std::next(it); next != pool.end() && growable(*next) < growable(*it); ++next) it = next;
  }
  const uint64_t block = it->first;
  if (size < config_.max_split_size && block >= config_.max_split_size) return false;
  if (size >= config_.max_split_size && block >= size + config_.max_non_split_rounding) return false;
  *addr = it->second;
  EraseFree(it->second);
  return true;
}

// should_split: small pool and expandable segments keep any remainder of 512 B or more; the large pool splits only
// requests under max_split_size whose remainder is more than 1 MiB (kSmallSize).
bool CudaAllocatorSim::ShouldSplit(uint64_t block_size, uint64_t size, bool small) const {
  const uint64_t remaining = block_size - size;
  if (small || config_.expandable_segments) return remaining >= kAllocMinBlock;
  return size < config_.max_split_size && remaining > kAllocSmallSize;
}

// alloc_found_block: the request takes the front of the block; a split leaves the rest cached.
uint64_t CudaAllocatorSim::TakeBlock(uint64_t addr, uint64_t size) {
  Block& b = blocks_.at(addr);
  if (ShouldSplit(b.size, size, IsSmall(b.segment))) {
    Block rest{b.size - size, b.segment, false, true};
    b.size = size;
    blocks_.emplace(addr + size, rest);
    InsertFree(addr + size);
  }
  b.allocated = true;
  allocated_ += b.size;
  return addr;
}

// alloc_block: a new segment of `size` bytes when the device has room.
bool CudaAllocatorSim::AllocSegment(uint64_t size, bool small, uint64_t* addr) {
  if (reserved_ + size > config_.capacity) return false;
  const uint64_t base = next_addr_;
  next_addr_ += size + kAllocRoundLarge;  // a gap: blocks of two segments are never neighbours
  segments_.emplace(base, Segment{size, small, false});
  blocks_.emplace(base, Block{size, base, false, true});
  reserved_ += size;
  ++num_device_alloc_;
  *addr = base;
  return true;
}

// try_allocate_expandable_block / ExpandableSegment::map: the lowest address of the pool's segment where a run of free
// (mapped or not) space holds `size`, its missing pages mapped when the device has room.
bool CudaAllocatorSim::AllocExpandable(uint64_t size, bool small, uint64_t* addr) {
  const uint64_t base = small ? kExpandableSmallBase : kExpandableLargeBase;
  const uint64_t page = PageOf(small);
  auto [sit, fresh] = segments_.try_emplace(base, Segment{0, small, true});
  Segment& seg = sit->second;
  std::vector<bool>& pages = mapped_pages_[base];
  // The first run of adjacent free blocks that reaches `size` (free blocks by address: the allocated ones between
  // runs need no visit); a run touching the segment's end continues without limit. A scan that finds none records
  // the longest interior run, so the next larger requests go straight to the end until a free changes the runs.
  const uint64_t seg_end = base + seg.size;
  uint64_t run_start = seg_end;
  auto bound = run_bound_.find(base);
  if (bound != run_bound_.end() && size > bound->second) {
    for (auto r = free_addrs_.lower_bound(seg_end); r != free_addrs_.begin();) {
      --r;
      if (*r < base || *r + blocks_.at(*r).size != run_start) break;
      run_start = *r;
    }
  } else {
    uint64_t run_len = 0, run_end = 0, longest = 0;
    bool found = false;
    for (auto it = free_addrs_.lower_bound(base); it != free_addrs_.end() && *it < seg_end; ++it) {
      const uint64_t sz = blocks_.at(*it).size;
      if (run_len == 0 || *it != run_end) {
        longest = std::max(longest, run_len);
        run_start = *it, run_len = 0;
      }
      run_len += sz;
      run_end = *it + sz;
      if (run_len >= size) {
        found = true;
        break;
      }
    }
    if (!found) {
      if (run_len > 0 && run_end == seg_end) {
        run_bound_[base] = longest;  // the trailing run is not interior
      } else {
        run_bound_[base] = std::max(longest, run_len);
        run_start = seg_end;  // past the last allocated block
      }
    }
  }
  const uint64_t first_page = (run_start - base) / page;
  const uint64_t end_page = AllocCeilDiv(run_start + size - base, page);
  uint64_t new_pages = 0;
  for (uint64_t p = first_page; p < end_page; ++p)
    if (p >= pages.size() || !pages[p]) ++new_pages;
  if (reserved_ + new_pages * page > config_.capacity) {
    if (fresh && seg.size == 0) {
      segments_.erase(sit);
      mapped_pages_.erase(base);
    }
    return false;
  }
  // Take the free blocks the request overlaps (and the free rest of its last page), map the pages, and lay that span
  // out again by mapped state; past the segment's end the span grows to the last mapped page.
  const uint64_t map_end = base + end_page * page;
  uint64_t span_end = run_start;
  for (auto it = blocks_.lower_bound(run_start); it != blocks_.end() && it->first < base + seg.size &&
                                                 !it->second.allocated &&
                                                 (it->first < run_start + size || it->first < map_end);) {
    span_end = it->first + it->second.size;
    EraseFree(it->first);
    it = blocks_.erase(it);
  }
  if (span_end < run_start + size) span_end = std::max(span_end, map_end);
  if (pages.size() < end_page) pages.resize(end_page, false);
  for (uint64_t p = first_page; p < end_page; ++p) pages[p] = true;
  seg.size = std::max(seg.size, span_end - base);
  reserved_ += new_pages * page;
  if (new_pages > 0) ++num_device_alloc_;
  uint64_t a = run_start;
  while (a < span_end) {
    const bool m = pages[(a - base) / page];
    uint64_t b = std::min(span_end, base + ((a - base) / page + 1) * page);
    while (b < span_end && pages[(b - base) / page] == m) b = std::min(span_end, b + page);
    blocks_.emplace(a, Block{b - a, base, false, m});
    if (a != run_start) InsertFree(a);
    a = b;
  }
  *addr = run_start;
  return true;
}

// release_available_cached_blocks: with max_split_size set, release one cached oversize block that covers the request
// (at least max_split_size), else the largest oversize blocks until their sum does.
bool CudaAllocatorSim::ReleaseAvailableCachedBlocks(uint64_t size, bool small) {
  if (config_.max_split_size == kNoMaxSplit) return false;
  FreeSet& pool = PoolOf(small);
  const uint64_t key = std::max(size, config_.max_split_size);
  auto it = pool.lower_bound({key, 0});
  if (it != pool.end()) {
    if (!FirstAndLastOfSegment(blocks_.find(it->second))) return false;
    ReleaseSegment(it->second);
    return true;
  }
  uint64_t released = 0;
  std::vector<uint64_t> victims;
  for (auto r = pool.rbegin(); r != pool.rend() && released < key && r->first >= config_.max_split_size; ++r) {
    if (!FirstAndLastOfSegment(blocks_.find(r->second))) continue;
    victims.push_back(r->second);
    released += r->first;
  }
  for (uint64_t v : victims) ReleaseSegment(v);
  return released >= key;
}

// release_cached_blocks: every cached block that is a whole segment goes back to the device (large pool first);
// expandable segments unmap their free pages.
bool CudaAllocatorSim::ReleaseCachedBlocks() {
  for (bool small : {false, true}) {
    std::vector<uint64_t> victims;
    for (const auto& [sz, addr] : PoolOf(small))
      if (FirstAndLastOfSegment(blocks_.find(addr))) victims.push_back(addr);
    for (uint64_t v : victims) ReleaseSegment(v);
  }
  std::vector<uint64_t> expandable;
  for (const auto& [addr, s] : segments_)
    if (s.expandable) expandable.push_back(addr);
  for (uint64_t s : expandable) UnmapFreePages(s);
  return true;
}

void CudaAllocatorSim::ReleaseSegment(uint64_t addr) {
  EraseFree(addr);
  reserved_ -= segments_.at(addr).size;
  blocks_.erase(addr);
  segments_.erase(addr);
  ++num_device_free_;
}

// ExpandableSegment::unmap via release_expandable_segment: pages wholly inside free blocks are unmapped; the blocks are
// re-cut at the mapped/unmapped boundaries and neighbours of the same state merged.
void CudaAllocatorSim::UnmapFreePages(uint64_t segment) {
  const Segment& seg = segments_.at(segment);
  const uint64_t page = PageOf(seg.small);
  std::vector<bool>& pages = mapped_pages_[segment];
  bool any = false;
  for (auto it = blocks_.lower_bound(segment); it != blocks_.end() && it->first < segment + seg.size; ++it) {
    if (it->second.allocated || !it->second.mapped) continue;
    const uint64_t lo = AllocCeilDiv(it->first - segment, page), hi = (it->first + it->second.size - segment) / page;
    for (uint64_t p = lo; p < hi; ++p)
      if (pages[p]) pages[p] = false, reserved_ -= page, any = true;
  }
  if (!any) return;
  ++num_device_free_;
  // Re-cut the free runs by page state.
  std::vector<std::pair<uint64_t, uint64_t>> runs;  // free [begin, end)
  for (auto it = blocks_.lower_bound(segment); it != blocks_.end() && it->first < segment + seg.size;) {
    if (it->second.allocated) {
      ++it;
      continue;
    }
    const uint64_t b = it->first;
    uint64_t e = b;
    while (it != blocks_.end() && it->first < segment + seg.size && !it->second.allocated) {
      e = it->first + it->second.size;
      EraseFree(it->first);
      it = blocks_.erase(it);
    }
    runs.push_back({b, e});
  }
  for (const auto& [b, e] : runs) {
    uint64_t a = b;
    while (a < e) {
      const bool m = pages[(a - segment) / page];
      uint64_t x = std::min(e, segment + ((a - segment) / page + 1) * page);
      while (x < e && pages[(x - segment) / page] == m) x = std::min(e, x + page);
      blocks_.emplace(a, Block{x - a, segment, false, m});
      InsertFree(a);
      a = x;
    }
  }
}

// free_block / try_merge_blocks: a freed block absorbs free neighbours of its segment (of the same mapped state).
uint64_t CudaAllocatorSim::MergeFree(uint64_t addr) {
  auto it = blocks_.find(addr);
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.segment == it->second.segment && !prev->second.allocated &&
        prev->second.mapped == it->second.mapped && prev->first + prev->second.size == it->first) {
      EraseFree(prev->first);
      prev->second.size += it->second.size;
      blocks_.erase(it);
      it = prev;
    }
  }
  auto next = std::next(it);
  if (next != blocks_.end() && next->second.segment == it->second.segment && !next->second.allocated &&
      next->second.mapped == it->second.mapped && it->first + it->second.size == next->first) {
    EraseFree(next->first);
    it->second.size += next->second.size;
    blocks_.erase(next);
  }
  return it->first;
}

void CudaAllocatorSim::Free(uint64_t handle) {
  auto it = blocks_.find(handle);
  if (it == blocks_.end() || !it->second.allocated) return;
  run_bound_.erase(it->second.segment);  // the runs of an expandable segment grow
  allocated_ -= it->second.size;
  it->second.allocated = false;
  InsertFree(MergeFree(handle));
}

void CudaAllocatorSim::EmptyCache() { ReleaseCachedBlocks(); }

// malloc: cached block, else a new segment, else release oversize blocks and retry, else release every free segment
// and retry, else out of memory.
uint64_t CudaAllocatorSim::Malloc(uint64_t bytes) {
  const uint64_t size = RoundSize(bytes);
  const bool small = size <= kAllocSmallSize;
  uint64_t addr = 0;
  bool found = GetFreeBlock(size, small, &addr);
  if (!found && config_.expandable_segments) {
    found = AllocExpandable(size, small, &addr);
    if (!found) {
      ReleaseCachedBlocks();
      ++num_alloc_retries_;
      found = AllocExpandable(size, small, &addr);
    }
  } else if (!found) {
    const uint64_t alloc = AllocationSize(size);
    found = AllocSegment(alloc, small, &addr) ||
            (ReleaseAvailableCachedBlocks(size, small) && AllocSegment(alloc, small, &addr));
    if (!found) {
      ReleaseCachedBlocks();
      ++num_alloc_retries_;
      found = AllocSegment(alloc, small, &addr);
    }
  }
  if (!found) {
    ++num_ooms_;
    return 0;
  }
  return TakeBlock(addr, size);
}

uint64_t CudaAllocatorSim::LargestObtainable() const {
  uint64_t largest = 0;
  for (const FreeSet* pool : {&free_small_, &free_large_})
    if (!pool->empty()) largest = std::max(largest, pool->rbegin()->first);
  return std::max(largest, config_.capacity - std::min(config_.capacity, reserved_) + releasable_);
}

std::vector<SimSegment> CudaAllocatorSim::Segments() const {
  std::vector<SimSegment> out;
  for (const auto& [addr, s] : segments_) {
    SimSegment v{addr, s.size, s.small, s.expandable, {}};
    for (auto it = blocks_.lower_bound(addr); it != blocks_.end() && it->first < addr + s.size; ++it)
      v.blocks.push_back({it->first, it->second.size, it->second.allocated, it->second.mapped});
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace lmkit::accounting
