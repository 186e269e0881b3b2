// MPI drivers for BPE training and encoding (see bpe_mpi.h). Built only with MPI (bpe_mpi_nompi.cpp otherwise).
//
// Performance notes (debmix.txt 130 MB on the shared 2-core VM; docs/benchmarks/distributed.md):
//  - work pieces (kPiecesPerRank per rank) are handed out at run time: with static halves the rank that landed on the
//    VM's slower vCPU (1.6x slower at times) set the pace. Training overhead went from +35% to +4-11% wall.
//  - MPI_Init took 0.35 s per rank, mostly waiting; the first piece runs meanwhile (InitOverlapped), and single-node
//    jobs get Open MPI's shared-memory transport unless the user chose one (0.13 s), without hwloc's I/O discovery
//    (25 ms a rank). MPI_Finalize stalled 40 ms on Nagle's algorithm in PMIx's loopback connection (NoDelayOnLoopback).
//  - the counts travel in a compact unsorted wire form (varint length, bytes, varint count), not the sorted,
//    checksummed counts-file form: sorting ~1 M keys per rank would cost more than the transfer. The receiver
//    reserves room for both tables first: growing during the merge re-faulted 32 MB, and fresh memory is slow here.
//  - the reduction is a binomial tree, so rank 0 absorbs log2(P) tables rather than P-1.
//  - encoded pieces are held in reused blocks of 1 M ids, as uint16 when the output is uint16 (a growing vector cost
//    more sys time in page faults than the encoding), with warm encoders and reused stream buffers (EncoderPool)
//    from piece to piece, sent with MPI_Isend from two alternating buffers while the next piece is encoded, and
//    claimed one piece ahead (kClaimAhead). Encode went from +63% to +37-43% wall, of which 0.32-0.34 s is the fixed
//    cost of any Open MPI command here (launch, MPI_Init/Finalize): +8-9% net.
//  - waits poll with a growing sleep instead of spinning in blocking MPI calls (see Wait).
#include "lmkit/mpi/bpe_mpi.h"

// The C API only: Open MPI's deprecated C++ bindings do not compile cleanly with -Wextra -Werror.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <mpi.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>

#include "lmkit/bpe/encode_stream.h"
#include "lmkit/bpe/id_output.h"
#include "lmkit/bpe/pretoken_table.h"
#include "lmkit/bpe/shard.h"
#include "lmkit/bpe/tokenizer_files.h"
#include "lmkit/bpe/tokenizer_writer.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_start.h"

namespace lmkit::mpi {

namespace {

constexpr int kTagSize = 1;
constexpr int kTagData = 2;
constexpr int kTagClaim = 3;
// Counting is split into size x kPiecesPerRank pieces handed out at run time, so a rank on a slower core takes fewer:
// with static halves, the rank that landed on this VM's slower vCPU (1.6x slower at times, measured with taskset)
// set the pace while the other waited.
constexpr uint64_t kPiecesPerRank = 8;
constexpr size_t kMaxMessage = size_t{64} << 20;
// Longest sleep between polls while a rank waits for the answer to its claim: it has nothing else to do, and with the
// 1 ms cap of other waits, claims cost rank 1 26-50 ms of a 1.1 s debmix encode.
constexpr long kClaimPollNs = 100000;

// Runs `fn` on a second thread next to the MPI thread, or right away on this one when the system refuses a thread
// (thread_start.h): the work is the same, it only no longer overlaps the MPI calls that follow. Join() waits for it.
class SideThread {
 public:
  explicit SideThread(const std::function<void()>& fn) {
    if (!TryStartThread(thread_, fn)) fn();
  }
  void Join() {
    for (auto& t : thread_) t.join();
    thread_.clear();
  }
  ~SideThread() { Join(); }

 private:
  std::vector<std::thread> thread_;
};

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// PMIx 4.2 (Open MPI 4.1's launcher protocol) talks to the local launcher over loopback TCP and leaves Nagle's
// algorithm on. MPI_Finalize sends it four small messages back to back, so the second waits for the launcher's
// delayed ACK: 40 ms on every run (strace: the launcher's epoll woke 38 ms after the rank's writev). Turning Nagle off
// on this process's loopback TCP sockets removes the stall (finalize: 50-60 ms -> 15-28 ms). Nothing else here uses
// TCP, and Open MPI's own TCP transport sets TCP_NODELAY anyway. Best effort: a socket that refuses is left as it is.
void NoDelayOnLoopback() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return;
  while (const dirent* e = ::readdir(dir)) {
    int fd = -1;
    const std::string_view name(e->d_name);
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc() || fd == ::dirfd(dir)) continue;
    int type = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    sockaddr_storage peer{};
    len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    bool loopback = false;
    if (peer.ss_family == AF_INET) {
      loopback = (ntohl(reinterpret_cast<const sockaddr_in&>(peer).sin_addr.s_addr) >> 24) == 127;
    } else if (peer.ss_family == AF_INET6) {
      const in6_addr& a = reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr;
      loopback = IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
    }
    if (!loopback) continue;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ::closedir(dir);
}

Status EnsureInit(int* rank, int* size) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    // All ranks on one node (Open MPI says so): use the shared-memory transport. The default pml (UCX) probes the
    // network at start-up: MPI_Init took 0.35 s per rank on this machine, 0.13 s with ob1 + vader. A choice the user
    // made through the environment or `mpirun --mca` (which sets the same variables) wins: setenv never overwrites.
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (local && world && std::string_view(local) == world) {
      ::setenv("OMPI_MCA_pml", "ob1", 0);
      ::setenv("OMPI_MCA_btl", "self,vader", 0);
      // Shared memory needs no device topology, but hwloc's I/O discovery runs anyway: it reads every PCI device's
      // config space (4.5 ms a read on this VM) and its GL plugin tries to connect to X displays :0 to :9. Skipping
      // it took 25 ms off each rank's MPI_Init, and that is CPU taken from the first piece.
      ::setenv("HWLOC_COMPONENTS", "-linuxio,-pci,-gl,-opencl", 0);
    }
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      return Status::Internal("MPI_Init_thread failed");
    NoDelayOnLoopback();
    std::atexit(FinalizeAtExit);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return Status::Ok();
}

// The rank and size the launcher put in the environment before MPI_Init: Open MPI's mpirun (OMPI_COMM_WORLD_*),
// Hydra/MPICH/Intel MPI (PMI_*), Slurm's srun (SLURM_PROCID/SLURM_NTASKS). Nothing when none is set or it is invalid.
std::optional<std::pair<int, int>> LauncherRankSize() {
  const std::pair<const char*, const char*> vars[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMI_RANK", "PMI_SIZE"}, {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& [rank_var, size_var] : vars) {
    const char* rv = std::getenv(rank_var);
    const char* sv = std::getenv(size_var);
    if (!rv || !sv) continue;
    int rank = -1, size = -1;
    const std::string_view r(rv), z(sv);
    if (std::from_chars(r.data(), r.data() + r.size(), rank).ec != std::errc() ||
        std::from_chars(z.data(), z.data() + z.size(), size).ec != std::errc() || size < 1 || rank < 0 || rank >= size)
      continue;
    return std::make_pair(rank, size);
  }
  return std::nullopt;
}

// Starts MPI (its error is the return value) and runs work(rank, size) (its status goes to *work_status; it must reset
// whatever it fills, so it can run twice). MPI_Init_thread
// took 0.35 s per rank on this machine, mostly waiting (0.1 s CPU, UCX start-up; docs/benchmarks/distributed.md), on
// jobs of 1-3 s: when the launcher's environment gives the rank, the work runs on a second thread during MPI_Init.
// MPI stays on the calling thread (FUNNELED, and MPI_Finalize must run where MPI_Init did). If MPI then reports
// another rank or size than the environment said, the work runs again with MPI's.
template <typename Fn>
Status InitOverlapped(int* rank, int* size, Fn&& work, Status* work_status) {
  const auto guess = LauncherRankSize();
  int inited = 0;
  MPI_Initialized(&inited);
  if (!guess || inited) {
    LMKIT_RETURN_IF_ERROR(EnsureInit(rank, size));
    *work_status = work(*rank, *size);
    return Status::Ok();
  }
  SideThread worker([&] { *work_status = work(guess->first, guess->second); });
  Status init = EnsureInit(rank, size);
  worker.Join();
  LMKIT_RETURN_IF_ERROR(init);
  if (*rank != guess->first || *size != guess->second) *work_status = work(*rank, *size);
  return Status::Ok();
}

// Waits for a request while sleeping between polls. Blocking MPI calls spin at 100% CPU while they wait (for a rank
// that is still counting, or for rank 0 to get to the receive); on a shared machine, or with ranks oversubscribed,
// that spinning takes CPU from the ranks doing the work (measured: debmix encode, 2 ranks on 2 busy cores, see
// docs/benchmarks/distributed.md). The poll interval grows to 1 ms, which is noise next to the phases waited for.
void Wait(MPI_Request* req, MPI_Status* status = MPI_STATUS_IGNORE, long max_sleep_ns = 1000000) {
  int done = 0;
  MPI_Test(req, &done, status);
  long ns = std::min(20000L, max_sleep_ns);
  while (!done) {
    timespec ts{0, ns};
    ::nanosleep(&ts, nullptr);
    ns = std::min(ns * 2, max_sleep_ns);
    MPI_Test(req, &done, status);
  }
}

// Wait for every request in *reqs (sleeping between polls, as Wait does), then clears it.
void WaitAll(std::vector<MPI_Request>* reqs) {
  for (MPI_Request& req : *reqs) Wait(&req);
  reqs->clear();
}

void Send(const void* p, int count, MPI_Datatype type, int to, int tag) {
  MPI_Request req;
  MPI_Isend(p, count, type, to, tag, MPI_COMM_WORLD, &req);
  Wait(&req);
}

void Recv(void* p, int count, MPI_Datatype type, int from, int tag) {
  MPI_Request req;
  MPI_Irecv(p, count, type, from, tag, MPI_COMM_WORLD, &req);
  Wait(&req);
}

// A claim's message: the next piece now, or the one after the piece about to start (answered only while plenty are
// left, so that the last pieces still go to whichever rank is free first).
constexpr int64_t kClaimNow = 0;
constexpr int64_t kClaimAhead = 1;
constexpr int64_t kClaimRetry = -2;  // answer to kClaimAhead near the end: claim again when free

// Root: answers one claim (`ask`) from `source` with the next index of `next` (shared with the root's own worker), or
// -1 once all `pieces` are taken; a kClaimAhead gets kClaimRetry once fewer than `keep` pieces would be left. Returns
// whether the answer was -1 (that rank is done claiming).
bool AnswerClaim(std::atomic<uint64_t>& next, uint64_t pieces, int source, int64_t ask = kClaimNow, uint64_t keep = 0) {
  int64_t answer;
  if (ask == kClaimAhead) {
    uint64_t k = next.load();
    while (k + keep < pieces && !next.compare_exchange_weak(k, k + 1)) {
    }
    answer = k + keep < pieces ? static_cast<int64_t>(k) : kClaimRetry;
  } else {
    const uint64_t k = next.fetch_add(1);
    answer = k < pieces ? static_cast<int64_t>(k) : -1;
  }
  Send(&answer, 1, MPI_INT64_T, source, kTagClaim);
  return answer == -1;
}

// Root: answers the other ranks' claims until each of the `others` got its -1. `claimed(n)` gets the number of
// pieces handed out so far (for progress).
template <typename Fn>
void ServeClaims(std::atomic<uint64_t>& next, uint64_t pieces, int others, Fn&& claimed) {
  for (int finished = 0; finished < others;) {
    int64_t ask = 0;
    MPI_Request req;
    MPI_Status status;
    MPI_Irecv(&ask, 1, MPI_INT64_T, MPI_ANY_SOURCE, kTagClaim, MPI_COMM_WORLD, &req);
    Wait(&req, &status);
    if (AnswerClaim(next, pieces, status.MPI_SOURCE, ask)) ++finished;
    claimed(std::min(next.load(), pieces));
  }
}

// Other ranks: posts a claim; its answer lands in *k once *req completes.
void PostClaim(int64_t ask, int64_t* k, MPI_Request* req) {
  MPI_Irecv(k, 1, MPI_INT64_T, 0, kTagClaim, MPI_COMM_WORLD, req);
  Send(&ask, 1, MPI_INT64_T, 0, kTagClaim);
}

// Other ranks: the next work piece, or -1 when none is left.
int64_t ClaimPiece() {
  int64_t k = -1;
  MPI_Request req;
  PostClaim(kClaimNow, &k, &req);
  Wait(&req, MPI_STATUS_IGNORE, kClaimPollNs);
  return k;
}

// Collective: ok on every rank only when `st` is ok on every rank.
Status AgreeOk(Status st) {
  int bad = st.ok() ? 0 : 1, any = 0;
  MPI_Request req;
  MPI_Iallreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req);
  Wait(&req);
  if (!st.ok()) return st;
  if (any) return Status::Internal("another MPI rank failed (see its message)");
  return Status::Ok();
}

void SendBytes(const char* p, uint64_t n, int to) {
  Send(&n, 1, MPI_UINT64_T, to, kTagSize);
  for (uint64_t done = 0; done < n;) {
    const int part = static_cast<int>(std::min<uint64_t>(kMaxMessage, n - done));
    Send(p + done, part, MPI_BYTE, to, kTagData);
    done += static_cast<uint64_t>(part);
  }
}

// Receives what SendBytes sent, calling take(data, n) per message.
template <typename Fn>
uint64_t RecvBytes(int from, std::string* buf, Fn&& take) {
  uint64_t n = 0;
  Recv(&n, 1, MPI_UINT64_T, from, kTagSize);
  for (uint64_t done = 0; done < n;) {
    const int part = static_cast<int>(std::min<uint64_t>(kMaxMessage, n - done));
    buf->resize(static_cast<size_t>(part));
    Recv(buf->data(), part, MPI_BYTE, from, kTagData);
    take(buf->data(), static_cast<size_t>(part));
    done += static_cast<uint64_t>(part);
  }
  return n;
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
uint64_t GetVarint(const char*& p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const auto c = static_cast<unsigned char>(*p++);
    v |= uint64_t{c & 0x7Fu} << shift;
    if ((c & 0x80) == 0) return v;
  }
}

// Wire form: varint entry count, then per entry varint length, key bytes, varint count.
std::string PackTable(const bpe::PretokenTable& t) {
  std::string out;
  out.reserve(t.key_bytes() + t.size() * 3 + 10);
  PutVarint(&out, t.size());
  t.ForEach([&](std::string_view key, uint64_t count) {
    PutVarint(&out, key.size());
    out.append(key);
    PutVarint(&out, count);
  });
  return out;
}

// Trusted input (another rank of this program packed it). The table is sized for both first, and the look-ups are
// pipelined behind prefetches (PretokenTable::AddPrefetched); the two made the reduction of debmix's 310k-entry
// halves ~2x faster.
void UnpackInto(std::string_view packed, bpe::PretokenTable* t) {
  const char* p = packed.data();
  const char* end = p + packed.size();
  if (p == end) return;
  t->Reserve(t->size() + GetVarint(p));
  t->AddPrefetched([&](bpe::PretokenTable::Entry* e) {
    if (p == end) return false;
    e->len = GetVarint(p);
    e->key = p;
    p += e->len;
    e->count = GetVarint(p);
    e->prefix = 0;
    std::memcpy(&e->prefix, e->key, e->len < 8 ? e->len : 8);
    e->hash = bpe::PretokenTable::Hash(e->prefix, e->key, e->len);
    return true;
  });
}

double CpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Bytes [begin, end) of a file descriptor (not owned).
class RangeSource final : public bpe::ByteSource {
 public:
  RangeSource(int fd, std::string subject, uint64_t begin, uint64_t end)
      : fd_(fd), subject_(std::move(subject)), pos_(begin), end_(end), size_(end - begin) {}
  Result<size_t> Read(char* dst, size_t capacity) override {
    size_t got = 0;
    while (got < capacity && pos_ < end_) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(capacity - got, end_ - pos_));
      const ssize_t r = ::pread(fd_, dst + got, want, static_cast<off_t>(pos_));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Status::FromErrno(subject_, "cannot read", errno);
      if (r == 0) return Status::Io(subject_, "file shrank while reading");
      got += static_cast<size_t>(r);
      pos_ += static_cast<uint64_t>(r);
    }
    return got;
  }
  uint64_t SizeHint() const override { return size_; }

 private:
  int fd_;
  std::string subject_;
  uint64_t pos_, end_, size_;
};

// Ids travel in messages of at most kBlockIds elements.
constexpr size_t kBlockIds = size_t{1} << 20;

}  // namespace

bool MpiBuilt() { return true; }

Result<MpiTrainResult> TrainBpeMpi(const bpe::BpeTrainOptions& options, const std::string& out_dir,
                                   ProgressSink* progress) {
  MpiTrainResult r;
  bpe::PretokenTable table;
  bpe::BpeTrainStats stats;
  std::unique_ptr<bpe::RangeCounter> counter;
  std::vector<std::string> specials;
  uint64_t pieces = 0, total = 0;
  Status counted = Status::Ok();  // the first counting error of this rank; later pieces are claimed but not counted
  auto count_piece = [&](uint64_t k) {
    if (!counted.ok()) return;
    Result<bpe::ShardRange> range = bpe::ComputeShardRange(options.inputs, bpe::ShardSpec{k, pieces}, specials);
    if (!range.ok()) {
      counted = range.status();
      return;
    }
    total = range->total;
    counted = counter->Count(range->begin, range->end, &stats, nullptr);
  };
  // Phase 1, during MPI start-up (InitOverlapped): check the arguments (every rank checks the same, so argument errors
  // are the same everywhere) and count piece `rank`.
  auto first = [&](int rank, int size) -> Status {
    stats = bpe::BpeTrainStats();
    counter.reset();
    counted = Status::Ok();
    if (options.inputs.empty()) return Status::InvalidArgument("no input files");
    LMKIT_ASSIGN_OR_RETURN(specials, bpe::NormalizeSpecialTokens(options.special_tokens));
    if (options.vocab_size < specials.size() + 256)
      return Status::InvalidArgument(
          "--vocab-size is below the special tokens + 256 bytes every vocabulary starts with");
    pieces = static_cast<uint64_t>(size) * kPiecesPerRank;
    bpe::BpeCountOptions co;
    co.inputs = options.inputs;
    co.special_tokens = options.special_tokens;
    co.threads = options.threads;
    co.block_bytes = options.block_bytes;
    LMKIT_ASSIGN_OR_RETURN(counter, bpe::RangeCounter::Create(co));
    count_piece(static_cast<uint64_t>(rank));
    return counted;
  };
  Status st = Status::Ok();
  LMKIT_RETURN_IF_ERROR(InitOverlapped(&r.rank, &r.size, first, &st));
  r.root = r.rank == 0;
  LMKIT_RETURN_IF_ERROR(AgreeOk(std::move(st)));
  // Phase 2: the other pieces, to whoever asks first. The root counts on a second thread while its MPI thread serves
  // the claims. Counts are sums, so who counted what does not change the table's contents.
  if (r.root) {
    std::atomic<uint64_t> next{static_cast<uint64_t>(r.size)};
    if (progress) progress->Begin("counting", pieces, "pieces");
    SideThread worker([&] {
      for (uint64_t k; (k = next.fetch_add(1)) < pieces;) count_piece(k);
    });
    ServeClaims(next, pieces, r.size - 1, [&](uint64_t n) {
      if (progress) progress->Update(n);
    });
    worker.Join();
    if (progress) progress->Finish();
  } else {
    for (int64_t k; (k = ClaimPiece()) >= 0;) count_piece(static_cast<uint64_t>(k));
  }
  LMKIT_RETURN_IF_ERROR(AgreeOk(std::move(counted)));
  counter->Finish(&table);
  counter.reset();

  // Binomial tree: in round `step`, ranks with that bit set send to rank - step and are done.
  const double t0 = MonotonicSeconds();
  std::string buf;
  for (int step = 1; step < r.size; step <<= 1) {
    if (r.rank & step) {
      const std::string packed = PackTable(table);
      table = bpe::PretokenTable();
      SendBytes(packed.data(), packed.size(), r.rank - step);
      r.root = false;
      return r;
    }
    if (r.rank + step < r.size) {
      std::string packed;
      r.reduce_bytes += RecvBytes(r.rank + step, &buf, [&](const char* p, size_t n) { packed.append(p, n); });
      UnpackInto(packed, &table);
    }
  }
  r.reduce_seconds = MonotonicSeconds() - t0;
  stats.input_bytes = total;
  LMKIT_ASSIGN_OR_RETURN(r.train, bpe::TrainBpeOnCounts(std::move(table), options, stats, progress));
  const double tw = MonotonicSeconds();
  LMKIT_RETURN_IF_ERROR(bpe::WriteTokenizerFiles(r.train.model, out_dir));
  r.write_seconds = MonotonicSeconds() - tw;
  return r;
}

namespace {

// One encoded work piece: its ids in the output's id type (uint16 when the vocabulary fits, which halves the memory
// and the transfer) and its stream statistics. Buffers are reused from piece to piece: fresh memory is costly here.
// Ids in blocks of kBlockIds, kept allocated when cleared: a growing vector re-faulted fresh memory at every doubling,
// which cost more CPU than the encoding of the piece on this VM (sys time 1.45 s against 0.17 s for one process).
template <typename T>
struct BlockList {
  std::vector<std::vector<T>> blocks;  // blocks[0, used) hold ids; the rest are spare
  size_t used = 0;
  uint64_t count = 0;
  void Clear() {
    for (size_t i = 0; i < used; ++i) blocks[i].clear();
    used = 0;
    count = 0;
  }
  void Append(const uint32_t* p, size_t n) {
    while (n > 0) {
      if (used == 0 || blocks[used - 1].size() == kBlockIds) {
        if (used == blocks.size()) {
          blocks.emplace_back();
          blocks.back().reserve(kBlockIds);
        }
        ++used;
      }
      std::vector<T>& b = blocks[used - 1];
      const size_t k = std::min(n, kBlockIds - b.size());
      b.insert(b.end(), p, p + k);  // one converting copy (a push_back per id was 4% of a rank's CPU)
      p += k;
      n -= k;
      count += k;
    }
  }
  // Makes room for `n` ids in blocks of kBlockIds (to be filled by MPI receives).
  void Resize(uint64_t n) {
    Clear();
    count = n;
    for (; n > 0; ++used) {
      if (used == blocks.size()) {
        blocks.emplace_back();
        blocks.back().reserve(kBlockIds);
      }
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, kBlockIds));
      blocks[used].resize(k);
      n -= k;
    }
  }
};

// One encoded work piece: its ids in the output's id type (uint16 when the vocabulary fits, which halves the memory
// and the transfer) and its stream statistics.
struct Piece final : public bpe::TokenSink {
  bool narrow = false;  // ids in b16 (else b32)
  BlockList<uint16_t> b16;
  BlockList<uint32_t> b32;
  bpe::StreamStats stats;
  bool failed = false;
  Status Write(const uint32_t* p, size_t n) override {
    narrow ? b16.Append(p, n) : b32.Append(p, n);
    return Status::Ok();
  }
  uint64_t size() const { return narrow ? b16.count : b32.count; }
  size_t blocks() const { return narrow ? b16.used : b32.used; }
  void Clear() {
    b16.Clear();
    b32.Clear();
    stats = bpe::StreamStats();
    failed = false;
  }
  void Resize(uint64_t n) { narrow ? b16.Resize(n) : b32.Resize(n); }
  // Block i as an MPI buffer.
  void* Block(size_t i) { return narrow ? static_cast<void*>(b16.blocks[i].data()) : b32.blocks[i].data(); }
  int BlockSize(size_t i) const { return static_cast<int>(narrow ? b16.blocks[i].size() : b32.blocks[i].size()); }
  MPI_Datatype Type() const { return narrow ? MPI_UINT16_T : MPI_UINT32_T; }
};

// Piece header sent ahead of its ids: index, id count (UINT64_MAX: the piece failed on the sender), bytes, chunks,
// largest chunk, the sender's CPU seconds since its previous header (as bits).
constexpr int kHeadWords = 6;

Result<MpiEncodeResult> EncodePieces(const bpe::EncodeRequest& req, ProgressSink* progress) {
  MpiEncodeResult r;
  bpe::EncodeReport& rep = r.report;
  const double t0 = MonotonicSeconds();
  double c0 = CpuSeconds();
  std::unique_ptr<bpe::Tokenizer> tok;
  std::unique_ptr<bpe::EncoderPool> encoders;  // one thread encodes at a time: phase 1's, then the piece worker
  std::unique_ptr<bpe::IdOutput> out;
  std::vector<std::string> specials;
  uint64_t pieces = 0;
  Status encoded = Status::Ok();  // the first encoding error of this rank; later pieces are claimed, not encoded
  auto encode_piece = [&](uint64_t k, Piece* piece) {
    piece->Clear();
    piece->narrow = rep.dtype == io::TokenDtype::kU16;
    piece->failed = !encoded.ok();
    if (piece->failed) return;
    const std::vector<std::string> inputs = {req.input};
    Status st = [&]() -> Status {
      LMKIT_ASSIGN_OR_RETURN(bpe::ShardRange range,
                             bpe::ComputeShardRange(inputs, bpe::ShardSpec{k, pieces}, specials));
      const int fd = ::open(req.input.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return Status::FromErrno(req.input, "cannot open", errno);
      ::posix_fadvise(fd, static_cast<off_t>(range.begin), static_cast<off_t>(range.end - range.begin),
                      POSIX_FADV_SEQUENTIAL);
      RangeSource source(fd, req.input, range.begin, range.end);
      bpe::StreamOptions opts;
      opts.threads = rep.threads;
      opts.chunk_bytes = req.chunk_bytes;
      opts.encoders = encoders.get();
      auto stats = bpe::EncodeStream(*tok, source, *piece, opts, nullptr);
      ::close(fd);
      if (!stats.ok()) return stats.status();
      piece->stats = *stats;
      return Status::Ok();
    }();
    if (!st.ok()) {
      encoded = std::move(st);
      piece->failed = true;
    }
  };
  Piece own;  // phase 1's piece
  // Phase 1, during MPI start-up (InitOverlapped): check the arguments, load the tokenizer, open the output on the
  // root (so a bad path fails everywhere at once) and encode piece `rank`.
  auto first = [&](int rank, int size) -> Status {
    out.reset();
    encoded = Status::Ok();
    if (req.input == "-")
      return Status::InvalidArgument("--mpi needs an input file (stdin cannot be split between ranks)");
    if (req.output.empty()) return Status::InvalidArgument("--mpi needs -o FILE (rank 0 writes the one output)");
    if (!tok) {
      LMKIT_ASSIGN_OR_RETURN(tok, bpe::LoadTokenizer(req.tokenizer, req.tokenizer_options));
      encoders = std::make_unique<bpe::EncoderPool>(*tok);
    }
    rep.load_seconds = MonotonicSeconds() - t0;
    c0 = CpuSeconds();  // CPU over the encode phase, as EncodeFile reports it
    rep.tokenizer = tok->description();
    rep.input = req.input;
    rep.output = req.output;
    rep.format = req.format.value_or(bpe::IdFormatFromPath(req.output));
    LMKIT_ASSIGN_OR_RETURN(rep.dtype, bpe::ResolveDtype(req.dtype, *tok));
    rep.threads = std::max(1u, req.threads);
    specials.clear();
    for (const auto& sp : tok->enabled_specials()) specials.push_back(sp.text);
    pieces = static_cast<uint64_t>(size) * kPiecesPerRank;
    if (rank == 0) {
      LMKIT_ASSIGN_OR_RETURN(out, bpe::OpenIdOutput(req, *tok, rep.format, rep.dtype));
    }
    encode_piece(static_cast<uint64_t>(rank), &own);
    return encoded;
  };
  Status st = Status::Ok();
  LMKIT_RETURN_IF_ERROR(InitOverlapped(&r.rank, &r.size, first, &st));
  r.root = r.rank == 0;
  LMKIT_RETURN_IF_ERROR(AgreeOk(std::move(st)));

  if (!r.root) {
    // Each piece is sent without waiting (the root buffers what it cannot write yet) while this rank claims and
    // encodes the next one into the other buffer. Blocking sends left rank 1 idle for 0.1-0.14 s of a 1.1 s debmix
    // encode, waiting for the root's MPI thread to get to its receives.
    Piece spare_piece;
    Piece* bufs[2] = {&own, &spare_piece};
    uint64_t heads[2][kHeadWords];
    std::vector<MPI_Request> sending[2];
    double cpu_mark = c0;
    int cur = 0;
    // A claim for the piece after the current one is posted when the current one starts, so its answer is in by the
    // time the piece is done: claims made only when idle cost rank 1 26-50 ms of a 1.1 s debmix encode (the root's
    // MPI thread shares 2 cores with two encoders and answers between its own sleeps).
    int64_t ahead_k = kClaimRetry;
    MPI_Request ahead_req = MPI_REQUEST_NULL;  // null again once its answer is in (Wait's MPI_Test frees it)
    for (int64_t k = r.rank; k >= 0;) {
      Piece& p = *bufs[cur];
      const double cpu = CpuSeconds();
      const double piece_cpu = cpu - cpu_mark;
      cpu_mark = cpu;
      uint64_t* head = heads[cur];
      const uint64_t words[kHeadWords] = {static_cast<uint64_t>(k),
                                          p.failed ? UINT64_MAX : p.size(),
                                          p.stats.bytes,
                                          p.stats.chunks,
                                          p.stats.largest_chunk,
                                          0};
      std::memcpy(head, words, sizeof words);
      std::memcpy(&head[5], &piece_cpu, 8);
      std::vector<MPI_Request>& reqs = sending[cur];
      reqs.emplace_back();
      MPI_Isend(head, kHeadWords, MPI_UINT64_T, 0, kTagSize, MPI_COMM_WORLD, &reqs.back());
      for (size_t i = 0; !p.failed && i < p.blocks(); ++i) {
        reqs.emplace_back();
        MPI_Isend(p.Block(i), p.BlockSize(i), p.Type(), 0, kTagData, MPI_COMM_WORLD, &reqs.back());
      }
      k = kClaimRetry;
      if (ahead_req != MPI_REQUEST_NULL) {
        Wait(&ahead_req);
        k = ahead_k;
      }
      if (k == kClaimRetry) k = ClaimPiece();
      if (k < 0) break;
      PostClaim(kClaimAhead, &ahead_k, &ahead_req);
      cur ^= 1;
      WaitAll(&sending[cur]);  // the piece before last: its buffer is reused now
      encode_piece(static_cast<uint64_t>(k), bufs[cur]);
    }
    WaitAll(&sending[0]);
    WaitAll(&sending[1]);
    LMKIT_RETURN_IF_ERROR(AgreeOk(std::move(encoded)));
    return r;
  }

  // Root: a worker thread encodes pieces claimed from `next`; this (MPI) thread answers the other ranks' claims,
  // receives their pieces, and writes every piece in index order as soon as it and all before it are in.
  std::atomic<uint64_t> next{static_cast<uint64_t>(r.size)};
  std::mutex mu;
  std::map<uint64_t, std::unique_ptr<Piece>> ready;  // encoded, not yet written
  std::vector<std::unique_ptr<Piece>> spare;         // written, buffers kept for reuse
  auto take_spare = [&]() {
    std::lock_guard<std::mutex> lock(mu);
    if (spare.empty()) return std::make_unique<Piece>();
    auto p = std::move(spare.back());
    spare.pop_back();
    return p;
  };
  { ready[0] = std::make_unique<Piece>(std::move(own)); }
  SideThread worker([&] {
    for (uint64_t k; (k = next.fetch_add(1)) < pieces;) {
      auto p = take_spare();
      encode_piece(k, p.get());
      std::lock_guard<std::mutex> lock(mu);
      ready[k] = std::move(p);
    }
  });
  Status write = Status::Ok();
  bool any_failed = false;
  double other_cpu = 0;
  uint64_t written = 0;
  int finished = 0;
  const int others = r.size - 1;
  int64_t claim_buf = 0;
  uint64_t head[kHeadWords];
  std::vector<MPI_Request> recvs;
  MPI_Request claim_req = MPI_REQUEST_NULL, head_req = MPI_REQUEST_NULL;
  if (others > 0) {
    MPI_Irecv(&claim_buf, 1, MPI_INT64_T, MPI_ANY_SOURCE, kTagClaim, MPI_COMM_WORLD, &claim_req);
    MPI_Irecv(head, kHeadWords, MPI_UINT64_T, MPI_ANY_SOURCE, kTagSize, MPI_COMM_WORLD, &head_req);
  }
  if (progress) progress->Begin("encoding", pieces, "pieces");
  long idle_ns = 20000;
  while (written < pieces || finished < others) {
    bool busy = false;
    int done = 0;
    MPI_Status status;
    if (claim_req != MPI_REQUEST_NULL) {
      MPI_Test(&claim_req, &done, &status);
      if (done) {
        busy = true;
        if (AnswerClaim(next, pieces, status.MPI_SOURCE, claim_buf, static_cast<uint64_t>(r.size))) ++finished;
        if (finished < others)
          MPI_Irecv(&claim_buf, 1, MPI_INT64_T, MPI_ANY_SOURCE, kTagClaim, MPI_COMM_WORLD, &claim_req);
      }
    }
    if (head_req != MPI_REQUEST_NULL) {
      MPI_Test(&head_req, &done, &status);
      if (done) {
        busy = true;
        auto p = take_spare();
        p->Clear();
        p->narrow = rep.dtype == io::TokenDtype::kU16;
        p->failed = head[1] == UINT64_MAX;
        p->Resize(p->failed ? 0 : head[1]);
        p->stats = bpe::StreamStats{head[2], p->size(), head[3], head[4]};
        double cpu;
        std::memcpy(&cpu, &head[5], 8);
        other_cpu += cpu;
        recvs.resize(p->blocks());
        for (size_t i = 0; i < p->blocks(); ++i)
          MPI_Irecv(p->Block(i), p->BlockSize(i), p->Type(), status.MPI_SOURCE, kTagData, MPI_COMM_WORLD, &recvs[i]);
        WaitAll(&recvs);
        const uint64_t k = head[0];
        {
          std::lock_guard<std::mutex> lock(mu);
          ready[k] = std::move(p);
        }
        MPI_Irecv(head, kHeadWords, MPI_UINT64_T, MPI_ANY_SOURCE, kTagSize, MPI_COMM_WORLD, &head_req);
      }
    }
    // Write what is in order.
    for (;;) {
      std::unique_ptr<Piece> p;
      {
        std::lock_guard<std::mutex> lock(mu);
        auto it = ready.find(written);
        if (it == ready.end()) break;
        p = std::move(it->second);
        ready.erase(it);
      }
      busy = true;
      any_failed |= p->failed;
      if (write.ok() && !any_failed) {
        for (size_t i = 0; i < p->blocks() && write.ok(); ++i) {
          if (p->narrow) {
            write = out->Write16(p->b16.blocks[i].data(), p->b16.blocks[i].size());
          } else {
            write = out->Write(p->b32.blocks[i].data(), p->b32.blocks[i].size());
          }
        }
      }
      rep.bytes += p->stats.bytes;
      rep.tokens += p->stats.tokens;
      rep.chunks += p->stats.chunks;
      rep.largest_chunk = std::max(rep.largest_chunk, p->stats.largest_chunk);
      ++written;
      if (progress) progress->Update(written);
      std::lock_guard<std::mutex> lock(mu);
      spare.push_back(std::move(p));
    }
    if (busy) {
      idle_ns = 20000;
    } else {
      timespec ts{0, idle_ns};
      ::nanosleep(&ts, nullptr);
      idle_ns = std::min(idle_ns * 2, 1000000L);
    }
  }
  if (head_req != MPI_REQUEST_NULL) {  // every piece is in: no header will come
    MPI_Cancel(&head_req);
    MPI_Wait(&head_req, MPI_STATUS_IGNORE);
  }
  worker.Join();
  if (progress) progress->Finish();
  Status all = encoded;
  if (all.ok()) all = write;
  if (all.ok() && any_failed) all = Status::Internal("another MPI rank failed (see its message)");
  LMKIT_RETURN_IF_ERROR(AgreeOk(std::move(all)));
  LMKIT_RETURN_IF_ERROR(out->Commit());
  rep.encode_seconds = MonotonicSeconds() - t0 - rep.load_seconds;
  rep.encode_cpu_seconds = CpuSeconds() - c0 + other_cpu;
  rep.peak_rss_bytes = PeakRssBytes();
  return r;
}

}  // namespace

Result<MpiEncodeResult> EncodeFileMpi(const bpe::EncodeRequest& req, ProgressSink* progress) {
  return EncodePieces(req, progress);
}

}  // namespace lmkit::mpi
