// Built instead of device.cu when CUDA is off at configure time.
#include "lmkit/cuda/device.h"

namespace lmkit::cuda {

bool CudaBuildEnabled() { return false; }

DeviceList ListCudaDevices() {
  DeviceList out;
  out.why_none = "built without CUDA";
  return out;
}

}  // namespace lmkit::cuda
