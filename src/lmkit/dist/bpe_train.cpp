// Performance notes (debmix.txt 130 MB on the shared 2-core VM; docs/benchmarks/distributed.md):
//  - work pieces (8 per rank) are handed out at run time: with static halves the rank that landed on the VM's slower
//    vCPU (1.6x slower at times) set the pace. Training overhead went from +35% to +4-11% wall.
//  - the counts travel in a compact unsorted wire form (varint length, bytes, varint count), not the sorted,
//    checksummed counts-file form: sorting ~1 M keys per rank would cost more than the transfer. The receiver
//    reserves room for both tables first: growing during the merge re-faulted 32 MB, and fresh memory is slow here.
//  - the reduction is a binomial tree, so rank 0 absorbs log2(P) tables rather than P-1.
#include "lmkit/dist/bpe_train.h"

#include <cstring>
#include <memory>

#include "lmkit/bpe/files/tokenizer_writer.h"
#include "lmkit/bpe/train/pretoken_table.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_start.h"
#include "lmkit/dist/comm.h"
#include "lmkit/dist/shard.h"
#include "lmkit/dist/wire.h"
#include "lmkit/dist/work_queue.h"

namespace lmkit::bpe {

namespace {

// Wire form: varint bytes of text counted, varint entry count, then per entry varint length, key bytes, varint count.
std::string PackTable(const PretokenTable& t, uint64_t text_bytes) {
  std::string out;
  out.reserve(t.key_bytes() + t.size() * 3 + 20);
  dist::PutVarint(&out, text_bytes);
  dist::PutVarint(&out, t.size());
  t.ForEach([&](std::string_view key, uint64_t count) {
    dist::PutVarint(&out, key.size());
    out.append(key);
    dist::PutVarint(&out, count);
  });
  return out;
}

// The table is sized for both first, and the look-ups are pipelined behind prefetches (PretokenTable::AddPrefetched);
// the two made the reduction of debmix's 310k-entry halves ~2x faster. Another rank of this program packed the bytes,
// but they are checked all the same (a bad form is kInternal).
Status UnpackInto(std::string_view packed, PretokenTable* t, uint64_t* text_bytes) {
  const char* p = packed.data();
  const char* end = p + packed.size();
  uint64_t n = 0, bytes = 0;
  if (!dist::GetVarint(&p, end, &bytes) || !dist::GetVarint(&p, end, &n))
    return Status::Internal("MPI: damaged counts from another rank");
  *text_bytes += bytes;
  t->Reserve(t->size() + n);
  bool bad = false;
  t->AddPrefetched([&](PretokenTable::Entry* e) {
    if (p == end) return false;
    uint64_t len = 0, count = 0;
    if (!dist::GetVarint(&p, end, &len) || len == 0 || len > static_cast<uint64_t>(end - p)) {
      bad = true;
      return false;
    }
    e->key = p;
    e->len = len;
    p += len;
    if (!dist::GetVarint(&p, end, &count)) {
      bad = true;
      return false;
    }
    e->count = count;
    e->prefix = 0;
    std::memcpy(&e->prefix, e->key, e->len < 8 ? e->len : 8);
    e->hash = PretokenTable::Hash(e->prefix, e->key, e->len);
    return true;
  });
  return bad ? Status::Internal("MPI: damaged counts from another rank") : Status::Ok();
}

}  // namespace

Result<MpiTrainResult> TrainBpeMpi(const BpeTrainOptions& options, const std::string& out_dir, ProgressSink* progress) {
  MpiTrainResult r;
  PretokenTable table;
  BpeTrainStats stats;
  std::unique_ptr<RangeCounter> counter;
  uint64_t pieces = 0;
  Status counted = Status::Ok();  // the first counting error of this rank; later pieces are claimed but not counted
  auto count_piece = [&](uint64_t k) {
    if (!counted.ok()) return;
    Result<ShardRange> range = ComputeShardRange(counter->corpus(), ShardSpec{k, pieces}, counter->specials());
    if (!range.ok()) {
      counted = range.status();
      return;
    }
    counted = counter->Count(range->begin, range->end, &stats, nullptr);
  };
  // Phase 1, during MPI start-up: check the arguments (every rank checks the same, so argument errors are the same
  // everywhere) and count piece `rank`.
  auto first = [&](int rank, int size) -> Status {
    stats = BpeTrainStats();
    counter.reset();
    counted = Status::Ok();
    LMKIT_RETURN_IF_ERROR(CheckedSpecials(options).status());
    pieces = static_cast<uint64_t>(size) * dist::kPiecesPerRank;
    BpeCountOptions co;
    co.corpus = options.corpus;
    co.special_tokens = options.special_tokens;
    co.threads = options.threads;
    co.block_bytes = options.block_bytes;
    LMKIT_ASSIGN_OR_RETURN(counter, RangeCounter::Create(co));
    count_piece(static_cast<uint64_t>(rank));
    return counted;
  };
  Status st = Status::Ok();
  LMKIT_ASSIGN_OR_RETURN(dist::Comm comm, dist::Comm::Start(first, &st));
  r.rank = comm.rank();
  r.size = comm.size();
  r.root = comm.root();
  LMKIT_RETURN_IF_ERROR(comm.AgreeOk(std::move(st)));
  // Phase 2: the other pieces, to whoever asks first. The root counts on a second thread while its MPI thread serves
  // the claims. Counts are sums, so who counted what does not change the table's contents.
  {
    dist::WorkQueue queue(comm, pieces);
    if (r.root) {
      if (progress) progress->Begin("counting", pieces, "pieces");
      SideThread worker([&] {
        for (uint64_t k; (k = queue.TakeLocal()) < pieces;) count_piece(k);
      });
      queue.Serve([&](uint64_t n) {
        if (progress) progress->Update(n);
      });
      worker.Join();
      if (progress) progress->Finish();
    } else {
      for (int64_t k; (k = queue.Claim()) >= 0;) count_piece(static_cast<uint64_t>(k));
    }
  }
  LMKIT_RETURN_IF_ERROR(comm.AgreeOk(std::move(counted)));
  counter->Finish(&table);
  counter.reset();

  // Binomial tree: in round `step`, ranks with that bit set send to rank - step and are done.
  const double t0 = MonotonicSeconds();
  for (int step = 1; step < r.size; step <<= 1) {
    if (r.rank & step) {
      const std::string packed = PackTable(table, stats.input_bytes);
      table = PretokenTable();
      comm.SendBytes(packed.data(), packed.size(), r.rank - step);
      r.root = false;
      return r;
    }
    if (r.rank + step < r.size) {
      std::string packed;
      r.reduce_bytes += comm.RecvBytes(r.rank + step, [&](const char* p, size_t n) { packed.append(p, n); });
      LMKIT_RETURN_IF_ERROR(UnpackInto(packed, &table, &stats.input_bytes));
    }
  }
  r.reduce_seconds = MonotonicSeconds() - t0;
  LMKIT_ASSIGN_OR_RETURN(r.train, TrainBpeOnCounts(std::move(table), options, stats, progress));
  const double tw = MonotonicSeconds();
  LMKIT_RETURN_IF_ERROR(WriteTokenizerFiles(r.train.model, out_dir));
  r.write_seconds = MonotonicSeconds() - tw;
  return r;
}

}  // namespace lmkit::bpe
