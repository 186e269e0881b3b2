// Performance notes (debmix.txt 130 MB on the shared 2-core VM; docs/benchmarks/distributed.md):
//  - encoded pieces are held in reused blocks of 1 M ids, as uint16 when the output is uint16 (a growing vector cost
//    more sys time in page faults than the encoding), with warm encoders and reused stream buffers (EncoderPool)
//    from piece to piece, sent with non-blocking sends from two alternating buffers while the next piece is encoded,
//    and claimed one piece ahead (WorkQueue::ClaimAhead). Encode went from +63% to +37-43% wall, of which
//    0.32-0.34 s is the fixed cost of any Open MPI command here (launch, MPI_Init/Finalize): +8-9% net.
#include "lmkit/dist/bpe_encode.h"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "lmkit/bpe/encode/encode_stream.h"
#include "lmkit/bpe/encode/id_output.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_start.h"
#include "lmkit/dist/comm.h"
#include "lmkit/dist/shard.h"
#include "lmkit/dist/work_queue.h"

namespace lmkit::bpe {

namespace {

// Ids travel in messages of at most kBlockIds elements.
constexpr size_t kBlockIds = size_t{1} << 20;

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
  // Makes room for `n` ids in blocks of kBlockIds (to be filled by receives).
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
// and the transfer) and its stream statistics. Buffers are reused from piece to piece: fresh memory is costly here.
struct Piece final : public TokenSink {
  bool narrow = false;  // ids in b16 (else b32)
  BlockList<uint16_t> b16;
  BlockList<uint32_t> b32;
  StreamStats stats;
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
    stats = StreamStats();
    failed = false;
  }
  void Resize(uint64_t n) { narrow ? b16.Resize(n) : b32.Resize(n); }
  // Block i as a message buffer.
  void* Block(size_t i) { return narrow ? static_cast<void*>(b16.blocks[i].data()) : b32.blocks[i].data(); }
  size_t BlockBytes(size_t i) const { return narrow ? b16.blocks[i].size() * 2 : b32.blocks[i].size() * 4; }
  Status WriteTo(IdOutput& out) const {
    for (size_t i = 0; i < blocks(); ++i) {
      if (narrow) {
        LMKIT_RETURN_IF_ERROR(out.Write16(b16.blocks[i].data(), b16.blocks[i].size()));
      } else {
        LMKIT_RETURN_IF_ERROR(out.Write(b32.blocks[i].data(), b32.blocks[i].size()));
      }
    }
    return Status::Ok();
  }
};

// Piece header sent ahead of its ids: index, id count (UINT64_MAX: the piece failed on the sender), bytes, chunks,
// largest chunk, the sender's CPU seconds since its previous header (as bits).
constexpr int kHeadWords = 6;

}  // namespace

Result<EncodeResult> EncodeFileMpi(const EncodeRequest& req, ProgressSink* progress) {
  const double t0 = MonotonicSeconds();
  double c0 = ProcessCpuSeconds();
  std::unique_ptr<Tokenizer> tok;
  EncodeResult rep;
  std::unique_ptr<io::Corpus> corpus;
  std::unique_ptr<EncoderPool> encoders;  // one thread encodes at a time: phase 1's, then the piece worker
  std::unique_ptr<IdOutput> out;
  std::vector<std::string> specials;
  uint64_t pieces = 0;
  Status encoded = Status::Ok();  // the first encoding error of this rank; later pieces are claimed, not encoded
  auto encode_piece = [&](uint64_t k, Piece* piece) {
    piece->Clear();
    piece->narrow = rep.dtype == IdDtype::kU16;
    piece->failed = !encoded.ok();
    if (piece->failed) return;
    Status st = [&]() -> Status {
      LMKIT_ASSIGN_OR_RETURN(ShardRange range, ComputeShardRange(*corpus, ShardSpec{k, pieces}, specials));
      LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<io::ByteSource> source, corpus->Open(range.begin, range.end));
      StreamOptions opts;
      opts.threads = rep.threads;
      opts.chunk_bytes = req.chunk_bytes;
      opts.encoders = encoders.get();
      LMKIT_ASSIGN_OR_RETURN(piece->stats, EncodeStream(*tok, *source, *piece, opts, nullptr));
      return Status::Ok();
    }();
    if (!st.ok()) {
      encoded = std::move(st);
      piece->failed = true;
    }
  };
  Piece own;  // phase 1's piece
  // Phase 1, during MPI start-up: check the arguments, load the tokenizer, open the output on the root (so a bad path
  // fails everywhere at once) and encode piece `rank`.
  auto first = [&](int rank, int size) -> Status {
    out.reset();
    encoded = Status::Ok();
    for (const auto& in : req.corpus.inputs)
      if (in == "-")
        return Status::InvalidArgument(Field("mpi") + " needs an input file (stdin cannot be split between ranks)");
    if (!tok) {
      LMKIT_ASSIGN_OR_RETURN(EncodeSetup setup, PrepareEncode(req));
      tok = std::move(setup.tokenizer);
      rep = std::move(setup.report);
      encoders = std::make_unique<EncoderPool>(*tok);
      LMKIT_ASSIGN_OR_RETURN(io::Corpus c, OpenEncodeCorpus(req));
      corpus = std::make_unique<io::Corpus>(std::move(c));
      for (const auto& sp : tok->enabled_specials()) specials.push_back(sp.text);
    }
    rep.load_seconds = MonotonicSeconds() - t0;
    c0 = ProcessCpuSeconds();  // CPU over the encode phase, as EncodeFile reports it
    pieces = static_cast<uint64_t>(size) * dist::kPiecesPerRank;
    if (rank == 0) {
      LMKIT_ASSIGN_OR_RETURN(out, OpenIdOutput(req, *tok, rep.format, rep.dtype));
    }
    encode_piece(static_cast<uint64_t>(rank), &own);
    return encoded;
  };
  Status st = Status::Ok();
  LMKIT_ASSIGN_OR_RETURN(dist::Comm comm, dist::Comm::Start(first, &st));
  rep.root = comm.root();
  LMKIT_RETURN_IF_ERROR(comm.AgreeOk(std::move(st)));
  dist::WorkQueue queue(comm, pieces);

  if (!comm.root()) {
    // Each piece is sent without waiting (the root buffers what it cannot write yet) while this rank claims and
    // encodes the next one into the other buffer. Blocking sends left rank 1 idle for 0.1-0.14 s of a 1.1 s debmix
    // encode, waiting for the root's MPI thread to get to its receives.
    Piece spare_piece;
    Piece* bufs[2] = {&own, &spare_piece};
    uint64_t heads[2][kHeadWords];
    std::vector<dist::Request> sending[2];
    double cpu_mark = c0;
    int cur = 0;
    for (int64_t k = comm.rank(); k >= 0;) {
      Piece& p = *bufs[cur];
      const double cpu = ProcessCpuSeconds();
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
      std::vector<dist::Request>& reqs = sending[cur];
      reqs.push_back(comm.Isend(head, sizeof(uint64_t) * kHeadWords, 0, dist::kTagSize));
      for (size_t i = 0; !p.failed && i < p.blocks(); ++i)
        reqs.push_back(comm.Isend(p.Block(i), p.BlockBytes(i), 0, dist::kTagData));
      // The claim for the piece after the next one goes out when the next one starts, so its answer is in by the
      // time that piece is done: claims made only when idle cost rank 1 26-50 ms of a 1.1 s debmix encode (the
      // root's MPI thread shares 2 cores with two encoders and answers between its own sleeps).
      k = queue.NextAfterAhead();
      if (k < 0) break;
      queue.ClaimAhead();
      cur ^= 1;
      for (auto& r : sending[cur]) r.Wait();  // the piece before last: its buffer is reused now
      sending[cur].clear();
      encode_piece(static_cast<uint64_t>(k), bufs[cur]);
    }
    for (auto& list : sending)
      for (auto& r : list) r.Wait();
    LMKIT_RETURN_IF_ERROR(comm.AgreeOk(std::move(encoded)));
    return rep;
  }

  // Root: a worker thread encodes pieces taken from the queue; this (MPI) thread answers the other ranks' claims,
  // receives their pieces, and writes every piece in index order as soon as it and all before it are in.
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
  ready[0] = std::make_unique<Piece>(std::move(own));
  SideThread worker([&] {
    for (uint64_t k; (k = queue.TakeLocal()) < pieces;) {
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
  uint64_t head[kHeadWords];
  const bool others = comm.size() > 1;
  dist::Request head_req;
  if (others) head_req = comm.Irecv(head, sizeof head, dist::kAnySource, dist::kTagSize);
  if (progress) progress->Begin("encoding", pieces, "pieces");
  long idle_ns = 20000;
  while (written < pieces || !queue.served()) {
    bool busy = queue.Poll();
    int source = 0;
    if (head_req.active() && head_req.Test(&source)) {
      busy = true;
      auto p = take_spare();
      p->Clear();
      p->narrow = rep.dtype == IdDtype::kU16;
      p->failed = head[1] == UINT64_MAX;
      p->Resize(p->failed ? 0 : head[1]);
      p->stats = StreamStats{head[2], p->size(), head[3], head[4]};
      double cpu;
      std::memcpy(&cpu, &head[5], 8);
      other_cpu += cpu;
      std::vector<dist::Request> recvs;
      for (size_t i = 0; i < p->blocks(); ++i)
        recvs.push_back(comm.Irecv(p->Block(i), p->BlockBytes(i), source, dist::kTagData));
      for (auto& r : recvs) r.Wait();
      const uint64_t k = head[0];
      {
        std::lock_guard<std::mutex> lock(mu);
        ready[k] = std::move(p);
      }
      head_req = comm.Irecv(head, sizeof head, dist::kAnySource, dist::kTagSize);
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
      if (write.ok() && !any_failed) write = p->WriteTo(*out);
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
  head_req.Cancel();  // every piece is in: no header will come
  worker.Join();
  if (progress) progress->Finish();
  Status all = encoded;
  if (all.ok()) all = write;
  if (all.ok() && any_failed) all = Status::Internal("another MPI rank failed (see its message)");
  LMKIT_RETURN_IF_ERROR(comm.AgreeOk(std::move(all)));
  LMKIT_RETURN_IF_ERROR(out->Commit());
  rep.encode_seconds = MonotonicSeconds() - t0 - rep.load_seconds;
  rep.encode_cpu_seconds = ProcessCpuSeconds() - c0 + other_cpu;
  rep.peak_rss_bytes = PeakRssBytes();
  return rep;
}

}  // namespace lmkit::bpe
