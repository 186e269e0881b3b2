#include "lmkit/dist/work_queue.h"

#include <algorithm>

namespace lmkit::dist {

namespace {

// A claim's message: the next piece now, or the one after the piece about to start.
constexpr int64_t kClaimNow = 0;
constexpr int64_t kClaimAhead = 1;
constexpr int64_t kClaimRetry = -2;  // the answer to kClaimAhead near the end: claim again when free
// Longest sleep between polls while a rank waits for the answer to its claim: it has nothing else to do, and with the
// 1 ms cap of other waits, claims cost rank 1 26-50 ms of a 1.1 s debmix encode.
constexpr long kClaimPollNs = 100000;

}  // namespace

WorkQueue::WorkQueue(const Comm& comm, uint64_t pieces)
    : comm_(comm), pieces_(pieces), next_(static_cast<uint64_t>(comm.size())) {
  if (comm_.root() && !served()) claim_ = comm_.Irecv(&ask_, sizeof ask_, kAnySource, kTagClaim);
}

WorkQueue::~WorkQueue() {
  claim_.Cancel();
  ahead_req_.Cancel();
}

void WorkQueue::Answer(int source) {
  int64_t answer;
  if (ask_ == kClaimAhead) {
    const uint64_t keep = static_cast<uint64_t>(comm_.size());
    uint64_t k = next_.load();
    while (k + keep < pieces_ && !next_.compare_exchange_weak(k, k + 1)) {
    }
    answer = k + keep < pieces_ ? static_cast<int64_t>(k) : kClaimRetry;
  } else {
    const uint64_t k = next_.fetch_add(1);
    answer = k < pieces_ ? static_cast<int64_t>(k) : -1;
  }
  comm_.Send(&answer, sizeof answer, source, kTagClaim);
  if (answer == -1) ++finished_;
  if (!served()) claim_ = comm_.Irecv(&ask_, sizeof ask_, kAnySource, kTagClaim);
}

void WorkQueue::Serve(const std::function<void(uint64_t)>& claimed) {
  while (!served()) {
    int source = 0;
    claim_.Wait(&source);
    Answer(source);
    claimed(std::min(next_.load(), pieces_));
  }
}

bool WorkQueue::Poll() {
  if (served()) return false;
  int source = 0;
  if (!claim_.Test(&source)) return false;
  Answer(source);
  return true;
}

int64_t WorkQueue::Claim() {
  int64_t k = -1;
  Request r = comm_.Irecv(&k, sizeof k, 0, kTagClaim);
  comm_.Send(&kClaimNow, sizeof kClaimNow, 0, kTagClaim);
  r.Wait(nullptr, kClaimPollNs);
  return k;
}

void WorkQueue::ClaimAhead() {
  ahead_req_ = comm_.Irecv(&ahead_, sizeof ahead_, 0, kTagClaim);
  comm_.Send(&kClaimAhead, sizeof kClaimAhead, 0, kTagClaim);
}

int64_t WorkQueue::NextAfterAhead() {
  int64_t k = kClaimRetry;
  if (ahead_req_.active()) {
    ahead_req_.Wait();
    k = ahead_;
  }
  return k == kClaimRetry ? Claim() : k;
}

}  // namespace lmkit::dist
