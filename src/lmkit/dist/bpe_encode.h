// `lmkit bpe encode --mpi`: the ids of EncodeFile computed by all ranks of an MPI job (dist/comm.h;
// docs/distributed.md).
//
// Contract: collective (every rank calls it with the same request). The corpus is cut into size x 8 work pieces at
// shard cuts (shard.h) handed out at run time (dist/work_queue.h); each rank encodes its pieces with EncodeStream,
// its encoders kept warm from piece to piece, and sends them to rank 0, which writes them in piece order through
// OpenIdOutput into request.output: the file is byte-identical to EncodeFile's. Rank 0 holds the pieces that arrive
// ahead of their turn (about one per rank). Only rank 0's report is meaningful (root = true; cpu seconds summed over
// the ranks, peak RSS of rank 0); other ranks return after handing over their part. An error on any rank is reported
// by every rank (each with its own message, or "another MPI rank failed"): after an error a rank keeps claiming
// pieces without working on them, so no rank waits forever. Errors: as EncodeFile's; kInvalidArgument naming
// Field("mpi") for stdin input, dist::Comm::Start's.
#pragma once

#include "lmkit/bpe/encode/encode_file.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"

namespace lmkit::bpe {

Result<EncodeResult> EncodeFileMpi(const EncodeRequest& request, ProgressSink* progress);

}  // namespace lmkit::bpe
