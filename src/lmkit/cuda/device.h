// CUDA device discovery. The only header other areas include to ask "is there a GPU?"; kernels live in *.cu files in
// this directory and expose host launchers (see check.cuh).
//
// Contract: callable in every build. In a build without CUDA (LMKIT_WITH_CUDA undefined) CudaBuildEnabled() is false
// and ListCudaDevices() returns an empty list. In a CUDA build on a machine without a driver or device, the list is
// empty and `why_none` says why (driver missing, no device...). Never aborts. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmkit::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  uint64_t total_memory_bytes = 0;
  int cc_major = 0;
  int cc_minor = 0;
  int multiprocessors = 0;
  double memory_bandwidth_gbs = 0;  // from bus width × memory clock, 0 when the runtime does not report them
};

struct DeviceList {
  std::vector<DeviceInfo> devices;
  int driver_version = 0;   // e.g. 13000; 0 when unknown
  int runtime_version = 0;  // the runtime this binary was built with
  std::string why_none;     // set when devices is empty
};

bool CudaBuildEnabled();
DeviceList ListCudaDevices();

}  // namespace lmkit::cuda
