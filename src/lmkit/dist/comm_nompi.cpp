// Built instead of comm_mpi.cpp when MPI is off (-DLMKIT_MPI=OFF, or AUTO without an MPI installation): Start fails,
// so nothing else is ever reached.
#include "lmkit/dist/comm.h"

namespace lmkit::dist {

bool Built() { return false; }

struct Request::Impl {};
Request::Request() = default;
Request::~Request() = default;
Request::Request(Request&&) noexcept = default;
Request& Request::operator=(Request&&) noexcept = default;
bool Request::active() const { return false; }
bool Request::Test(int*) { return true; }
void Request::Wait(int*, long) {}
void Request::Cancel() {}

Result<Comm> Comm::Start(const std::function<Status(int, int)>&, Status*) {
  return Status::Unsupported("",
                             "this lmkit was built without MPI (install libopenmpi-dev and configure with "
                             "-DLMKIT_MPI=ON)");
}

Status Comm::AgreeOk(Status st) const { return st; }
Request Comm::Isend(const void*, size_t, int, int) const { return Request(); }
Request Comm::Irecv(void*, size_t, int, int) const { return Request(); }
void Comm::Send(const void*, size_t, int, int) const {}
void Comm::Recv(void*, size_t, int, int, long) const {}
void Comm::SendBytes(const char*, uint64_t, int) const {}
uint64_t Comm::RecvBytes(int, const std::function<void(const char*, size_t)>&) const { return 0; }

}  // namespace lmkit::dist
