// A simulation of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, one device, one stream): what
// `lmkit plan --timeline` replays a day of model loads, unloads and request bursts against. docs/plan.md lists every
// rule with the allocator function it comes from; the unit tests check each rule on block layouts worked out by hand.
//
// Rules (PyTorch's, restated): a request is rounded up to a multiple of 512 B; up to 1 MiB it is served from the small
// pool, else from the large pool; each pool hands out its best-fitting cached free block (smallest size, then lowest
// address). Without one, a new segment is obtained from the device ("cudaMalloc"): 2 MiB for a small request, 20 MiB
// for a request under 10 MiB, else the request rounded up to 2 MiB. A block larger than the request is split (the
// request takes the front) when what remains is at least 512 B (small pool) or more than 1 MiB (large pool, and only
// for requests under max_split_size). Blocks of max_split_size or more are never split and serve only requests of at
// least max_split_size that they exceed by less than max_non_split_rounding. A freed block merges with free neighbours
// of its segment. When the device has no room: release cached oversize blocks (max_split_size set), then every cached
// segment that is wholly free, retrying after each; then the request fails (OutOfMemoryError). EmptyCache releases
// every wholly free segment. With expandable_segments each pool has one growing segment mapped in pages (2 MiB small,
// 20 MiB large): new memory is mapped at the lowest free address that fits, every split leaving 512 B or more is made,
// and releasing unmaps free pages.
//
// The device is modelled as `capacity` bytes that segments take whole (cudaMalloc succeeds while reserved + size <=
// capacity): the limit torch.cuda.set_per_process_memory_fraction sets on a real device. Not modelled: streams and
// events (one stream, frees complete at once), CUDA graph pools, roundup_power2_divisions, the garbage-collection
// threshold. Not thread-safe; deterministic.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace lmkit::accounting {

inline constexpr uint64_t kMiB = 1048576;
inline constexpr uint64_t kAllocMinBlock = 512;             // kMinBlockSize
inline constexpr uint64_t kAllocSmallSize = kMiB;           // kSmallSize: largest small-pool request
inline constexpr uint64_t kAllocSmallBuffer = 2 * kMiB;     // kSmallBuffer: small segment (and small page)
inline constexpr uint64_t kAllocMinLargeAlloc = 10 * kMiB;  // kMinLargeAlloc: below it a 20 MiB segment is made
inline constexpr uint64_t kAllocLargeBuffer = 20 * kMiB;    // kLargeBuffer: that segment (and large page)
inline constexpr uint64_t kAllocRoundLarge = 2 * kMiB;      // kRoundLarge
inline constexpr uint64_t kNoMaxSplit = std::numeric_limits<uint64_t>::max();

struct AllocatorConfig {
  uint64_t capacity = 0;                                // bytes the device can hand out
  uint64_t max_split_size = kNoMaxSplit;                // max_split_size_mb (x 1 MiB); kNoMaxSplit = unset
  uint64_t max_non_split_rounding = kAllocLargeBuffer;  // max_non_split_rounding_mb
  bool expandable_segments = false;
};

struct SimBlock {
  uint64_t addr = 0, size = 0;
  bool allocated = false;
  bool mapped = true;  // expandable segments: backed by device pages
};
struct SimSegment {
  uint64_t addr = 0;
  uint64_t size = 0;  // cudaMalloc'd bytes; expandable: the address span its blocks cover
  bool small = false, expandable = false;
  std::vector<SimBlock> blocks;  // address order, tiling [addr, addr + size)
};

class CudaAllocatorSim {
 public:
  explicit CudaAllocatorSim(const AllocatorConfig& config);

  // A handle (the block's address, never 0) or 0 when the allocator would raise OutOfMemoryError.
  uint64_t Malloc(uint64_t bytes);
  // Frees a handle Malloc returned (others are ignored).
  void Free(uint64_t handle);
  // torch.cuda.empty_cache(): releases every cached segment that holds no allocation (expandable: unmaps free pages).
  void EmptyCache();

  uint64_t allocated() const { return allocated_; }  // bytes of allocated blocks (rounded, unsplit tails included)
  uint64_t reserved() const { return reserved_; }    // bytes of segments (expandable: mapped pages)
  uint64_t capacity() const { return config_.capacity; }
  // The largest request that could be placed now without exceeding the device: the largest cached free block, or
  // the device's unreserved bytes plus what releasing cached memory would return (wholly free segments; expandable:
  // free pages), whichever is larger. Ignores the oversize-block rules.
  uint64_t LargestObtainable() const;
  uint64_t num_device_alloc() const { return num_device_alloc_; }  // cudaMalloc / page-map calls that succeeded
  uint64_t num_device_free() const { return num_device_free_; }
  uint64_t num_alloc_retries() const { return num_alloc_retries_; }
  uint64_t num_ooms() const { return num_ooms_; }
  std::vector<SimSegment> Segments() const;  // by address

  static uint64_t RoundSize(uint64_t bytes);         // round_size
  static uint64_t AllocationSize(uint64_t rounded);  // get_allocation_size

 private:
  struct Block {
    uint64_t size = 0;
    uint64_t segment = 0;  // address of its segment
    bool allocated = false;
    bool mapped = true;
  };
  struct Segment {
    uint64_t size = 0;
    bool small = false, expandable = false;
  };
  using FreeSet = std::set<std::pair<uint64_t, uint64_t>>;  // (size, address): best fit = lower_bound

  FreeSet& PoolOf(bool small) { return small ? free_small_ : free_large_; }
  bool IsSmall(uint64_t segment) const { return segments_.at(segment).small; }
  bool FirstAndLastOfSegment(std::map<uint64_t, Block>::const_iterator it) const;
  bool GetFreeBlock(uint64_t size, bool small, uint64_t* addr);
  bool ShouldSplit(uint64_t block_size, uint64_t size, bool small) const;
  uint64_t TakeBlock(uint64_t addr, uint64_t size);
  bool AllocSegment(uint64_t size, bool small, uint64_t* addr);
  bool AllocExpandable(uint64_t size, bool small, uint64_t* addr);
  bool ReleaseAvailableCachedBlocks(uint64_t size, bool small);
  bool ReleaseCachedBlocks();
  void ReleaseSegment(uint64_t addr);
  void UnmapFreePages(uint64_t segment);
  uint64_t Releasable(std::map<uint64_t, Block>::const_iterator it) const;
  void InsertFree(uint64_t addr);
  void EraseFree(uint64_t addr);
  uint64_t MergeFree(uint64_t addr);
  uint64_t PageOf(bool small) const { return small ? kAllocSmallBuffer : kAllocLargeBuffer; }

  AllocatorConfig config_;
  std::map<uint64_t, Block> blocks_;
  std::map<uint64_t, Segment> segments_;
  std::map<uint64_t, std::vector<bool>> mapped_pages_;  // expandable segment -> page mapped?
  FreeSet free_small_, free_large_;
  std::set<uint64_t> free_addrs_;           // every free block, mapped or not (expandable segments' runs)
  std::map<uint64_t, uint64_t> run_bound_;  // expandable segment -> no interior free run is longer
  uint64_t allocated_ = 0, reserved_ = 0;
  uint64_t releasable_ = 0;  // sum of Releasable over the free blocks
  uint64_t next_addr_ = uint64_t{1} << 32;
  uint64_t num_device_alloc_ = 0, num_device_free_ = 0, num_alloc_retries_ = 0, num_ooms_ = 0;
};

}  // namespace lmkit::accounting
