// The CUDA emulator's scheduler and runtime (contract in include/cuda_runtime.h).
//
// Each CUDA thread of the running block is a ucontext fiber with its own stack. The scheduler (the launching thread's
// own context) resumes ready fibers in threadIdx order (reversed in odd blocks); a fiber runs until it waits at a
// barrier or returns. A barrier opens when every live participant has arrived (all live threads of the block for
// __syncthreads, the 32 lanes of a warp for a warp operation), which makes its waiters ready again. No ready fiber
// while some still wait is a deadlock: on a GPU the kernel would hang or be undefined, here it aborts with what each
// thread waits for.
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#include <ucontext.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda_runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#define LMKIT_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LMKIT_EMU_ASAN 1
#endif
#endif

namespace lmkit::cuda_emu {
namespace {

constexpr size_t kStackBytes = 256 * 1024;  // kernels' frames are small; AddressSanitizer's redzones make them larger
constexpr size_t kMaxDynamicShared = 48 * 1024;  // a GPU's default per-block limit without an opt-in attribute
constexpr int kMultiprocessors = 2;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "lmkit CUDA emulator: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// AddressSanitizer must be told when the stack changes under it, or it reports the other stack's frames as errors.
void StartSwitch(void** fake_stack_save, const void* bottom, size_t size) {
#ifdef LMKIT_EMU_ASAN
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#else
  (void)fake_stack_save, (void)bottom, (void)size;
#endif
}
void FinishSwitch(void* fake_stack_save, const void** bottom_old, size_t* size_old) {
#ifdef LMKIT_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
#else
  (void)fake_stack_save, (void)bottom_old, (void)size_old;
#endif
}

enum class State : uint8_t { kReady, kAtSyncThreads, kAtWarpOp, kDone };

struct Fiber {
  ucontext_t ctx{};
  char* stack = nullptr;  // from g_stacks
  void* fake_stack = nullptr;
  unsigned tid = 0;
  State state = State::kReady;
};

struct Warp {
  unsigned live = 0, arrived = 0;
  uint64_t phase = 0;
  WarpOp op = WarpOp::kShuffleXor;
  uint64_t slots[2][32] = {};  // by phase parity: a lane may publish the next operation's value before the others
                               // have read this one's, never two operations ahead (it waits for them at the next)
};

struct Grid {
  dim3 grid, block;
  const std::function<void()>* body = nullptr;
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  unsigned live = 0, arrived = 0;
  std::unique_ptr<unsigned char[]> shared;
  size_t shared_bytes = 0;
  ucontext_t scheduler{};
  void* scheduler_fake_stack = nullptr;
  const void* scheduler_bottom = nullptr;
  size_t scheduler_size = 0;
  Fiber* current = nullptr;
};

thread_local Grid* g_grid = nullptr;
// Blocks run so far (on this thread, over all launches), and the block each LMKIT_SHARED variable was last filled with
// poison in: a variable is poisoned once per block, by the first of the block's threads to declare it.
thread_local uint64_t g_block_serial = 0;
thread_local std::unordered_map<void*, uint64_t> g_poisoned_in;
std::atomic<int> g_running{0};
// Fiber stacks, kept from launch to launch (allocating 256 of them per launch would cost more than the kernels).
thread_local std::vector<std::unique_ptr<char[]>> g_stacks;
thread_local cudaError_t g_last_error = cudaSuccess;

// Back to the scheduler; returns when the scheduler resumes this fiber.
void Yield(Fiber& f) {
  Grid& g = *g_grid;
  StartSwitch(&f.fake_stack, g.scheduler_bottom, g.scheduler_size);
  swapcontext(&f.ctx, &g.scheduler);
  FinishSwitch(f.fake_stack, &g.scheduler_bottom, &g.scheduler_size);
}

void OpenSyncThreads(Grid& g) {
  for (Fiber& f : g.fibers)
    if (f.state == State::kAtSyncThreads) f.state = State::kReady;
  g.arrived = 0;
}

void OpenWarp(Grid& g, unsigned w) {
  for (unsigned lane = 0; lane < 32; ++lane) {
    Fiber& f = g.fibers[w * 32 + lane];
    if (f.state == State::kAtWarpOp) f.state = State::kReady;
  }
  g.warps[w].arrived = 0;
  ++g.warps[w].phase;
}

void FiberMain() {
  Grid& g = *g_grid;
  Fiber& f = *g.current;
  FinishSwitch(nullptr, &g.scheduler_bottom, &g.scheduler_size);
  (*g.body)();
  f.state = State::kDone;
  --g.live;
  --g.warps[f.tid / 32].live;
  // A returned thread no longer holds __syncthreads back (CUDA counts exited threads as arrived).
  if (g.arrived > 0 && g.arrived == g.live) OpenSyncThreads(g);
  StartSwitch(nullptr, g.scheduler_bottom, g.scheduler_size);  // this fiber's stack is done with
  swapcontext(&f.ctx, &g.scheduler);
  Fail("a returned thread was resumed");
}

std::string DeadlockReport(const Grid& g) {
  unsigned at_sync = 0, at_warp = 0, done = 0;
  for (const Fiber& f : g.fibers) {
    at_sync += f.state == State::kAtSyncThreads;
    at_warp += f.state == State::kAtWarpOp;
    done += f.state == State::kDone;
  }
  std::string why = "a barrier not reached by all its threads";
  for (size_t w = 0; w < g.warps.size(); ++w)
    if (g.warps[w].arrived > 0 && g.warps[w].live < 32) {
      why = "lanes of warp " + std::to_string(w) + " returned while others wait at a full-mask warp operation";
      break;
    }
  return "deadlock in block " + std::to_string(blockIdx.x) + ": " + std::to_string(at_sync) +
         " threads wait at __syncthreads(), " + std::to_string(at_warp) + " at a warp operation, " +
         std::to_string(done) + " returned (" + why + ")";
}

// Apart from RunBlock's loop: getcontext returns twice (to the compiler), which would put the loop's variables at
// risk (-Wclobbered).
[[gnu::noinline]] void StartFiber(Fiber& f, unsigned tid) {
  f.state = State::kReady;
  f.tid = tid;
  f.fake_stack = nullptr;
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = f.stack;
  f.ctx.uc_stack.ss_size = kStackBytes;
  f.ctx.uc_link = nullptr;
  makecontext(&f.ctx, FiberMain, 0);
#ifdef LMKIT_EMU_ASAN
  // AddressSanitizer's swapcontext clears the shadow of the whole stack uc_stack names each time it switches to it,
  // which would erase the redzones of the frames that live across a barrier (an overrun of a kernel's local array
  // after its first __syncthreads went unreported). Clear it once here, for the frames of the previous block, and
  // leave uc_stack empty: makecontext has already placed the stack.
  __asan_unpoison_memory_region(f.stack, kStackBytes);
  f.ctx.uc_stack.ss_sp = nullptr;
  f.ctx.uc_stack.ss_size = 0;
#endif
}

void RunBlock(Grid& g, unsigned b) {
  const unsigned n = g.block.x;
  blockIdx = {b, 0, 0};
  ++g_block_serial;
  g.live = n;
  g.arrived = 0;
  for (unsigned w = 0; w < n / 32; ++w) {
    g.warps[w].live = 32;
    g.warps[w].arrived = 0;
  }
  if (g.shared) std::memset(g.shared.get(), 0xA5, g.shared_bytes);
  for (unsigned t = 0; t < n; ++t) StartFiber(g.fibers[t], t);
  // Odd blocks resume their threads in reverse order: a read that a missing __syncthreads() leaves unordered with a
  // write then sees the value before the write in one of the two orders (forward: a writer with a higher threadIdx
  // than the reader; reverse: a lower one), as does a read of __shared__ state a block forgot to initialise.
  const bool reverse = b % 2 == 1;
  for (;;) {
    bool ran = false;
    for (unsigned i = 0; i < n; ++i) {
      Fiber& f = g.fibers[reverse ? n - 1 - i : i];
      if (f.state != State::kReady) continue;
      ran = true;
      g.current = &f;
      threadIdx = {f.tid, 0, 0};
      StartSwitch(&g.scheduler_fake_stack, f.stack, kStackBytes);
      swapcontext(&g.scheduler, &f.ctx);
      FinishSwitch(g.scheduler_fake_stack, nullptr, nullptr);
    }
    unsigned done = 0;
    for (const Fiber& f : g.fibers) done += f.state == State::kDone;
    if (done == n) return;
    if (!ran) Fail(DeadlockReport(g));
  }
}

}  // namespace

void SyncThreads() {
  Grid* g = g_grid;
  if (!g) Fail("__syncthreads() outside a kernel");
  Fiber& f = *g->current;
  f.state = State::kAtSyncThreads;
  if (++g->arrived == g->live) OpenSyncThreads(*g);
  Yield(f);
}

const uint64_t* WarpExchange(unsigned mask, WarpOp op, uint64_t value) {
  Grid* g = g_grid;
  if (!g) Fail("warp operation outside a kernel");
  Fiber& f = *g->current;
  const unsigned w = f.tid / 32, lane = f.tid % 32;
  Warp& warp = g->warps[w];
  if (mask != 0xffffffffu) Fail("warp operation with a partial mask (not emulated)");
  if (warp.live != 32)
    Fail("full-mask warp operation in warp " + std::to_string(w) + " of block " + std::to_string(blockIdx.x) +
         " after " + std::to_string(32 - warp.live) + " of its lanes returned");
  if (warp.arrived == 0)
    warp.op = op;
  else if (warp.op != op)
    Fail("lanes of warp " + std::to_string(w) + " meet at different warp operations (divergence)");
  const unsigned parity = warp.phase & 1;
  warp.slots[parity][lane] = value;
  f.state = State::kAtWarpOp;
  if (++warp.arrived == 32) OpenWarp(*g, w);
  Yield(f);
  return warp.slots[parity];
}

void PoisonSharedOnce(void* p, size_t bytes) {
  if (!g_grid) Fail("shared memory declared outside a kernel");
  uint64_t& last = g_poisoned_in[p];
  if (last == g_block_serial) return;
  std::memset(p, 0xA5, bytes);
  last = g_block_serial;
}

void* DynamicSharedBase() {
  if (!g_grid) Fail("dynamic shared memory outside a kernel");
  return g_grid->shared.get();
}

bool RunGrid(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()>& body) {
  if (g_grid) Fail("a launch from inside a kernel (dynamic parallelism is not emulated)");
  // __shared__ variables are statics, so two grids running at once on different host threads would share them.
  struct Running {
    Running() {
      if (g_running.fetch_add(1) != 0) Fail("launches from several host threads at once (not emulated)");
    }
    ~Running() { g_running.fetch_sub(1); }
  } running;
  if (grid.y != 1 || grid.z != 1 || block.y != 1 || block.z != 1) Fail("only 1-D grids and blocks are emulated");
  if (block.x == 0 || block.x > 1024 || grid.x == 0 || grid.x > 0x7fffffffu || shared_bytes > kMaxDynamicShared) {
    g_last_error = cudaErrorInvalidConfiguration;
    return false;
  }
  if (block.x % 32 != 0) Fail("blockDim.x " + std::to_string(block.x) + " is not a multiple of 32 (not emulated)");
  Grid g;
  g.grid = grid;
  g.block = block;
  g.body = &body;
  g.fibers.resize(block.x);
  while (g_stacks.size() < block.x) g_stacks.emplace_back(new char[kStackBytes]);
  for (unsigned t = 0; t < block.x; ++t) g.fibers[t].stack = g_stacks[t].get();
  g.warps.resize(block.x / 32);
  // Exactly what the launch asked for, so AddressSanitizer catches an access past it.
  g.shared_bytes = shared_bytes;
  if (shared_bytes > 0) g.shared.reset(new unsigned char[shared_bytes]);
  blockDim = block;
  gridDim = grid;
  g_grid = &g;
  for (unsigned b = 0; b < grid.x; ++b) RunBlock(g, b);
  g_grid = nullptr;
  return true;
}

uint16_t F32ToF16RoundUp(float f) {
  if (f != f) return 0x7fff;  // NaN: the canonical half NaN
  // Over the non-negative halves, value grows with the bit pattern (0x0000 .. 0x7c00 = inf): the smallest half >= |f|
  // or the largest <= |f| is found by bisection, which needs no knowledge of the format's corners.
  const float a = std::fabs(f);
  uint32_t lo = 0, hi = 0x7c00;
  if (!std::signbit(f)) {  // smallest half >= f
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (F16ToF32(static_cast<uint16_t>(mid)) >= a)
        hi = mid;
      else
        lo = mid + 1;
    }
    return static_cast<uint16_t>(lo);
  }
  while (lo < hi) {  // f <= -0: -(largest half magnitude <= |f|), so -0 stays -0
    const uint32_t mid = (lo + hi + 1) / 2;
    if (F16ToF32(static_cast<uint16_t>(mid)) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  return static_cast<uint16_t>(0x8000u | lo);
}

float F16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | static_cast<uint32_t>(mant) << 13);  // inf, NaN
  const float magnitude =
      exp == 0 ? std::ldexp(static_cast<float>(mant), -24) : std::ldexp(static_cast<float>(1024 + mant), exp - 25);
  return sign ? -magnitude : magnitude;
}

}  // namespace lmkit::cuda_emu

// ---- runtime API ----------------------------------------------------------------------------------------------------
using lmkit::cuda_emu::g_last_error;

struct CUevent_st {
  std::chrono::steady_clock::time_point t;
};
struct CUstream_st {};

const char* cudaGetErrorString(cudaError_t err) {
  switch (err) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
  }
  return "unknown error";
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = g_last_error;
  g_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return cudaErrorInvalidValue;
  *prop = {};
  std::snprintf(prop->name, sizeof(prop->name), "lmkit CUDA emulator (CPU)");
  prop->totalGlobalMem = size_t{1} << 30;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = lmkit::cuda_emu::kMultiprocessors;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return cudaErrorInvalidValue;
  switch (attr) {
    case cudaDevAttrMultiProcessorCount:
      *value = lmkit::cuda_emu::kMultiprocessors;
      return cudaSuccess;
    case cudaDevAttrMemoryClockRate:
      *value = 1000000;
      return cudaSuccess;  // kHz: 2 x 1 GHz x 8 bytes = 16 GB/s
    case cudaDevAttrGlobalMemoryBusWidth:
      *value = 64;
      return cudaSuccess;
  }
  return cudaErrorInvalidValue;
}
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }  // launches run to completion before they return
cudaError_t cudaMalloc(void** p, size_t bytes) {
  // Exactly `bytes` (posix_memalign does not round the size), so AddressSanitizer catches a kernel's overrun.
  if (posix_memalign(p, 256, bytes == 0 ? 1 : bytes) != 0) return cudaErrorMemoryAllocation;
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  if (bytes) std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  if (bytes) std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t) { return cudaMemset(p, value, bytes); }
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned) { return cudaMalloc(p, bytes); }
cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = new CUstream_st{};
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new CUevent_st{};
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  e->t = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  *ms = std::chrono::duration<float, std::milli>(end->t - start->t).count();
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
