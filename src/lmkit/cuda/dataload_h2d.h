// The host→device stage of `lmkit dataload`: stage a batch into pinned (page-locked) memory, then copy it to the GPU
// with cudaMemcpyAsync on a stream of its own, timed with CUDA events — what `x.pin_memory().to(dev,
// non_blocking=True)` does in a PyTorch training loop.
//
// Contract: one HostToDevice per producing thread (it owns a stream, two events, a pinned staging buffer and a device
// buffer of `max_bytes`). With `pinned` false the copy is issued from the caller's pageable memory (the driver stages
// it internally, synchronously) and stage time is 0. Copy() returns after the copy completed. Create returns
// kUnsupported in a build without CUDA or on a machine without a device ("why" in the message), kIo for a failed CUDA
// call (via LMKIT_CUDA_CHECK). Not thread-safe per object.
#pragma once

#include <cstddef>
#include <memory>

#include "lmkit/common/status.h"

namespace lmkit::cuda {

struct HostToDeviceTiming {
  double stage_s = 0;  // memcpy into the pinned buffer (host clock)
  double copy_s = 0;   // cudaMemcpyAsync, between events on the copy stream
};

class HostToDevice {
 public:
  static Result<std::unique_ptr<HostToDevice>> Create(int device, size_t max_bytes, bool pinned);
  virtual ~HostToDevice() = default;
  virtual Status Copy(const void* src, size_t bytes, HostToDeviceTiming* timing) = 0;
  // Copies the first `bytes` of the device buffer back to `dst` (for tests of the round trip).
  virtual Status Readback(void* dst, size_t bytes) = 0;
};

}  // namespace lmkit::cuda
