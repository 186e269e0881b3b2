// Built instead of bpe_mpi.cpp when MPI is off (-DLMKIT_MPI=OFF, or AUTO without an MPI installation).
#include "lmkit/mpi/bpe_mpi.h"

namespace lmkit::mpi {

namespace {
Status NotBuilt() {
  return Status::Unsupported("",
                             "this lmkit was built without MPI (install libopenmpi-dev and configure with "
                             "-DLMKIT_MPI=ON)");
}
}  // namespace

bool MpiBuilt() { return false; }

Result<MpiTrainResult> TrainBpeMpi(const bpe::BpeTrainOptions&, const std::string&, ProgressSink*) {
  return NotBuilt();
}

Result<MpiEncodeResult> EncodeFileMpi(const bpe::EncodeRequest&, ProgressSink*) { return NotBuilt(); }

}  // namespace lmkit::mpi
