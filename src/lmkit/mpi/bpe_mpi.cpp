// MPI drivers for BPE training and encoding (see bpe_mpi.h). Built only with MPI (bpe_mpi_nompi.cpp otherwise).
//
// Performance notes (debmix.txt 130 MB on the shared 2-core machine; docs/benchmarks/distributed.md):
//  - the counts travel in a compact unsorted wire form (varint length, bytes, varint count), not the sorted,
//    checksummed counts-file form: sorting ~1 M keys per rank would cost more than the transfer.
//  - the reduction is a binomial tree, so rank 0 absorbs log2(P) tables rather than P-1.
//  - rank 0 streams its own ids straight into the output (OpenIdOutput, the sinks of a single-process encode, so the
//    file is byte-identical); the other ranks hold theirs in fixed blocks of 1 M ids, as uint16 when the output is
//    uint16 (a growing vector of uint32 cost +0.5 s CPU per 20 MB on this VM, in page faults and copies), and send
//    them in rank order.
//  - waits poll with a growing sleep instead of spinning in blocking MPI calls (see Wait).
#include "lmkit/mpi/bpe_mpi.h"

// The C API only: Open MPI's deprecated C++ bindings do not compile cleanly with -Wextra -Werror.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <type_traits>

#include "lmkit/bpe/pretoken_table.h"
#include "lmkit/bpe/shard.h"
#include "lmkit/bpe/tokenizer_files.h"
#include "lmkit/bpe/tokenizer_writer.h"
#include "lmkit/common/sysinfo.h"

namespace lmkit::mpi {

namespace {

constexpr int kTagSize = 1;
constexpr int kTagData = 2;
constexpr size_t kMaxMessage = size_t{64} << 20;

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Status EnsureInit(int* rank, int* size) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      return Status::Internal("MPI_Init_thread failed");
    std::atexit(FinalizeAtExit);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return Status::Ok();
}

// Waits for a request while sleeping between polls. Blocking MPI calls spin at 100% CPU while they wait (for a rank
// that is still counting, or for rank 0 to get to the receive); on a shared machine, or with ranks oversubscribed,
// that spinning takes CPU from the ranks doing the work (measured: debmix encode, 2 ranks on 2 busy cores, see
// docs/benchmarks/distributed.md). The poll interval grows to 1 ms, which is noise next to the phases waited for.
void Wait(MPI_Request* req) {
  int done = 0;
  MPI_Test(req, &done, MPI_STATUS_IGNORE);
  long ns = 20000;
  while (!done) {
    timespec ts{0, ns};
    ::nanosleep(&ts, nullptr);
    ns = std::min(ns * 2, 1000000L);
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
  }
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

std::string PackTable(const bpe::PretokenTable& t) {
  std::string out;
  out.reserve(t.key_bytes() + t.size() * 3);
  t.ForEach([&](std::string_view key, uint64_t count) {
    PutVarint(&out, key.size());
    out.append(key);
    PutVarint(&out, count);
  });
  return out;
}

// Trusted input (another rank of this program packed it).
void UnpackInto(std::string_view packed, bpe::PretokenTable* t) {
  const char* p = packed.data();
  const char* end = p + packed.size();
  while (p < end) {
    const uint64_t len = GetVarint(p);
    const std::string_view key(p, len);
    p += len;
    t->Add(key, GetVarint(p));
  }
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

// Holds a rank's ids until rank 0 takes them, in fixed blocks: a growing vector would copy and re-fault its memory
// at every doubling (measured: +0.5 s CPU per 20 MB of input on this VM, where page faults are expensive). T is the
// output's id type (uint16 when the vocabulary fits), which halves the memory and the transfer.
constexpr size_t kBlockIds = size_t{1} << 20;
template <typename T>
MPI_Datatype MpiType();
template <>
MPI_Datatype MpiType<uint16_t>() { return MPI_UINT16_T; }
template <>
MPI_Datatype MpiType<uint32_t>() { return MPI_UINT32_T; }

// Sends a BlockSink's ids to rank 0, freeing each block once sent.
template <typename T>
void SendBlocks(std::vector<std::vector<T>>& blocks) {
  for (auto& b : blocks) {
    Send(b.data(), static_cast<int>(b.size()), MpiType<T>(), 0, kTagData);
    std::vector<T>().swap(b);
  }
}

// Receives `count` ids from `from` in blocks of kBlockIds and writes them to `out`; after a write error it keeps
// receiving (so the sender can finish) and returns the first error.
template <typename T>
Status RecvBlocks(int from, uint64_t count, bpe::IdOutput& out) {
  std::vector<T> block(std::min<uint64_t>(count, kBlockIds));
  std::vector<uint32_t> wide;
  Status write = Status::Ok();
  for (uint64_t left = count; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, kBlockIds));
    Recv(block.data(), static_cast<int>(n), MpiType<T>(), from, kTagData);
    if (write.ok()) {
      if constexpr (std::is_same_v<T, uint32_t>) {
        write = out.Write(block.data(), n);
      } else {
        wide.assign(block.begin(), block.begin() + static_cast<std::ptrdiff_t>(n));
        write = out.Write(wide.data(), n);
      }
    }
    left -= n;
  }
  return write;
}

template <typename T>
class BlockSink final : public bpe::TokenSink {
 public:
  Status Write(const uint32_t* ids, size_t count) override {
    while (count > 0) {
      if (blocks_.empty() || blocks_.back().size() == kBlockIds) {
        blocks_.emplace_back();
        blocks_.back().reserve(kBlockIds);
      }
      auto& b = blocks_.back();
      const size_t n = std::min(count, kBlockIds - b.size());
      for (size_t i = 0; i < n; ++i) b.push_back(static_cast<T>(ids[i]));
      ids += n;
      count -= n;
      total_ += n;
    }
    return Status::Ok();
  }
  uint64_t total() const { return total_; }
  std::vector<std::vector<T>>& blocks() { return blocks_; }

 private:
  std::vector<std::vector<T>> blocks_;
  uint64_t total_ = 0;
};

}  // namespace

bool MpiBuilt() { return true; }

Result<MpiTrainResult> TrainBpeMpi(const bpe::BpeTrainOptions& options, const std::string& out_dir,
                                   ProgressSink* progress) {
  MpiTrainResult r;
  LMKIT_RETURN_IF_ERROR(EnsureInit(&r.rank, &r.size));
  r.root = r.rank == 0;
  bpe::PretokenTable table;
  bpe::BpeTrainStats stats;
  bpe::ShardRange range;
  // Every rank validates the same arguments, so argument errors are the same everywhere; input errors may differ.
  Status st = [&]() -> Status {
    if (options.inputs.empty()) return Status::Usage("no input files");
    LMKIT_ASSIGN_OR_RETURN(auto specials, bpe::NormalizeSpecialTokens(options.special_tokens));
    if (options.vocab_size < specials.size() + 256)
      return Status::Usage("--vocab-size is below the special tokens + 256 bytes every vocabulary starts with");
    const bpe::ShardSpec shard{static_cast<uint64_t>(r.rank), static_cast<uint64_t>(r.size)};
    LMKIT_ASSIGN_OR_RETURN(range, bpe::ComputeShardRange(options.inputs, shard, specials));
    bpe::BpeCountOptions co;
    co.inputs = options.inputs;
    co.special_tokens = options.special_tokens;
    co.threads = options.threads;
    co.block_bytes = options.block_bytes;
    co.begin = range.begin;
    co.end = range.end;
    return bpe::CountPretokens(co, &table, &stats, r.root ? progress : nullptr);
  }();
  LMKIT_RETURN_IF_ERROR(AgreeOk(std::move(st)));

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
  stats.input_bytes = range.total;
  LMKIT_ASSIGN_OR_RETURN(r.train, bpe::TrainBpeOnCounts(std::move(table), options, stats, progress));
  const double tw = MonotonicSeconds();
  LMKIT_RETURN_IF_ERROR(bpe::WriteTokenizerFiles(r.train.model, out_dir));
  r.write_seconds = MonotonicSeconds() - tw;
  return r;
}

Result<MpiEncodeResult> EncodeFileMpi(const bpe::EncodeRequest& req, ProgressSink* progress) {
  MpiEncodeResult r;
  LMKIT_RETURN_IF_ERROR(EnsureInit(&r.rank, &r.size));
  r.root = r.rank == 0;
  bpe::EncodeReport& rep = r.report;
  const double t0 = MonotonicSeconds();
  double c0 = CpuSeconds();
  std::unique_ptr<bpe::Tokenizer> tok;
  std::unique_ptr<bpe::IdOutput> out;
  // Ranks other than 0 hold their ids (as uint16 when the output is uint16); rank 0 writes its own to the output.
  BlockSink<uint16_t> held16;
  BlockSink<uint32_t> held32;
  bpe::StreamStats stats;
  int fd = -1;
  Status st = [&]() -> Status {
    if (req.input == "-") return Status::Usage("--mpi needs an input file (stdin cannot be split between ranks)");
    if (req.output.empty()) return Status::Usage("--mpi needs -o FILE (rank 0 writes the one output)");
    LMKIT_ASSIGN_OR_RETURN(tok, bpe::LoadTokenizer(req.tokenizer, req.tokenizer_options));
    rep.load_seconds = MonotonicSeconds() - t0;
    c0 = CpuSeconds();  // CPU over the encode phase, as EncodeFile reports it
    rep.tokenizer = tok->description();
    rep.input = req.input;
    rep.output = req.output;
    rep.format = req.format.value_or(bpe::IdFormatFromPath(req.output));
    LMKIT_ASSIGN_OR_RETURN(rep.dtype, bpe::ResolveDtype(req.dtype, *tok));
    rep.threads = std::max(1u, req.threads);
    std::vector<std::string> specials;
    for (const auto& s : tok->enabled_specials()) specials.push_back(s.text);
    const bpe::ShardSpec shard{static_cast<uint64_t>(r.rank), static_cast<uint64_t>(r.size)};
    const std::vector<std::string> inputs = {req.input};
    LMKIT_ASSIGN_OR_RETURN(bpe::ShardRange range, bpe::ComputeShardRange(inputs, shard, specials));
    // Rank 0 opens the output before the others hand over their ids, so a bad path fails everywhere at once.
    if (r.root) {
      LMKIT_ASSIGN_OR_RETURN(out, bpe::OpenIdOutput(req, *tok, rep.format, rep.dtype));
    }
    fd = ::open(req.input.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(req.input, "cannot open", errno);
    ::posix_fadvise(fd, static_cast<off_t>(range.begin), static_cast<off_t>(range.end - range.begin),
                    POSIX_FADV_SEQUENTIAL);
    RangeSource source(fd, req.input, range.begin, range.end);
    bpe::StreamOptions opts;
    opts.threads = rep.threads;
    opts.chunk_bytes = req.chunk_bytes;
    bpe::TokenSink& sink = r.root                           ? static_cast<bpe::TokenSink&>(*out)
                           : rep.dtype == bpe::IdDtype::kU16 ? static_cast<bpe::TokenSink&>(held16)
                                                              : static_cast<bpe::TokenSink&>(held32);
    LMKIT_ASSIGN_OR_RETURN(stats, bpe::EncodeStream(*tok, source, sink, opts, r.root ? progress : nullptr));
    return Status::Ok();
  }();
  if (fd >= 0) ::close(fd);
  LMKIT_RETURN_IF_ERROR(AgreeOk(std::move(st)));

  // Per-rank summary sent ahead of the ids: tokens, bytes, chunks, largest chunk, CPU seconds (as bits).
  if (!r.root) {
    const double cpu = CpuSeconds() - c0;
    uint64_t head[5] = {held16.total() + held32.total(), stats.bytes, stats.chunks, stats.largest_chunk, 0};
    std::memcpy(&head[4], &cpu, 8);
    Send(head, 5, MPI_UINT64_T, 0, kTagSize);
    SendBlocks(held16.blocks());
    SendBlocks(held32.blocks());
    r.root = false;
    return r;
  }
  Status write = Status::Ok();
  rep.bytes = stats.bytes;
  rep.tokens = stats.tokens;
  rep.chunks = stats.chunks;
  rep.largest_chunk = stats.largest_chunk;
  double other_cpu = 0;
  for (int from = 1; from < r.size; ++from) {
    uint64_t head[5];
    Recv(head, 5, MPI_UINT64_T, from, kTagSize);
    rep.tokens += head[0];
    rep.bytes += head[1];
    rep.chunks += head[2];
    rep.largest_chunk = std::max(rep.largest_chunk, head[3]);
    double cpu;
    std::memcpy(&cpu, &head[4], 8);
    other_cpu += cpu;
    // Blocks of kBlockIds ids, the last one shorter, of the type the sender held.
    Status st = rep.dtype == bpe::IdDtype::kU16 ? RecvBlocks<uint16_t>(from, head[0], *out)
                                                : RecvBlocks<uint32_t>(from, head[0], *out);
    if (write.ok()) write = std::move(st);
  }
  LMKIT_RETURN_IF_ERROR(write);
  LMKIT_RETURN_IF_ERROR(out->Commit());
  rep.encode_seconds = MonotonicSeconds() - t0 - rep.load_seconds;
  rep.encode_cpu_seconds = CpuSeconds() - c0 + other_cpu;
  rep.peak_rss_bytes = PeakRssBytes();
  return r;
}

}  // namespace lmkit::mpi
