// The CUDA emulator against what CUDA defines: barriers order shared memory, warp operations see every lane, returned
// threads release barriers, dynamic shared memory is not zeroed, bad launch configurations fail, undefined barrier use
// aborts instead of hanging, and the 16-bit conversions are exact. The kernels under test (quant_kernels_test.cpp)
// are only as well tested here as this holds.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cuda_runtime.h"
#include "lmkit/cuda/launch.cuh"
#include "lmkit/io/dtype.h"

namespace {

__global__ void RotateThroughShared(unsigned* out) {
  LMKIT_SHARED_ARRAY(unsigned, buf, 256);
  buf[threadIdx.x] = threadIdx.x * 3 + blockIdx.x;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = buf[(threadIdx.x + 1) % blockDim.x];
}

// Thread 0 publishes the block's number without the __syncthreads() that should follow.
__global__ void MissingBarrier(unsigned* out) {
  LMKIT_SHARED(unsigned, block_number);
  if (threadIdx.x == 0) block_number = blockIdx.x + 1;
  out[blockIdx.x * blockDim.x + threadIdx.x] = block_number;
}

__global__ void WarpOps(const float* in, float* max_out, unsigned* peers_out) {
  float m = in[threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  max_out[threadIdx.x] = m;
  peers_out[threadIdx.x] = __match_any_sync(0xffffffffu, threadIdx.x % 3u);
}

// A counter nobody zeroes.
__global__ void UninitialisedCounter(unsigned* out) {
  LMKIT_SHARED(unsigned, total);
  atomicAdd(&total, 1u);
  __syncthreads();
  out[threadIdx.x] = total;
}

__global__ void EarlyReturn(unsigned* out) {
  LMKIT_SHARED(unsigned, total);
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  if (threadIdx.x >= 200) return;
  atomicAdd(&total, 1u);
  __syncthreads();
  out[threadIdx.x] = total;
}

__global__ void ReadDynamicShared(unsigned* out) {
  LMKIT_DYNAMIC_SHARED(unsigned, sh);
  out[threadIdx.x] = sh[threadIdx.x];
  sh[threadIdx.x] = 7;  // the next block must see poison again, not this
}

__global__ void HalfAtSyncHalfAtShuffle(float* out) {
  if (threadIdx.x % 2 == 0) {
    __syncthreads();
  } else {
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
  }
}

__global__ void DivergentWarpOps(float* out) {
  if (threadIdx.x < 16)
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
  else
    out[threadIdx.x] = static_cast<float>(__match_any_sync(0xffffffffu, 1u));
}

#if defined(__SANITIZE_ADDRESS__)
volatile int g_past_end = 8;
[[gnu::noinline]] void WriteAt(int* p) { p[g_past_end] = 1; }

// Writes one past a local array after a barrier, when the frame has lived through a fiber switch.
__global__ void StackOverrunAfterBarrier() {
  int a[8];
  for (int i = 0; i < 8; ++i) a[i] = i;
  __syncthreads();
  if (threadIdx.x == 0) WriteAt(a);
  if (a[threadIdx.x % 8] < 0) __syncthreads();  // keeps `a` alive
}
#endif

// Runs `fn` in a child process and returns what it wrote to stderr; the child must not exit normally (status 0).
template <typename Fn>
std::string ChildStderr(Fn fn, int* status) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGABRT, SIG_DFL);  // Catch2's handler would report the abort as this child's own test failure
    dup2(fds[1], 2);
    close(fds[0]);
    fn();
    _exit(0);
  }
  close(fds[1]);
  std::string err;
  char buf[512];
  for (ssize_t k; (k = read(fds[0], buf, sizeof(buf))) > 0;) err.append(buf, static_cast<size_t>(k));
  close(fds[0]);
  REQUIRE(waitpid(pid, status, 0) == pid);
  CHECK_FALSE((WIFEXITED(*status) && WEXITSTATUS(*status) == 0));
  return err;
}

// Runs `fn` in a child process; returns what it wrote to stderr, and fails unless it died of SIGABRT.
template <typename Fn>
std::string AbortMessage(Fn fn) {
  int status = 0;
  std::string err = ChildStderr(fn, &status);
  CHECK(WIFSIGNALED(status));
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT));
  return err;
}

}  // namespace

TEST_CASE("cuda-emu: __syncthreads orders shared memory within each block", "[cuda-emu]") {
  std::vector<unsigned> out(3 * 256, 0);
  LMKIT_LAUNCH(3, 256, 0, nullptr, RotateThroughShared)(out.data());
  REQUIRE(cudaGetLastError() == cudaSuccess);
  for (unsigned b = 0; b < 3; ++b)
    for (unsigned t = 0; t < 256; ++t) CHECK(out[b * 256 + t] == ((t + 1) % 256) * 3 + b);
}

TEST_CASE("cuda-emu: a missing __syncthreads shows in the reverse order of odd blocks", "[cuda-emu]") {
  std::vector<unsigned> out(2 * 64, 0);
  LMKIT_LAUNCH(2, 64, 0, nullptr, MissingBarrier)(out.data());
  for (unsigned t = 0; t < 64; ++t) CHECK(out[t] == 1);  // block 0, forward: thread 0 wrote before the others read
  CHECK(out[64] == 2);                                   // block 1, reverse: thread 0 runs last ...
  for (unsigned t = 1; t < 64; ++t) CHECK(out[64 + t] == 0xA5A5A5A5u);  // ... after the others read the poison
}

TEST_CASE("cuda-emu: shared variables start each block as poison, even in a one-block launch", "[cuda-emu]") {
  std::vector<unsigned> out(64, 0);
  for (int launch = 0; launch < 2; ++launch) {  // the second launch must not see the first one's count either
    LMKIT_LAUNCH(1, 64, 0, nullptr, UninitialisedCounter)(out.data());
    for (unsigned v : out) CHECK(v == 0xA5A5A5A5u + 64);
  }
}

TEST_CASE("cuda-emu: warp shuffles and matches see all 32 lanes of their own warp", "[cuda-emu]") {
  std::vector<float> in(64), max_out(64);
  std::vector<unsigned> peers(64);
  for (unsigned i = 0; i < 64; ++i) in[i] = static_cast<float>((i * 37) % 64);
  LMKIT_LAUNCH(1, 64, 0, nullptr, WarpOps)(in.data(), max_out.data(), peers.data());
  for (unsigned i = 0; i < 64; ++i) {
    float want = 0;
    for (unsigned j = i / 32 * 32; j < i / 32 * 32 + 32; ++j) want = std::max(want, in[j]);
    CHECK(max_out[i] == want);
    unsigned mask = 0;
    for (unsigned lane = 0; lane < 32; ++lane)
      if ((i / 32 * 32 + lane) % 3 == i % 3) mask |= 1u << lane;
    CHECK(peers[i] == mask);
  }
  CHECK(peers[0] == 0x49249249u);  // lanes 0, 3, 6, ... of warp 0
}

TEST_CASE("cuda-emu: returned threads no longer hold __syncthreads back", "[cuda-emu]") {
  std::vector<unsigned> out(256, 0);
  LMKIT_LAUNCH(1, 256, 0, nullptr, EarlyReturn)(out.data());
  for (unsigned t = 0; t < 200; ++t) CHECK(out[t] == 200);
  for (unsigned t = 200; t < 256; ++t) CHECK(out[t] == 0);
}

TEST_CASE("cuda-emu: dynamic shared memory is poisoned per block, and invalid launches fail without running",
          "[cuda-emu]") {
  std::vector<unsigned> out(64, 0);
  LMKIT_LAUNCH(2, 64, 64 * sizeof(unsigned), nullptr, ReadDynamicShared)(out.data());
  REQUIRE(cudaGetLastError() == cudaSuccess);
  for (unsigned v : out) CHECK(v == 0xA5A5A5A5u);
  std::fill(out.begin(), out.end(), 1u);
  LMKIT_LAUNCH(1, 64, 48 * 1024 + 4, nullptr, ReadDynamicShared)(out.data());  // past the 48 KiB default limit
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  CHECK(cudaGetLastError() == cudaSuccess);                          // read and cleared
  LMKIT_LAUNCH(1, 2048, 0, nullptr, ReadDynamicShared)(out.data());  // more than 1024 threads
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  for (unsigned v : out) CHECK(v == 1u);
}

TEST_CASE("cuda-emu: barrier misuse aborts with a message instead of hanging", "[cuda-emu]") {
  std::vector<float> out(64, 0);
  std::string err = AbortMessage([&] { LMKIT_LAUNCH(1, 64, 0, nullptr, HalfAtSyncHalfAtShuffle)(out.data()); });
  CHECK_THAT(err, Catch::Contains("deadlock in block 0: 32 threads wait at __syncthreads(), 32 at a warp operation"));
  err = AbortMessage([&] { LMKIT_LAUNCH(1, 32, 0, nullptr, DivergentWarpOps)(out.data()); });
  CHECK_THAT(err, Catch::Contains("meet at different warp operations"));
  err = AbortMessage([&] {
    LMKIT_LAUNCH(1, 48, 0, nullptr, RotateThroughShared)(reinterpret_cast<unsigned*>(out.data()));
  });
  CHECK_THAT(err, Catch::Contains("not a multiple of 32"));
}

#if defined(__SANITIZE_ADDRESS__)
TEST_CASE("cuda-emu: AddressSanitizer sees a kernel's stack overrun after a barrier", "[cuda-emu]") {
  int status = 0;
  const std::string err = ChildStderr([] { LMKIT_LAUNCH(1, 32, 0, nullptr, StackOverrunAfterBarrier)(); }, &status);
  CHECK_THAT(err, Catch::Contains("stack-buffer-overflow"));
}
#endif

TEST_CASE("cuda-emu: 16-bit conversions are exact", "[cuda-emu]") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float want = lmkit::io::F16ToF32(static_cast<uint16_t>(h)), got = __half2float(__ushort_as_half(h));
    if (want != want)
      CHECK(got != got);
    else
      CHECK(std::memcmp(&want, &got, 4) == 0);
  }
  // Round up: the smallest half >= f. Exact halves stay; anything between two halves goes to the upper one, also for
  // subnormals, past the largest finite half (to inf) and for negative values (toward zero).
  for (float f : {0.0f, 1.0f, 65504.0f, 5.9604645e-08f, 1.0f / 3.0f, 1e-10f, 0.0001f, 65505.0f, 70000.0f, -1.0f / 3.0f,
                  -65519.0f, 2.9802322e-08f, 1.0009766f, 1.0004883f}) {
    const uint16_t h = __half_as_ushort(__float2half_ru(f));
    const float v = lmkit::io::F16ToF32(h);
    CHECK(v >= f);
    const uint16_t below = (h == 0 || h == 0x8000) ? 0x8001 : (h & 0x8000) ? h + 1 : h - 1;  // the next half down
    if (v != f) CHECK(lmkit::io::F16ToF32(below) < f);
  }
  CHECK(__half_as_ushort(__float2half_ru(1.0f / 3.0f)) == 0x3556);   // rn gives 0x3555
  CHECK(__half_as_ushort(__float2half_ru(1.0004883f)) == 0x3c01);    // just above 1: up to 1 + 2^-10
  CHECK(__half_as_ushort(__float2half_ru(65505.0f)) == 0x7c00);      // past the largest half: inf
  CHECK(__half_as_ushort(__float2half_ru(-1.0f / 3.0f)) == 0xb555);  // toward zero for negatives
  CHECK(__half_as_ushort(__float2half_ru(1e-10f)) == 0x0001);        // the smallest subnormal
  CHECK(__half_as_ushort(__float2half_ru(-0.0f)) == 0x8000);         // -0 stays -0
  CHECK(__half_as_ushort(__float2half_ru(-1e-10f)) == 0x8000);       // toward +inf from below zero: -0
  CHECK(__half_as_ushort(__float2half_ru(std::numeric_limits<float>::quiet_NaN())) == 0x7fff);
  const float nan_payload = __half2float(__ushort_as_half(0x7e01));  // a half NaN's payload moves up 13 bits
  uint32_t bits = 0;
  std::memcpy(&bits, &nan_payload, 4);
  CHECK(bits == (0x7f800000u | 0x201u << 13));
}
