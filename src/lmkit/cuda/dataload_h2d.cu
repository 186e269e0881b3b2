// Host→device copies for `lmkit dataload` (see dataload_h2d.h). There is no kernel here, so no CPU reference: the
// stage moves bytes, and the test checks that the bytes arrive unchanged (tests/unit/dataload/host_to_device_test.cpp).
#include <chrono>
#include <cstring>

#include "lmkit/cuda/check.cuh"
#include "lmkit/cuda/dataload_h2d.h"

namespace lmkit::cuda {
namespace {

class CudaHostToDevice final : public HostToDevice {
 public:
  ~CudaHostToDevice() override {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (pinned_ != nullptr) cudaFreeHost(pinned_);
    if (device_buf_ != nullptr) cudaFree(device_buf_);
  }

  Status Init(int device, size_t max_bytes, bool pinned) {
    device_ = device;
    max_bytes_ = max_bytes;
    LMKIT_CUDA_CHECK(cudaSetDevice(device));
    LMKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    LMKIT_CUDA_CHECK(cudaEventCreate(&start_));
    LMKIT_CUDA_CHECK(cudaEventCreate(&stop_));
    LMKIT_CUDA_CHECK(cudaMalloc(&device_buf_, max_bytes));
    if (pinned) LMKIT_CUDA_CHECK(cudaHostAlloc(&pinned_, max_bytes, cudaHostAllocDefault));
    return Status::Ok();
  }

  Status Copy(const void* src, size_t bytes, HostToDeviceTiming* timing) override {
    if (bytes > max_bytes_) return Status::Internal("host-to-device copy larger than its buffer");
    LMKIT_CUDA_CHECK(cudaSetDevice(device_));  // the calling thread may not have a current device yet
    const void* from = src;
    if (pinned_ != nullptr) {
      auto t0 = std::chrono::steady_clock::now();
      std::memcpy(pinned_, src, bytes);
      timing->stage_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      from = pinned_;
    } else {
      timing->stage_s = 0;
    }
    LMKIT_CUDA_CHECK(cudaEventRecord(start_, stream_));
    LMKIT_CUDA_CHECK(cudaMemcpyAsync(device_buf_, from, bytes, cudaMemcpyHostToDevice, stream_));
    LMKIT_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    LMKIT_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    LMKIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    timing->copy_s = ms / 1000.0;
    return Status::Ok();
  }

  // For the round-trip test: copies the device buffer back.
  Status Readback(void* dst, size_t bytes) override {
    LMKIT_CUDA_CHECK(cudaMemcpy(dst, device_buf_, bytes, cudaMemcpyDeviceToHost));
    return Status::Ok();
  }

 private:
  int device_ = 0;
  size_t max_bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  void* pinned_ = nullptr;
  void* device_buf_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<HostToDevice>> HostToDevice::Create(int device, size_t max_bytes, bool pinned) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    return Status::Unsupported(
        "cuda", std::string("no CUDA device: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "none found"));
  }
  if (device < 0 || device >= count) {
    return Status::NotFound("cuda:" + std::to_string(device), "no such device (" + std::to_string(count) + " found)");
  }
  auto h = std::make_unique<CudaHostToDevice>();
  LMKIT_RETURN_IF_ERROR(h->Init(device, max_bytes, pinned));
  return std::unique_ptr<HostToDevice>(std::move(h));
}

}  // namespace lmkit::cuda
