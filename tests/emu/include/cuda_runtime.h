// A CPU emulator of the slice of CUDA that lmkit's kernels use, so that src/lmkit/cuda/*.cu (their kernels AND their
// host launchers) compile with the host compiler and the [cuda] tests run in every CI build, not only on the rare
// machine with a GPU (tests/emu/README.md). It stands in for <cuda_runtime.h> and <cuda_fp16.h> only in the emulator
// test binary (lmkit_cuda_emu_tests), whose include path puts this directory first.
//
// Contract (what the emulator models, and where it is stricter than a GPU):
// - Launches come from one host thread at a time (another aborts). A launch runs its blocks one after another, in
//   blockIdx order; the threads of a block run as cooperative fibers on the calling thread, switching only at
//   __syncthreads() and at warp operations, resumed in threadIdx order in even blocks and in reverse order in odd ones
//   (so a missing barrier shows in one of the two). Results are deterministic. Shared variables are function statics,
//   private to the running block; those declared with LMKIT_SHARED / LMKIT_SHARED_ARRAY (launch.cuh) are filled with
//   0xA5 bytes at the start of each block, as is dynamic shared memory (a GPU's is not zeroed). A plain __shared__
//   variable is a static too, but keeps the previous block's value.
// - __syncthreads() waits for every thread of the block that has not returned; a warp operation (__shfl_xor_sync,
//   __match_any_sync) for all 32 lanes of the warp, which must all be alive, use the full mask and call the same
//   operation. Anything else -- a barrier some threads never reach (deadlock), a lane missing from a full-mask
//   operation, a launch with blockDim.x not a multiple of 32 -- is undefined on a GPU and aborts here with a message.
// - Launches asking for more than 48 KiB of dynamic shared memory fail the way a GPU's do (cudaGetLastError() reports
//   it, the kernel does not run); static shared memory is not counted against the limit.
// - Device memory is host memory (cudaMalloc: 256-byte aligned, exactly the requested size, so AddressSanitizer sees
//   overruns, and UBSan misaligned vector loads, in sanitizer builds); the emulated device has 2 multiprocessors, so
//   grid-stride loops take several turns in small tests. Streams are synchronous.
// - Float arithmetic is the host's IEEE arithmetic without contraction into FMA (this target is compiled with
//   -ffp-contract=off, lmkit's CUDA code with --fmad=false); division is IEEE division, as __fdiv_rn and nvcc's
//   -prec-div=true define it. __half2float and __float2half_ru are exact (round toward +inf; -0 stays -0, NaN gives
//   the canonical 0x7fff, a half NaN keeps its payload in the float).
// What it cannot show: timing, memory coalescing, races between blocks, and the hardware's own arithmetic (the GPU run
// of scripts/gpu-check.sh is still the test of that).
#pragma once

#include <math.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <utility>

// ---- qualifiers -----------------------------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static  // one block runs at a time (see above); not poisoned: use LMKIT_SHARED

// ---- vector and index types -----------------------------------------------------------------------------------------
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

// Set by the emulator before it switches to a thread's fiber.
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

namespace lmkit::cuda_emu {

// What a fiber's warp operation is, so lanes that meet at one barrier with different operations are caught.
enum class WarpOp : uint8_t { kShuffleXor, kMatchAny };

void SyncThreads();
// Publishes `value` for the calling lane and returns the 32 lanes' values (after all 32 arrived).
const uint64_t* WarpExchange(unsigned mask, WarpOp op, uint64_t value);
void* DynamicSharedBase();
// Fills a static shared variable with 0xA5 bytes, once per block (the first of its threads to declare it).
void PoisonSharedOnce(void* p, size_t bytes);
// Runs `body` (one thread's kernel call) as grid x block threads; returns false (the launch error) when the
// configuration is invalid.
bool RunGrid(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()>& body);

template <typename T>
T* DynamicShared() {
  return static_cast<T*>(DynamicSharedBase());
}

// kernel<<<grid, block, shared>>>(args...): the arguments are converted to the kernel's parameter types once, as a
// launch copies them, and every thread calls the kernel with those copies.
template <typename... P>
auto Launcher(dim3 grid, dim3 block, size_t shared_bytes, void (*kernel)(P...)) {
  return [=](auto&&... args) {
    std::tuple<P...> params(std::forward<decltype(args)>(args)...);
    RunGrid(grid, block, shared_bytes, [&] { std::apply(kernel, params); });
  };
}

uint16_t F32ToF16RoundUp(float f);
float F16ToF32(uint16_t h);

}  // namespace lmkit::cuda_emu

// The spellings src/lmkit/cuda/launch.cuh defines as plain CUDA syntax.
// Streams are synchronous here, so the launch runs at once whatever its stream.
#define LMKIT_LAUNCH(grid, block, shared, stream, ...) \
  ((void)(stream), ::lmkit::cuda_emu::Launcher(grid, block, shared, __VA_ARGS__))
#define LMKIT_DYNAMIC_SHARED(type, name) type* name = ::lmkit::cuda_emu::DynamicShared<type>()
#define LMKIT_SHARED(type, name) \
  static type name;              \
  ::lmkit::cuda_emu::PoisonSharedOnce(&name, sizeof(name))
#define LMKIT_SHARED_ARRAY(type, name, count) \
  static type name[count];                    \
  ::lmkit::cuda_emu::PoisonSharedOnce(name, sizeof(name))

// ---- device built-ins -----------------------------------------------------------------------------------------------
inline void __syncthreads() { lmkit::cuda_emu::SyncThreads(); }

inline unsigned __shfl_xor_sync(unsigned mask, unsigned v, int lane_mask) {
  const uint64_t* all = lmkit::cuda_emu::WarpExchange(mask, lmkit::cuda_emu::WarpOp::kShuffleXor, v);
  return static_cast<unsigned>(all[(threadIdx.x & 31) ^ (static_cast<unsigned>(lane_mask) & 31)]);
}
inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask) {
  return std::bit_cast<float>(__shfl_xor_sync(mask, std::bit_cast<unsigned>(v), lane_mask));
}
inline unsigned __match_any_sync(unsigned mask, unsigned long long v) {
  const uint64_t* all = lmkit::cuda_emu::WarpExchange(mask, lmkit::cuda_emu::WarpOp::kMatchAny, v);
  unsigned peers = 0;
  for (unsigned lane = 0; lane < 32; ++lane)
    if (all[lane] == v) peers |= 1u << lane;
  return peers;
}
inline unsigned __match_any_sync(unsigned mask, unsigned v) {
  return __match_any_sync(mask, static_cast<unsigned long long>(v));
}
inline unsigned __match_any_sync(unsigned mask, int v) {
  return __match_any_sync(mask, static_cast<unsigned long long>(static_cast<unsigned>(v)));
}

// Fibers switch only at barriers, so a read-modify-write is atomic.
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = old + v;
  return old;
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  *p = old + v;
  return old;
}
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  if (v < old) *p = v;
  return old;
}
inline int atomicAdd(int* p, int v) {
  const int old = *p;
  *p = static_cast<int>(static_cast<unsigned>(old) + static_cast<unsigned>(v));
  return old;
}

inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }

// ---- cuda_fp16.h ----------------------------------------------------------------------------------------------------
struct __half {
  uint16_t bits;
};
inline __half __ushort_as_half(unsigned short u) { return {u}; }
inline unsigned short __half_as_ushort(__half h) { return h.bits; }
inline float __half2float(__half h) { return lmkit::cuda_emu::F16ToF32(h.bits); }
inline __half __float2half_ru(float f) { return {lmkit::cuda_emu::F32ToF16RoundUp(f)}; }

// ---- runtime API ----------------------------------------------------------------------------------------------------
enum cudaError_t : int {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
};
enum cudaMemcpyKind : int {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
};
enum cudaDeviceAttr : int {
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMemoryClockRate = 36,
  cudaDevAttrGlobalMemoryBusWidth = 37,
};
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int major;
  int minor;
  int multiProcessorCount;
};
struct CUevent_st;
using cudaEvent_t = CUevent_st*;
struct CUstream_st;
using cudaStream_t = CUstream_st*;  // every stream is synchronous here: an async copy is done when it returns
constexpr unsigned cudaStreamNonBlocking = 1;
constexpr unsigned cudaHostAllocDefault = 0;

const char* cudaGetErrorString(cudaError_t err);
cudaError_t cudaGetLastError();
cudaError_t cudaRuntimeGetVersion(int* v);
cudaError_t cudaDriverGetVersion(int* v);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMalloc(void** p, size_t bytes);
cudaError_t cudaFree(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemset(void* p, int value, size_t bytes);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream);
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t e);
