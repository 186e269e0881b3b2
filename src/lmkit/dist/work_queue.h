// Work pieces handed out at run time: rank r starts with piece r, then each rank asks rank 0 for the next piece when
// it finishes one, so a rank on a slower core or a busier node takes fewer (with one static share per rank, the rank
// that landed on this VM's slower vCPU, 1.6x slower at times, set the pace while the others waited).
//
// Contract: every rank makes a WorkQueue with the same `pieces` (at least comm.size()) after Comm::Start. The root
// hands out pieces size, size+1, ... to its own workers (TakeLocal, any thread) and to the other ranks' claims (Serve
// or Poll, on the MPI thread) until each other rank has been told that none is left (-1); each piece is handed out
// once. Other ranks call Claim, or ClaimAhead + NextAfterAhead to have the next piece's answer in by the time the
// current one is done; a claim ahead is answered only while at least size() pieces remain, so the last pieces still go
// to whichever rank is free first. Not thread-safe except TakeLocal.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "lmkit/dist/comm.h"

namespace lmkit::dist {

// Pieces per rank that drivers cut their input into: enough that a slow rank's share can move to the others.
inline constexpr uint64_t kPiecesPerRank = 8;

class WorkQueue {
 public:
  WorkQueue(const Comm& comm, uint64_t pieces);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  uint64_t pieces() const { return pieces_; }

  // Root: the next piece for a worker of its own, >= pieces() when none is left. Thread-safe.
  uint64_t TakeLocal() { return next_.fetch_add(1); }
  // Root: answers claims until every other rank has been told that none is left; claimed(n) after each answer, with
  // the number of pieces handed out so far.
  void Serve(const std::function<void(uint64_t)>& claimed);
  // Root: answers one claim if one has arrived, without waiting; whether it did.
  bool Poll();
  // Root: whether every other rank has been told that none is left.
  bool served() const { return finished_ >= comm_.size() - 1; }

  // Other ranks: the next piece, or -1 when none is left.
  int64_t Claim();
  // Other ranks: asks now for the piece after the one about to start.
  void ClaimAhead();
  // Other ranks: the answer to ClaimAhead (waiting for it), or a Claim's when there was none or it was refused.
  int64_t NextAfterAhead();

 private:
  void Answer(int source);

  const Comm& comm_;
  uint64_t pieces_;
  std::atomic<uint64_t> next_;
  int finished_ = 0;
  int64_t ask_ = 0;  // root: the claim being received
  Request claim_;    // root: the posted receive of the next claim
  int64_t ahead_ = 0;
  Request ahead_req_;  // other ranks: the answer to ClaimAhead
};

}  // namespace lmkit::dist
