#include "lmkit/dataload/cold_projection.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/dataload/knobs.h"
#include "lmkit/dataload/os_facts.h"
#include "lmkit/dataload/sampler.h"

namespace lmkit::dataload {

StorageProbe ProbeStorage(const TokenShard& shard, uint64_t seed) {
  StorageProbe p;
  constexpr uint64_t kBlock = 4096;
  if (shard.file_bytes < 16 * kBlock) {
    p.why_not = "file too small to probe the storage (< 64 KiB)";
    return p;
  }
  int fd = ::open(shard.path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (fd < 0) {
    p.why_not = std::string("cannot open with O_DIRECT: ") + std::strerror(errno);
    return p;
  }
  const uint64_t seq_bytes = std::min<uint64_t>(8u << 20, shard.file_bytes / kBlock * kBlock);
  void* mem = nullptr;
  if (::posix_memalign(&mem, kBlock, seq_bytes) != 0) {
    ::close(fd);
    p.why_not = "out of memory";
    return p;
  }
  uint8_t* buf = static_cast<uint8_t*>(mem);
  const uint64_t blocks = shard.file_bytes / kBlock;
  uint64_t state = seed ^ 0x5EEDu;
  double total = 0;
  constexpr uint32_t kReads = 32;
  for (uint32_t i = 0; i < kReads && p.why_not.empty(); ++i) {
    const uint64_t off = UniformBelow(state, blocks) * kBlock;
    const double t0 = MonotonicSeconds();
    if (::pread(fd, buf, kBlock, static_cast<off_t>(off)) != static_cast<ssize_t>(kBlock)) {
      p.why_not = std::string("O_DIRECT read failed: ") + std::strerror(errno);
    }
    total += MonotonicSeconds() - t0;
  }
  if (p.why_not.empty()) {
    // Queue depth 8: eight threads with their own aligned buffers, 8 random reads each.
    constexpr unsigned kThreads = 8, kEach = 8;
    std::vector<uint64_t> offsets(kThreads * kEach);
    for (auto& o : offsets) o = UniformBelow(state, blocks) * kBlock;
    std::vector<int> failed(kThreads, 0);
    ThreadPool pool(kThreads);
    const bool refused = pool.size() < kThreads;
    const double t0 = MonotonicSeconds();
    if (!refused) {
      pool.ParallelFor(kThreads, [&](size_t t, unsigned) {
        void* m = nullptr;
        if (::posix_memalign(&m, kBlock, kBlock) != 0) {
          failed[t] = 1;
          return;
        }
        for (unsigned i = 0; i < kEach; ++i) {
          if (::pread(fd, m, kBlock, static_cast<off_t>(offsets[t * kEach + i])) != static_cast<ssize_t>(kBlock))
            failed[t] = 1;
        }
        std::free(m);
      });
    }
    const double dt = MonotonicSeconds() - t0;
    for (int f : failed)
      if (f != 0) p.why_not = "O_DIRECT read failed in the parallel probe";
    if (refused) p.why_not = "the system refused the parallel probe's threads";
    if (dt > 0) p.parallel_reads_per_s = kThreads * kEach / dt;
  }
  if (p.why_not.empty()) {
    p.reads = kReads;
    p.read_latency_s = total / kReads;
    // Start the sequential read at a random block too, so it is unlikely to follow the last random read.
    const uint64_t max_start = (shard.file_bytes - seq_bytes) / kBlock;
    const uint64_t start = max_start > 0 ? UniformBelow(state, max_start) * kBlock : 0;
    const double t0 = MonotonicSeconds();
    ssize_t n = ::pread(fd, buf, seq_bytes, static_cast<off_t>(start));
    const double dt = MonotonicSeconds() - t0;
    if (n <= 0) {
      p.why_not = std::string("O_DIRECT read failed: ") + std::strerror(errno);
    } else {
      p.sequential_bytes_per_s = dt > 0 ? static_cast<double>(n) / dt : 0;
      p.ok = p.sequential_bytes_per_s > 0;
    }
  }
  std::free(mem);
  ::close(fd);
  return p;
}

ColdProjection ProjectColdCache(const StorageProbe& probe, Access access, Advice advice, uint64_t batch,
                                uint64_t context, unsigned token_bytes, int64_t read_ahead_kb, unsigned threads,
                                double cpu_batch_s) {
  ColdProjection c;
  if (!probe.ok) {
    c.why_not = probe.why_not.empty() ? "storage not probed" : probe.why_not;
    return c;
  }
  const double page = static_cast<double>(PageSize());
  const double window_bytes = static_cast<double>((context + 1) * token_bytes);
  const double pages_spanned = 1.0 + (window_bytes - token_bytes) / page;
  const double lat = probe.read_latency_s;
  const double bw = probe.sequential_bytes_per_s;
  const double b = static_cast<double>(batch);
  double batch_io_s = 0;
  if (access == Access::kMmap && advice == Advice::kNormal) {
    const double ra = read_ahead_kb > 0 ? static_cast<double>(read_ahead_kb) * 1024.0 : 128.0 * 1024.0;
    c.bytes_per_window = std::max(ra, pages_spanned * page);
    c.requests_per_window = 1;
    batch_io_s = b * (lat + c.bytes_per_window / bw);
    c.model = "mmap read-around: one fault per window reads read_ahead_kb (" +
              std::to_string(read_ahead_kb > 0 ? read_ahead_kb : 128) + " KiB), one window after the other";
  } else if (advice == Advice::kRandom && access != Access::kDirect && probe.parallel_reads_per_s > 0) {
    c.bytes_per_window = pages_spanned * page;
    c.requests_per_window = 1;
    batch_io_s = std::max(lat, b * pages_spanned / probe.parallel_reads_per_s);
    c.model = std::string(AccessName(access)) + " + random advice: the batch's windows requested together (" +
              std::to_string(static_cast<int>(probe.parallel_reads_per_s)) + " reads/s at queue depth 8)";
  } else {
    c.bytes_per_window = pages_spanned * page;
    c.requests_per_window = 1;
    batch_io_s = b * (lat + (c.bytes_per_window - page) / bw);
    c.model = std::string(AccessName(access)) + ": one read per window of the pages it spans, one after the other";
  }
  c.read_amplification = c.bytes_per_window / window_bytes;
  c.batch_s = batch_io_s + cpu_batch_s;
  const double n = static_cast<double>(std::max(1u, threads));
  double tokens = n * static_cast<double>(batch * context) / c.batch_s;
  // Bandwidth cap: the storage cannot deliver more than bw bytes/s of fetched data.
  const double fetched_per_token = c.bytes_per_window / static_cast<double>(context);
  tokens = std::min(tokens, bw / fetched_per_token);
  c.tokens_per_s = tokens;
  c.model += "; storage: " + std::to_string(static_cast<int>(lat * 1e6)) + " us per 4 KiB read, " +
             std::to_string(static_cast<int>(bw / 1e6)) + " MB/s sequential (O_DIRECT probe)";
  c.available = true;
  return c;
}

}  // namespace lmkit::dataload
