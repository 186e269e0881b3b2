// The MPI job this process belongs to (MPI_COMM_WORLD), behind an interface without mpi.h: comm_mpi.cpp implements it
// with MPI, comm_nompi.cpp (builds without MPI) only says so. docs/distributed.md.
//
// Contract: Comm::Start starts MPI once per process (MPI_Init_thread with MPI_THREAD_FUNNELED: every MPI call stays on
// the thread that started it; MPI_Finalize runs at exit) and runs work(rank, size) meanwhile on a second thread when
// the launcher's environment names the rank (OMPI_COMM_WORLD_*, PMI_*, SLURM_PROCID/NTASKS); if MPI then reports
// another rank or size, work runs again with MPI's (so work must reset what it fills). On a single node under Open
// MPI it sets OMPI_MCA_pml=ob1, OMPI_MCA_btl=self,vader and HWLOC_COMPONENTS=-linuxio,-pci,-gl,-opencl unless the
// environment already chose, and after MPI_Init sets TCP_NODELAY on the process's loopback TCP sockets.
// Transfers move bytes between ranks; waits sleep between polls (growing to max_sleep_ns) instead of spinning, so a
// waiting rank leaves the CPU to the ranks that work. Errors: Start's kInternal when MPI_Init fails, kUnsupported in
// builds without MPI. Not thread-safe: one thread (the one that called Start) makes every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "lmkit/common/status.h"

namespace lmkit::dist {

// Whether this lmkit was built with MPI (configure: -DLMKIT_MPI=AUTO|ON|OFF).
bool Built();

inline constexpr int kAnySource = -1;
// Message tags of lmkit's protocols (work_queue.h and the BPE drivers).
inline constexpr int kTagSize = 1;
inline constexpr int kTagData = 2;
inline constexpr int kTagClaim = 3;

// A non-blocking send or receive in flight; inactive once it completed (or when default-made).
class Request {
 public:
  Request();
  ~Request();
  Request(Request&&) noexcept;
  Request& operator=(Request&&) noexcept;
  bool active() const;
  // Whether it has completed (then it is inactive); *source: the sender of a completed receive.
  bool Test(int* source = nullptr);
  // Completes it, sleeping between polls; *source as for Test.
  void Wait(int* source = nullptr, long max_sleep_ns = 1000000);
  // Cancels a receive that will never be matched, and completes it.
  void Cancel();

 private:
  friend class Comm;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Comm {
 public:
  // Starts MPI while work(rank, size) runs (see above); *work_status gets work's status.
  static Result<Comm> Start(const std::function<Status(int rank, int size)>& work, Status* work_status);

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }

  // Collective: OK on every rank only when `st` is OK on every rank; a rank whose own `st` is OK gets "another MPI
  // rank failed (see its message)" when any other failed.
  Status AgreeOk(Status st) const;

  Request Isend(const void* data, size_t bytes, int to, int tag) const;
  Request Irecv(void* data, size_t bytes, int from, int tag) const;  // from: a rank or kAnySource
  void Send(const void* data, size_t bytes, int to, int tag) const;
  void Recv(void* data, size_t bytes, int from, int tag, long max_sleep_ns = 1000000) const;

  // A byte string of any length: its size (tag kTagSize), then messages of at most 64 MiB (kTagData).
  void SendBytes(const char* data, uint64_t n, int to) const;
  // Receives what SendBytes sent, calling take(data, n) per message; returns the total.
  uint64_t RecvBytes(int from, const std::function<void(const char*, size_t)>& take) const;

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace lmkit::dist
