// What a run on a warm page cache would do on a cold one (a dataset larger than RAM), without evicting anything.
//
// ProbeStorage measures the device under a token file with O_DIRECT reads, which bypass the page cache (nothing is
// evicted, nothing cached): 32 random 4 KiB reads at queue depth 1 (latency), 64 more from 8 threads at once (reads per
// second at queue depth 8) and one sequential read of up to 8 MiB (bandwidth). ProjectColdCache turns that into a
// per-batch time from how each access mode fetches a batch of random windows:
//   mmap + normal advice  one fault per window that reads around it: read_ahead_kb in one request, one window after
//                         the other (B × (latency + ra ÷ bandwidth));
//   pread + normal        one request per window for the pages it spans, one after the other (B × latency);
//   direct                the same as pread + normal (O_DIRECT reads are synchronous);
//   random advice         every window's pages are requested up front (WILLNEED), so the B requests overlap: the batch
//                         costs B × pages spanned ÷ (reads/s at queue depth 8), at least one latency.
// Expected pages spanned by a window of w bytes at a random offset: 1 + (w − token size) ÷ page. N threads are assumed
// to overlap their reads fully, capped by the bandwidth. It is a model; `--cache cold-each` measures the real thing.
//
// Contract: ProbeStorage never fails: `ok` false and `why_not` say why (no O_DIRECT on this file system, a read error,
// a file under 64 KiB). Pure otherwise; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "lmkit/dataload/token_reader.h"
#include "lmkit/dataload/token_shards.h"

namespace lmkit::dataload {

struct StorageProbe {
  bool ok = false;
  std::string why_not;
  uint32_t reads = 0;
  double read_latency_s = 0;        // mean of the 4 KiB random reads at queue depth 1
  double parallel_reads_per_s = 0;  // 4 KiB random reads per second with 8 in flight
  double sequential_bytes_per_s = 0;
};

StorageProbe ProbeStorage(const TokenShard& shard, uint64_t seed);

struct ColdProjection {
  bool available = false;
  std::string why_not;
  double bytes_per_window = 0;  // bytes fetched from storage per window
  double requests_per_window = 0;
  double read_amplification = 0;  // fetched ÷ useful
  double batch_s = 0;             // one thread, storage plus the measured CPU time per batch
  double tokens_per_s = 0;        // with `threads` threads
  std::string model;              // one line: how the figure was obtained
};

ColdProjection ProjectColdCache(const StorageProbe& probe, Access access, Advice advice, uint64_t batch,
                                uint64_t context, unsigned token_bytes, int64_t read_ahead_kb, unsigned threads,
                                double cpu_batch_s);

}  // namespace lmkit::dataload
