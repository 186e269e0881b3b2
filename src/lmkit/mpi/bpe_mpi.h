// `lmkit bpe train --mpi` and `lmkit bpe encode --mpi`: the same results as one process, computed by all ranks of an
// MPI job (docs/distributed.md).
//
// Contract: both functions are collective (every rank of MPI_COMM_WORLD calls them with the same arguments). They
// start MPI on first use (MPI_Init_thread, FUNNELED: MPI calls stay on the calling thread; MPI_Finalize runs at exit).
// The input is cut into size x 8 work pieces at special-token/pre-token boundaries (shard.h); rank r takes piece r
// while MPI starts (the rank is read from the launcher's environment: OMPI_COMM_WORLD_*, PMI_*, SLURM_PROCID/NTASKS;
// the piece is redone if MPI_Comm_rank disagrees), then the ranks claim the others from rank 0 as they finish, so
// faster ranks take more. On a single node under Open MPI, OMPI_MCA_pml=ob1, OMPI_MCA_btl=self,vader and
// HWLOC_COMPONENTS=-linuxio,-pci,-gl,-opencl are set unless already in the environment. After MPI_Init, TCP_NODELAY is
// set on the process's loopback TCP sockets (the launcher connection).
// - TrainBpeMpi: each rank counts its pieces on options.threads threads into one table; the tables are summed over a
//   binomial tree (log2 P rounds); rank 0 trains and writes vocab.json/merges.txt/tokenizer.json to out_dir. The
//   files are byte-identical to a single-process TrainBpe + WriteTokenizerFiles (counts are sums).
// - EncodeFileMpi: each rank encodes its pieces of request.input and sends them to rank 0, which writes them in piece
//   order into the one output file (request.output, required), byte-identical to EncodeFile's. Rank 0 holds pieces
//   that arrive ahead of their turn (about one per rank).
// Only rank 0's result is meaningful (root = true); other ranks return after handing over their part. An error on any
// rank is reported by every rank (each with its own message, or "another rank failed"): after an error a rank keeps
// claiming pieces without working on them, so no rank waits forever. Errors: as TrainBpe/EncodeFile, kInvalidArgument for
// stdin input or a missing -o, kUnsupported when this lmkit was built without MPI (MpiBuilt() false).
#pragma once

#include <cstdint>
#include <string>

#include "lmkit/bpe/encode_file.h"
#include "lmkit/bpe/trainer.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"

namespace lmkit::mpi {

// Whether this build has MPI support (configure: -DLMKIT_MPI=AUTO|ON|OFF).
bool MpiBuilt();

struct MpiTrainResult {
  int rank = 0;
  int size = 1;
  bool root = true;
  bpe::BpeTrainResult train;  // root only
  double reduce_seconds = 0;  // root: waiting for and merging the other ranks' counts
  uint64_t reduce_bytes = 0;  // root: bytes of counts received
  double write_seconds = 0;
};

Result<MpiTrainResult> TrainBpeMpi(const bpe::BpeTrainOptions& options, const std::string& out_dir,
                                   ProgressSink* progress);

struct MpiEncodeResult {
  int rank = 0;
  int size = 1;
  bool root = true;
  bpe::EncodeReport report;  // root only: totals over all ranks (cpu seconds summed; peak RSS of rank 0)
};

Result<MpiEncodeResult> EncodeFileMpi(const bpe::EncodeRequest& request, ProgressSink* progress);

}  // namespace lmkit::mpi
