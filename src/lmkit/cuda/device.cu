#include <cuda_runtime.h>

#include "lmkit/cuda/device.h"

namespace lmkit::cuda {

bool CudaBuildEnabled() { return true; }

DeviceList ListCudaDevices() {
  DeviceList out;
  cudaRuntimeGetVersion(&out.runtime_version);
  if (cudaDriverGetVersion(&out.driver_version) != cudaSuccess || out.driver_version == 0) {
    out.why_none = "no CUDA driver";
    return out;
  }
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    out.why_none = err != cudaSuccess ? std::string("no CUDA device (") + cudaGetErrorString(err) + ")"
                                      : std::string("no CUDA device");
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    DeviceInfo d;
    d.index = i;
    d.name = p.name;
    d.total_memory_bytes = p.totalGlobalMem;
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.multiprocessors = p.multiProcessorCount;
    int mem_clock_khz = 0, bus_width = 0;
    cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, i);
    cudaDeviceGetAttribute(&bus_width, cudaDevAttrGlobalMemoryBusWidth, i);
    // DDR: two transfers per clock.
    d.memory_bandwidth_gbs = 2.0 * mem_clock_khz * 1e3 * (bus_width / 8.0) / 1e9;
    out.devices.push_back(d);
  }
  if (out.devices.empty()) out.why_none = "no usable CUDA device";
  return out;
}

}  // namespace lmkit::cuda
