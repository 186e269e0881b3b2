// MPI under comm.h. Built only with MPI (comm_nompi.cpp otherwise); the one file with mpi.h.
//
// Performance notes (debmix.txt 130 MB on the shared 2-core VM; docs/benchmarks/distributed.md):
//  - MPI_Init took 0.35 s per rank, mostly waiting; the first work piece runs meanwhile (Start), and single-node
//    jobs get Open MPI's shared-memory transport unless the user chose one (0.13 s), without hwloc's I/O discovery
//    (25 ms a rank). MPI_Finalize stalled 40 ms on Nagle's algorithm in PMIx's loopback connection (NoDelayOnLoopback).
//  - waits poll with a growing sleep instead of spinning in blocking MPI calls (Request::Wait).
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string_view>
#include <utility>

#include "lmkit/common/thread_start.h"
#include "lmkit/dist/comm.h"

// The C API only: Open MPI's deprecated C++ bindings do not compile cleanly with -Wextra -Werror.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

namespace lmkit::dist {

namespace {

constexpr size_t kMaxMessage = size_t{64} << 20;

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

int Count(size_t bytes) { return static_cast<int>(bytes); }

}  // namespace

bool Built() { return true; }

struct Request::Impl {
  MPI_Request req = MPI_REQUEST_NULL;
};

Request::Request() : impl_(std::make_unique<Impl>()) {}
Request::~Request() = default;
Request::Request(Request&&) noexcept = default;
Request& Request::operator=(Request&&) noexcept = default;

bool Request::active() const { return impl_ && impl_->req != MPI_REQUEST_NULL; }

bool Request::Test(int* source) {
  if (!active()) return true;
  int done = 0;
  MPI_Status status;
  MPI_Test(&impl_->req, &done, &status);
  if (done && source) *source = status.MPI_SOURCE;
  return done != 0;
}

// Blocking MPI calls spin at 100% CPU while they wait (for a rank that is still counting, or for rank 0 to get to
// the receive); on a shared machine, or with ranks oversubscribed, that spinning takes CPU from the ranks doing the
// work (measured: debmix encode, 2 ranks on 2 busy cores, see docs/benchmarks/distributed.md). The poll interval
// grows to max_sleep_ns (1 ms by default), which is noise next to the phases waited for.
void Request::Wait(int* source, long max_sleep_ns) {
  long ns = std::min(20000L, max_sleep_ns);
  while (!Test(source)) {
    timespec ts{0, ns};
    ::nanosleep(&ts, nullptr);
    ns = std::min(ns * 2, max_sleep_ns);
  }
}

void Request::Cancel() {
  if (!active()) return;
  MPI_Cancel(&impl_->req);
  MPI_Wait(&impl_->req, MPI_STATUS_IGNORE);
}

// MPI_Init_thread took 0.35 s per rank on this machine, mostly waiting (0.1 s CPU, UCX start-up;
// docs/benchmarks/distributed.md), on jobs of 1-3 s: when the launcher's environment gives the rank, the work runs
// on a second thread during MPI_Init. MPI stays on the calling thread (FUNNELED, and MPI_Finalize must run where
// MPI_Init did). When the system refuses the second thread, the work runs first and MPI_Init after it.
Result<Comm> Comm::Start(const std::function<Status(int, int)>& work, Status* work_status) {
  Comm c;
  const auto guess = LauncherRankSize();
  int inited = 0;
  MPI_Initialized(&inited);
  if (!guess || inited) {
    LMKIT_RETURN_IF_ERROR(EnsureInit(&c.rank_, &c.size_));
    *work_status = work(c.rank_, c.size_);
    return c;
  }
  SideThread worker([&] { *work_status = work(guess->first, guess->second); });
  Status init = EnsureInit(&c.rank_, &c.size_);
  worker.Join();
  LMKIT_RETURN_IF_ERROR(init);
  if (c.rank_ != guess->first || c.size_ != guess->second) *work_status = work(c.rank_, c.size_);
  return c;
}

Status Comm::AgreeOk(Status st) const {
  int bad = st.ok() ? 0 : 1, any = 0;
  Request r;
  MPI_Iallreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r.impl_->req);
  r.Wait();
  if (!st.ok()) return st;
  if (any) return Status::Internal("another MPI rank failed (see its message)");
  return Status::Ok();
}

Request Comm::Isend(const void* data, size_t bytes, int to, int tag) const {
  Request r;
  MPI_Isend(data, Count(bytes), MPI_BYTE, to, tag, MPI_COMM_WORLD, &r.impl_->req);
  return r;
}

Request Comm::Irecv(void* data, size_t bytes, int from, int tag) const {
  Request r;
  MPI_Irecv(data, Count(bytes), MPI_BYTE, from == kAnySource ? MPI_ANY_SOURCE : from, tag, MPI_COMM_WORLD,
            &r.impl_->req);
  return r;
}

void Comm::Send(const void* data, size_t bytes, int to, int tag) const { Isend(data, bytes, to, tag).Wait(); }

void Comm::Recv(void* data, size_t bytes, int from, int tag, long max_sleep_ns) const {
  Irecv(data, bytes, from, tag).Wait(nullptr, max_sleep_ns);
}

void Comm::SendBytes(const char* data, uint64_t n, int to) const {
  Send(&n, sizeof n, to, kTagSize);
  for (uint64_t done = 0; done < n;) {
    const size_t part = static_cast<size_t>(std::min<uint64_t>(kMaxMessage, n - done));
    Send(data + done, part, to, kTagData);
    done += part;
  }
}

uint64_t Comm::RecvBytes(int from, const std::function<void(const char*, size_t)>& take) const {
  uint64_t n = 0;
  Recv(&n, sizeof n, from, kTagSize);
  std::string buf;
  for (uint64_t done = 0; done < n;) {
    const size_t part = static_cast<size_t>(std::min<uint64_t>(kMaxMessage, n - done));
    buf.resize(part);
    Recv(buf.data(), part, from, kTagData);
    take(buf.data(), part);
    done += part;
  }
  return n;
}

}  // namespace lmkit::dist
