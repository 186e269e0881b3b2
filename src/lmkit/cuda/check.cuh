// The one macro through which every CUDA runtime call in lmkit goes. It turns a failure into a Status naming the call,
// the file and the line, so a GPU error reads like any other lmkit error. Use it in host launchers that return Status:
//   LMKIT_CUDA_CHECK(cudaMemcpyAsync(...));
// After a kernel launch use LMKIT_CUDA_CHECK(cudaGetLastError()).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "lmkit/common/status.h"

#define LMKIT_CUDA_CHECK(expr)                                                                                       \
  do {                                                                                                               \
    cudaError_t lmkit_cuda_err_ = (expr);                                                                            \
    if (lmkit_cuda_err_ != cudaSuccess)                                                                              \
      return ::lmkit::Status::Io("cuda", std::string(#expr) + " failed at " + __FILE__ + ":" +                       \
                                             std::to_string(__LINE__) + ": " + cudaGetErrorString(lmkit_cuda_err_)); \
  } while (0)
