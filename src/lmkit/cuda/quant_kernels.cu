// CUDA kernels for per-channel INT8 quantization and |x| histograms (contract in quant_kernels.h).
//
// Performance notes (design; measured figures are produced by scripts/gpu-check.sh on a machine with a GPU and
// recorded in docs/benchmarks/quant.md):
// - Quantization: one block per row, coalesced 16-byte vector loads when the row is 16-byte aligned and a multiple of
//   8 elements. Rows of up to 16384 2-byte elements stay in registers between the absmax and the coding
//   (QuantizeRowsKernelVec8<Tag, kVecs > 0>); longer ones are read twice (kVecs == 0), the second read hitting L2 for
//   rows up to ~64 KB, so HBM traffic stays ~ one read of the input plus the codes either way.
// - Histogram: per-block shared-memory counters (32-bit, flushed once per block with 64-bit global atomics) so global
//   atomics are O(bins x blocks), not O(n); 16-byte loads, two per thread per step, after a scalar head up to the
//   first 16-byte boundary (AbsHistogramKernel).
// - Bit-exactness with the CPU reference: IEEE division for the scale and its reciprocal (nvcc's default
//   -prec-div=true; lmkit never builds with --use_fast_math), no contraction into FMA (--fmad=false, CMakeLists.txt;
//   the CPU references are compiled with -ffp-contract=off), __float2half_ru / Bf16RoundUp for 16-bit scales,
//   rintf (half-even), the same clamp order as formats/int8.h, and the absmax as an integer max of sign-cleared bits,
//   which also finds NaN and inf as the CPU does.
// - Shared memory is declared through LMKIT_SHARED / LMKIT_SHARED_ARRAY / LMKIT_DYNAMIC_SHARED and launches through
//   LMKIT_LAUNCH (launch.cuh), so that the CPU emulator of tests/emu runs this file unchanged.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "lmkit/cuda/check.cuh"
#include "lmkit/cuda/launch.cuh"
#include "lmkit/cuda/quant_kernels.h"
#include "lmkit/formats/histogram_bins.h"
#include "lmkit/formats/int8.h"

namespace lmkit::cuda {
namespace {

constexpr int kThreads = 256;

struct F32Tag {
  using Storage = float;
  static __device__ __forceinline__ float ToF32(float v) { return v; }
};
struct Bf16Tag {
  using Storage = uint16_t;
  static __device__ __forceinline__ float ToF32(uint16_t v) { return __uint_as_float(static_cast<uint32_t>(v) << 16); }
};
struct F16Tag {
  using Storage = uint16_t;
  static __device__ __forceinline__ float ToF32(uint16_t v) { return __half2float(__ushort_as_half(v)); }
};

// quant::StoredScale (format_ref.cpp), step for step.
__device__ __forceinline__ float StoredScaleDevice(float absmax, float divisor, ElemType scale_type) {
  float s = __fdiv_rn(absmax, divisor);
  if (s < 1.17549435e-38f && static_cast<double>(s) * divisor < static_cast<double>(absmax))
    s = nextafterf(s, INFINITY);
  if (scale_type == ElemType::kBF16)
    return __uint_as_float(static_cast<uint32_t>(formats::Bf16RoundUp(__float_as_uint(s))) << 16);
  if (scale_type == ElemType::kF16) return __half2float(__float2half_ru(s));
  return s;
}

// |x| as fp32 bits with the sign cleared: for these, integer order is float order, and NaN and inf are exactly the
// patterns >= kInfBits. So one integer max per element gives the row's absmax and its finiteness, as the CPU kernels
// (int8_kernels.h) compute them (fmaxf would skip a NaN, and the row would be coded instead of rejected).
constexpr uint32_t kInfBits = 0x7f800000u;
__device__ __forceinline__ uint32_t AbsBits(float v) { return __float_as_uint(v) & 0x7fffffffu; }
__device__ __forceinline__ uint32_t UMax(uint32_t a, uint32_t b) { return a > b ? a : b; }

// A thread that read a non-finite value names the first one it read (its columns ascend); the lowest flat index
// row * cols + col over all threads wins, which is the element the CPU reference names in its error.
__device__ __forceinline__ void ReportNonFinite(unsigned long long* first_bad, uint64_t index) {
  atomicMin(first_bad, static_cast<unsigned long long>(index));
}

__device__ __forceinline__ uint32_t BlockMaxBits(uint32_t m, uint32_t* warp_max) {
  for (int o = 16; o > 0; o >>= 1) m = UMax(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
  __syncthreads();
  uint32_t v = threadIdx.x < kThreads / 32 ? warp_max[threadIdx.x] : 0u;
  if (threadIdx.x < 32)
    for (int o = 16; o > 0; o >>= 1) v = UMax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;  // valid in thread 0
}

// Reduces each thread's partial absmax bits over the block, stores the row's scale (thread 0) and returns it in every
// thread, with the inverse used for rounding in *inv (0 for an all-zero row). A non-finite row gets scale 0 (zero
// codes); the launcher fails the call.
__device__ __forceinline__ float RowScale(uint32_t m_bits, uint32_t* warp_max, float* s_scale, float* row_scale,
                                          float divisor, ElemType scale_type, float* inv) {
  m_bits = BlockMaxBits(m_bits, warp_max);
  if (threadIdx.x == 0) {
    const float s = m_bits < kInfBits ? StoredScaleDevice(__uint_as_float(m_bits), divisor, scale_type) : 0.0f;
    *s_scale = s;
    *row_scale = s;
  }
  __syncthreads();
  const float s = *s_scale;
  *inv = s > 0.0f ? __fdiv_rn(1.0f, s) : 0.0f;
  return s;
}

template <typename Tag>
__global__ void QuantizeRowsKernel(const typename Tag::Storage* __restrict__ in, int8_t* __restrict__ codes,
                                   float* __restrict__ scales, uint64_t cols, float divisor, float lo, float hi,
                                   ElemType scale_type, unsigned long long* __restrict__ first_bad) {
  LMKIT_SHARED_ARRAY(uint32_t, warp_max, kThreads / 32);
  LMKIT_SHARED(float, s_scale);
  const uint64_t row = blockIdx.x;
  const typename Tag::Storage* x = in + row * cols;
  int8_t* out = codes + row * cols;
  uint32_t m = 0;
  for (uint64_t c = threadIdx.x; c < cols; c += kThreads) m = UMax(m, AbsBits(Tag::ToF32(x[c])));
  if (m >= kInfBits)
    for (uint64_t c = threadIdx.x; c < cols; c += kThreads)
      if (AbsBits(Tag::ToF32(x[c])) >= kInfBits) {
        ReportNonFinite(first_bad, row * cols + c);
        break;
      }
  float inv;
  const float s = RowScale(m, warp_max, &s_scale, &scales[row], divisor, scale_type, &inv);
  for (uint64_t c = threadIdx.x; c < cols; c += kThreads)
    out[c] = formats::QuantizeValue(Tag::ToF32(x[c]), s, inv, lo, hi);
}

// The max of m and AbsBits(x) over the 8 2-byte elements of one 16-byte piece.
template <typename Tag>
__device__ __forceinline__ uint32_t MaxAbsBits8(const uint4& v, uint32_t m) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    m = UMax(m, AbsBits(Tag::ToF32(static_cast<uint16_t>(w[k] & 0xffffu))));
    m = UMax(m, AbsBits(Tag::ToF32(static_cast<uint16_t>(w[k] >> 16))));
  }
  return m;
}

// The position (0-7) of the first non-finite element of one 16-byte piece, 8 if none.
template <typename Tag>
__device__ __forceinline__ uint32_t FirstNonFinite8(const uint4& v) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  for (uint32_t j = 0; j < 8; ++j)
    if (AbsBits(Tag::ToF32(static_cast<uint16_t>(w[j / 2] >> (16 * (j % 2))))) >= kInfBits) return j;
  return 8;
}

// The 8 codes of one 16-byte piece, packed in element order (little-endian) for one 8-byte store.
template <typename Tag>
__device__ __forceinline__ uint2 Code8(const uint4& v, float s, float inv, float lo, float hi) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  uint32_t packed[2] = {0, 0};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float v0 = Tag::ToF32(static_cast<uint16_t>(w[k] & 0xffffu)),
                v1 = Tag::ToF32(static_cast<uint16_t>(w[k] >> 16));
    const uint32_t q0 = static_cast<uint8_t>(formats::QuantizeValue(v0, s, inv, lo, hi));
    const uint32_t q1 = static_cast<uint8_t>(formats::QuantizeValue(v1, s, inv, lo, hi));
    packed[k / 2] |= (q0 | (q1 << 8)) << (16 * (k % 2));
  }
  return make_uint2(packed[0], packed[1]);
}

// Vectorised kernels for 2-byte inputs: 8 elements (16 bytes) per load, 8 codes (8 bytes) per store.
// kVecs > 0, row held in registers: each thread loads its kVecs 16-byte pieces of the row once, all before the block's
// max reduction, and codes them from registers. Against kVecs == 0 (read the row for the max, then again to code it)
// it issues every load of the row at once (more bytes in flight per SM while the block waits at the reduction) and
// drops the second read (from L2 there). Rows up to kThreads * 8 * kVecs elements. The codes are the same either way
// (fmaxf is order-independent and each element goes through the same QuantizeValue).
template <typename Tag, int kVecs>
__global__ void QuantizeRowsKernelVec8(const uint16_t* __restrict__ in, int8_t* __restrict__ codes,
                                       float* __restrict__ scales, uint64_t cols, float divisor, float lo, float hi,
                                       ElemType scale_type, unsigned long long* __restrict__ first_bad) {
  LMKIT_SHARED_ARRAY(uint32_t, warp_max, kThreads / 32);
  LMKIT_SHARED(float, s_scale);
  const uint64_t row = blockIdx.x;
  const uint4* x = reinterpret_cast<const uint4*>(in + row * cols);
  uint2* out = reinterpret_cast<uint2*>(codes + row * cols);
  const uint64_t n8 = cols / 8;
  uint32_t m = 0;
  float inv;
  if constexpr (kVecs == 0) {
    for (uint64_t c = threadIdx.x; c < n8; c += kThreads) m = MaxAbsBits8<Tag>(x[c], m);
    if (m >= kInfBits)
      for (uint64_t c = threadIdx.x; c < n8; c += kThreads)
        if (const uint32_t j = FirstNonFinite8<Tag>(x[c]); j < 8) {
          ReportNonFinite(first_bad, row * cols + 8 * c + j);
          break;
        }
    const float s = RowScale(m, warp_max, &s_scale, &scales[row], divisor, scale_type, &inv);
    for (uint64_t c = threadIdx.x; c < n8; c += kThreads) out[c] = Code8<Tag>(x[c], s, inv, lo, hi);
  } else {
    uint4 v[kVecs];
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const uint64_t c = threadIdx.x + k * kThreads;
      v[k] = c < n8 ? x[c] : make_uint4(0, 0, 0, 0);  // zeros leave the max unchanged (m starts at 0)
    }
#pragma unroll
    for (int k = 0; k < kVecs; ++k) m = MaxAbsBits8<Tag>(v[k], m);
    if (m >= kInfBits)
      for (int k = 0; k < kVecs; ++k)  // the padding pieces are zeros: finite
        if (const uint32_t j = FirstNonFinite8<Tag>(v[k]); j < 8) {
          ReportNonFinite(first_bad, row * cols + 8 * (threadIdx.x + k * kThreads) + j);
          break;
        }
    const float s = RowScale(m, warp_max, &s_scale, &scales[row], divisor, scale_type, &inv);
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const uint64_t c = threadIdx.x + k * kThreads;
      if (c >= n8) break;
      out[c] = Code8<Tag>(v[k], s, inv, lo, hi);
    }
  }
}

// Which kernel codes 2-byte rows that allow 16-byte loads: the register kernel where the row fits (kAuto), or always
// the two-read kernel (kTwoReads; kept for rows too long for registers, and timed against kAuto by the benchmark).
enum class RowKernel { kAuto, kTwoReads };

// Launches QuantizeRowsKernelVec8 with the smallest kVecs that holds a row of cols / 8 16-byte pieces, or the two-read
// kernel (kVecs 0) for longer rows and for kTwoReads.
template <typename Tag>
void LaunchVec8(const uint16_t* in, int8_t* codes, float* scales, uint64_t rows, uint64_t cols, float divisor, float lo,
                float hi, ElemType scale_type, unsigned long long* first_bad, RowKernel kernel, cudaStream_t stream) {
  const uint64_t n8 = cols / 8;
  const dim3 grid(static_cast<unsigned>(rows));
  const bool regs = kernel == RowKernel::kAuto;
  if (regs && n8 <= 1 * kThreads) LMKIT_LAUNCH(grid, kThreads, 0, stream, QuantizeRowsKernelVec8<Tag, 1>)
  (in, codes, scales, cols, divisor, lo, hi, scale_type, first_bad);
  else if (regs && n8 <= 2 * kThreads) LMKIT_LAUNCH(grid, kThreads, 0, stream, QuantizeRowsKernelVec8<Tag, 2>)(
      in, codes, scales, cols, divisor, lo, hi, scale_type, first_bad);
  else if (regs && n8 <= 4 * kThreads) LMKIT_LAUNCH(grid, kThreads, 0, stream, QuantizeRowsKernelVec8<Tag, 4>)(
      in, codes, scales, cols, divisor, lo, hi, scale_type, first_bad);
  else if (regs && n8 <= 8 * kThreads) LMKIT_LAUNCH(grid, kThreads, 0, stream, QuantizeRowsKernelVec8<Tag, 8>)(
      in, codes, scales, cols, divisor, lo, hi, scale_type, first_bad);
  else LMKIT_LAUNCH(grid, kThreads, 0, stream, QuantizeRowsKernelVec8<Tag, 0>)(in, codes, scales, cols, divisor, lo, hi,
                                                                               scale_type, first_bad);
}

__device__ __forceinline__ void CountAbs(float v, float amax, uint32_t bins, unsigned int* sh) {
  const float a = fabsf(v);
  if (!(a <= amax)) return;  // above the range, or NaN
  atomicAdd(&sh[amax > 0.0f ? formats::AbsBin(a, amax, bins) : 0u], 1u);
}

// Warp-aggregated: the lanes of a (converged, full) warp whose values share a bin add their count with one atomic
// from the lowest of them. When a far outlier sets amax, nearly every value lands in the first few bins and plain
// shared-memory atomics from one warp to one address serialise (up to 32 per instruction); this pays a match per
// value instead. Same counts either way. Called only where all 32 lanes are active.
__device__ __forceinline__ void CountAbsWarp(float v, float amax, uint32_t bins, unsigned int* sh) {
  const float a = fabsf(v);
  const bool in = a <= amax;  // false above the range and for NaN
  const uint32_t bin = in ? (amax > 0.0f ? formats::AbsBin(a, amax, bins) : 0u) : 0xffffffffu;
  const unsigned peers = __match_any_sync(0xffffffffu, bin);
  if (in && (threadIdx.x & 31) == static_cast<unsigned>(__ffs(peers) - 1)) atomicAdd(&sh[bin], __popc(peers));
}

template <bool kAggregate>
__device__ __forceinline__ void Count4(const float4& v, float amax, uint32_t bins, unsigned int* sh) {
  if constexpr (kAggregate) {
    CountAbsWarp(v.x, amax, bins, sh);
    CountAbsWarp(v.y, amax, bins, sh);
    CountAbsWarp(v.z, amax, bins, sh);
    CountAbsWarp(v.w, amax, bins, sh);
  } else {
    CountAbs(v.x, amax, bins, sh);
    CountAbs(v.y, amax, bins, sh);
    CountAbs(v.z, amax, bins, sh);
    CountAbs(v.w, amax, bins, sh);
  }
}

// x is read as float4, two per thread per step, so that each thread has 32 bytes in flight (one 4-byte load per thread
// per step left HBM mostly idle: ~1k threads per SM x 4 bytes is far below the bytes in flight that the memory latency
// needs). The first 0-3 values, up to x's first 16-byte boundary, and the last 0-3 are counted one by one, so any
// fp32-aligned x takes the vector loop. The counts do not depend on which thread reads which value.
// kAggregate: the main loop's steps are taken by whole warps (its bound is tested on the warp's last lane, so all 32
// lanes run every step together) and count through CountAbsWarp; what is left counts plainly.
template <bool kAggregate>
__global__ void AbsHistogramKernel(const float* __restrict__ x, uint64_t n, float amax, uint32_t bins,
                                   unsigned long long* __restrict__ counts) {
  LMKIT_DYNAMIC_SHARED(unsigned int, sh);
  for (uint32_t i = threadIdx.x; i < bins; i += blockDim.x) sh[i] = 0;
  __syncthreads();
  const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t to_boundary = (16 - reinterpret_cast<uintptr_t>(x) % 16) % 16 / 4;
  const uint64_t head = to_boundary < n ? to_boundary : n;
  if (tid < head) CountAbs(x[tid], amax, bins, sh);
  const float4* x4 = reinterpret_cast<const float4*>(x + head);
  const uint64_t n4 = (n - head) / 4;
  uint64_t i = tid;
  if constexpr (kAggregate) {
    const uint64_t to_last_lane = 31 - (threadIdx.x & 31);  // blockDim.x is a multiple of 32
    for (; i + to_last_lane + stride < n4; i += 2 * stride) {
      const float4 a = x4[i], b = x4[i + stride];
      Count4<true>(a, amax, bins, sh);
      Count4<true>(b, amax, bins, sh);
    }
  }
  for (; i + stride < n4; i += 2 * stride) {
    const float4 a = x4[i], b = x4[i + stride];
    Count4<false>(a, amax, bins, sh);
    Count4<false>(b, amax, bins, sh);
  }
  if (i < n4) Count4<false>(x4[i], amax, bins, sh);
  for (uint64_t j = head + 4 * n4 + tid; j < n; j += stride) CountAbs(x[j], amax, bins, sh);
  __syncthreads();
  for (uint32_t k = threadIdx.x; k < bins; k += blockDim.x)
    if (sh[k]) atomicAdd(&counts[k], static_cast<unsigned long long>(sh[k]));
}

__global__ void FillKernel(uint16_t* p, uint64_t n) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    p[i] = static_cast<uint16_t>(0x3c00u | (h >> 22)) ^ static_cast<uint16_t>((h & 1u) << 15);  // +-[1, 2) bf16
  }
}

// Uniform over [-4, 4), or (laplace) sign * -ln(1 - u): Laplace with scale 1, |x| < 16.7 (u < 1 - 2^-24).
__global__ void FillF32Kernel(float* p, uint64_t n, bool laplace) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    const float u = static_cast<float>(h >> 8) / 16777216.0f;
    p[i] = laplace ? ((h & 1u) ? 1.0f : -1.0f) * -logf(1.0f - u) : (u - 0.5f) * 8.0f;
  }
}

size_t ElemSize(ElemType t) { return t == ElemType::kF32 ? 4 : 2; }

// Frees device memory on scope exit.
struct DeviceBuffer {
  void* p = nullptr;
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
};

Status HaveDevice() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return Status::Unsupported("cuda", "no CUDA device");
  }
  return Status::Ok();
}

constexpr uint64_t kMaxRows = 0x7fffffffull;  // one block per row: gridDim.x's limit
constexpr uint32_t kMaxBins = 12288;          // 48 KiB of shared counters: the default per-block limit

Status TooManyRows() {
  return Status::Unsupported("cuda", Field("rows") + " must be at most 2^31 - 1 (one block per row)");
}

// d_first_bad: one device word, all ones before the launch; afterwards the flat index of the first non-finite input
// element, or still all ones.
Status LaunchQuantize(const void* d_in, ElemType type, uint64_t rows, uint64_t cols, formats::Int8Convention conv,
                      ElemType scale_type, int8_t* d_codes, float* d_scales, unsigned long long* d_first_bad,
                      cudaStream_t stream, RowKernel kernel = RowKernel::kAuto) {
  const formats::Int8Range r = formats::RangeOf(conv);
  if (rows == 0) return Status::Ok();
  if (rows > kMaxRows) return TooManyRows();
  const dim3 grid(static_cast<unsigned>(rows));
  // 16-byte loads of the input, 8-byte stores of the codes.
  const bool vec = type != ElemType::kF32 && cols % 8 == 0 && reinterpret_cast<uintptr_t>(d_in) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(d_codes) % 8 == 0;
  const auto* in16 = static_cast<const uint16_t*>(d_in);
  if (vec && type == ElemType::kBF16)
    LaunchVec8<Bf16Tag>(in16, d_codes, d_scales, rows, cols, r.divisor, r.lo, r.hi, scale_type, d_first_bad, kernel,
                        stream);
  else if (vec)
    LaunchVec8<F16Tag>(in16, d_codes, d_scales, rows, cols, r.divisor, r.lo, r.hi, scale_type, d_first_bad, kernel,
                       stream);
  else if (type == ElemType::kF32)
    LMKIT_LAUNCH(grid, kThreads, 0, stream, QuantizeRowsKernel<F32Tag>)
  (static_cast<const float*>(d_in), d_codes, d_scales, cols, r.divisor, r.lo, r.hi, scale_type, d_first_bad);
  else if (type == ElemType::kBF16) LMKIT_LAUNCH(grid, kThreads, 0, stream, QuantizeRowsKernel<Bf16Tag>)(
      in16, d_codes, d_scales, cols, r.divisor, r.lo, r.hi, scale_type, d_first_bad);
  else LMKIT_LAUNCH(grid, kThreads, 0, stream, QuantizeRowsKernel<F16Tag>)(in16, d_codes, d_scales, cols, r.divisor,
                                                                           r.lo, r.hi, scale_type, d_first_bad);
  LMKIT_CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

Status MultiprocessorCount(int* sms) {
  int device = 0;
  LMKIT_CUDA_CHECK(cudaGetDevice(&device));
  LMKIT_CUDA_CHECK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device));
  return Status::Ok();
}

Status CheckBins(uint32_t bins) {
  if (bins == 0 || bins > kMaxBins) return Status::Unsupported("cuda", Field("bins") + " must be in [1, 12288]");
  return Status::Ok();
}

// sms: the device's multiprocessor count, asked for by the caller (outside the benchmark's timed launches, where the
// two runtime queries would add host time between the events at small sizes). d_x: fp32-aligned.
Status LaunchHistogram(const float* d_x, uint64_t n, float amax, uint32_t bins, unsigned long long* d_counts, int sms,
                       HistogramKernel kernel, cudaStream_t stream) {
  LMKIT_RETURN_IF_ERROR(CheckBins(bins));
  const uint64_t want = (n / 8 + kThreads - 1) / kThreads;  // 8 values per thread per step
  const unsigned blocks = static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(want, 4ull * sms)));
  const size_t shared = bins * sizeof(unsigned int);
  if (kernel == HistogramKernel::kWarpAggregated)
    LMKIT_LAUNCH(blocks, kThreads, shared, stream, AbsHistogramKernel<true>)(d_x, n, amax, bins, d_counts);
  else
    LMKIT_LAUNCH(blocks, kThreads, shared, stream, AbsHistogramKernel<false>)(d_x, n, amax, bins, d_counts);
  LMKIT_CUDA_CHECK(cudaGetLastError());
  return Status::Ok();
}

// Copies `bytes` of host data into a new device buffer (*buf) and returns their device address in *dev. The copy starts
// at the host data's offset from a 16-byte boundary, so the kernel that runs is the one device-resident data of that
// alignment would get (and tests reach every path from the host API). Exact size (at least 1 byte: a 0-byte
// cudaMalloc returns no pointer), so an overrun is not hidden by slack.
Status CopyToDevice(const void* host, size_t bytes, DeviceBuffer* buf, void** dev, cudaStream_t stream) {
  const size_t offset = reinterpret_cast<uintptr_t>(host) % 16;
  LMKIT_CUDA_CHECK(cudaMalloc(&buf->p, offset + std::max<size_t>(bytes, 1)));
  *dev = static_cast<char*>(buf->p) + offset;
  LMKIT_CUDA_CHECK(cudaMemcpyAsync(*dev, host, bytes, cudaMemcpyHostToDevice, stream));
  return Status::Ok();
}

template <typename Fn>
Result<KernelTiming> Time(Fn&& launch, double bytes, int iterations) {
  cudaEvent_t a, b;
  LMKIT_CUDA_CHECK(cudaEventCreate(&a));
  LMKIT_CUDA_CHECK(cudaEventCreate(&b));
  if (Status warm = launch(); !warm.ok()) return warm;
  std::vector<float> ms;
  for (int i = 0; i < std::max(1, iterations); ++i) {
    LMKIT_CUDA_CHECK(cudaEventRecord(a));
    if (Status st = launch(); !st.ok()) return st;
    LMKIT_CUDA_CHECK(cudaEventRecord(b));
    LMKIT_CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    LMKIT_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  LMKIT_CUDA_CHECK(cudaEventDestroy(a));
  LMKIT_CUDA_CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  KernelTiming k;
  k.seconds = ms[ms.size() / 2] / 1e3;
  k.bytes = bytes;
  k.gb_per_s = bytes / k.seconds / 1e9;
  return k;
}

}  // namespace

Result<OwnedStream> OwnedStream::Create() {
  LMKIT_RETURN_IF_ERROR(HaveDevice());
  OwnedStream o;
  cudaStream_t s = nullptr;
  LMKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  o.s_ = s;
  return Result<OwnedStream>(std::move(o));
}

OwnedStream& OwnedStream::operator=(OwnedStream&& o) noexcept {
  std::swap(s_, o.s_);
  return *this;
}

OwnedStream::~OwnedStream() {
  if (s_ != nullptr) cudaStreamDestroy(s_);
}

Status QuantizePerChannelHost(const void* data, ElemType type, uint64_t rows, uint64_t cols,
                              formats::Int8Convention convention, ElemType scale_type, int8_t* codes, float* scales,
                              Stream stream) {
  LMKIT_RETURN_IF_ERROR(HaveDevice());
  if (rows > kMaxRows) return TooManyRows();  // before allocating for them
  DeviceBuffer din, dcodes, dscales, dbad;
  void* d_in = nullptr;
  LMKIT_RETURN_IF_ERROR(CopyToDevice(data, rows * cols * ElemSize(type), &din, &d_in, stream));
  LMKIT_CUDA_CHECK(cudaMalloc(&dcodes.p, std::max<size_t>(rows * cols, 1)));  // exact sizes, as CopyToDevice's
  LMKIT_CUDA_CHECK(cudaMalloc(&dscales.p, std::max<size_t>(rows * sizeof(float), 1)));
  LMKIT_CUDA_CHECK(cudaMalloc(&dbad.p, sizeof(unsigned long long)));
  LMKIT_CUDA_CHECK(cudaMemsetAsync(dbad.p, 0xff, sizeof(unsigned long long), stream));
  auto* d_bad = static_cast<unsigned long long*>(dbad.p);
  LMKIT_RETURN_IF_ERROR(LaunchQuantize(d_in, type, rows, cols, convention, scale_type, static_cast<int8_t*>(dcodes.p),
                                       static_cast<float*>(dscales.p), d_bad, stream));
  unsigned long long first_bad = 0;
  LMKIT_CUDA_CHECK(cudaMemcpyAsync(&first_bad, d_bad, sizeof first_bad, cudaMemcpyDeviceToHost, stream));
  LMKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (first_bad != ~0ull)  // quant::QuantizeMatrix's error, word for word
    return Status::InvalidInput(
        "", "non-finite value at [" + std::to_string(first_bad / cols) + ", " + std::to_string(first_bad % cols) + "]");
  LMKIT_CUDA_CHECK(cudaMemcpyAsync(codes, dcodes.p, rows * cols, cudaMemcpyDeviceToHost, stream));
  LMKIT_CUDA_CHECK(cudaMemcpyAsync(scales, dscales.p, rows * sizeof(float), cudaMemcpyDeviceToHost, stream));
  LMKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return Status::Ok();
}

Status AbsHistogramHost(const float* x, uint64_t n, float amax, uint32_t bins, uint64_t* counts, HistogramKernel kernel,
                        Stream stream) {
  LMKIT_RETURN_IF_ERROR(HaveDevice());
  LMKIT_RETURN_IF_ERROR(CheckBins(bins));
  DeviceBuffer dx, dc;
  void* d_x = nullptr;
  LMKIT_RETURN_IF_ERROR(CopyToDevice(x, n * sizeof(float), &dx, &d_x, stream));
  LMKIT_CUDA_CHECK(cudaMalloc(&dc.p, bins * sizeof(unsigned long long)));
  LMKIT_CUDA_CHECK(cudaMemcpyAsync(dc.p, counts, bins * sizeof(unsigned long long), cudaMemcpyHostToDevice, stream));
  int sms = 0;
  LMKIT_RETURN_IF_ERROR(MultiprocessorCount(&sms));
  LMKIT_RETURN_IF_ERROR(LaunchHistogram(static_cast<const float*>(d_x), n, amax, bins,
                                        static_cast<unsigned long long*>(dc.p), sms, kernel, stream));
  LMKIT_CUDA_CHECK(cudaMemcpyAsync(counts, dc.p, bins * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream));
  LMKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return Status::Ok();
}

Result<KernelTiming> BenchQuantizePerChannel(uint64_t rows, uint64_t cols, int iterations, bool two_reads) {
  LMKIT_RETURN_IF_ERROR(HaveDevice());
  DeviceBuffer din, dcodes, dscales, dbad;
  LMKIT_CUDA_CHECK(cudaMalloc(&din.p, rows * cols * 2));
  LMKIT_CUDA_CHECK(cudaMalloc(&dcodes.p, rows * cols));
  LMKIT_CUDA_CHECK(cudaMalloc(&dscales.p, rows * sizeof(float)));
  LMKIT_CUDA_CHECK(cudaMalloc(&dbad.p, sizeof(unsigned long long)));
  LMKIT_CUDA_CHECK(cudaMemset(dbad.p, 0xff, sizeof(unsigned long long)));
  const cudaStream_t stream = nullptr;  // the default stream, which the timing events are recorded on
  LMKIT_LAUNCH(1024, kThreads, 0, stream, FillKernel)(static_cast<uint16_t*>(din.p), rows * cols);
  LMKIT_CUDA_CHECK(cudaGetLastError());
  LMKIT_CUDA_CHECK(cudaDeviceSynchronize());
  const double bytes = static_cast<double>(rows * cols * 3 + rows * 4);
  return Time(
      [&] {
        return LaunchQuantize(din.p, ElemType::kBF16, rows, cols, formats::Int8Convention::kHalfStep, ElemType::kBF16,
                              static_cast<int8_t*>(dcodes.p), static_cast<float*>(dscales.p),
                              static_cast<unsigned long long*>(dbad.p), stream,
                              two_reads ? RowKernel::kTwoReads : RowKernel::kAuto);
      },
      bytes, iterations);
}

Result<KernelTiming> BenchAbsHistogram(uint64_t n, uint32_t bins, int iterations, BenchData data,
                                       HistogramKernel kernel) {
  LMKIT_RETURN_IF_ERROR(HaveDevice());
  DeviceBuffer dx, dc;
  LMKIT_CUDA_CHECK(cudaMalloc(&dx.p, n * sizeof(float)));
  LMKIT_CUDA_CHECK(cudaMalloc(&dc.p, bins * sizeof(unsigned long long)));
  const bool laplace = data != BenchData::kUniform;
  const cudaStream_t stream = nullptr;  // the default stream, which the timing events are recorded on
  LMKIT_LAUNCH(1024, kThreads, 0, stream, FillF32Kernel)(static_cast<float*>(dx.p), n, laplace);
  const float amax = data == BenchData::kUniform ? 4.0f : data == BenchData::kLaplace ? 16.7f : 1000.0f;
  LMKIT_CUDA_CHECK(cudaGetLastError());
  LMKIT_CUDA_CHECK(cudaMemset(dc.p, 0, bins * sizeof(unsigned long long)));
  LMKIT_CUDA_CHECK(cudaDeviceSynchronize());
  int sms = 0;
  LMKIT_RETURN_IF_ERROR(MultiprocessorCount(&sms));
  return Time(
      [&] {
        return LaunchHistogram(static_cast<const float*>(dx.p), n, amax, bins, static_cast<unsigned long long*>(dc.p),
                               sms, kernel, stream);
      },
      static_cast<double>(n * sizeof(float)), iterations);
}

}  // namespace lmkit::cuda
