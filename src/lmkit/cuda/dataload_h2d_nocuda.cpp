// Built instead of dataload_h2d.cu when CUDA is off at configure time: the host→device stage is skipped.
#include "lmkit/cuda/dataload_h2d.h"

namespace lmkit::cuda {

Result<std::unique_ptr<HostToDevice>> HostToDevice::Create(int, size_t, bool) {
  return Status::Unsupported("cuda", "this lmkit was built without CUDA");
}

}  // namespace lmkit::cuda
