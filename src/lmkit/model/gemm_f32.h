// The fp32 matrix product of the forward pass, y = x W^T, for W [out, in] kept as fp32, bf16 or fp16.
//
// Definition (GemmF32Ref): every output element is one fused multiply-add chain over k in increasing order,
//   acc = 0; for k in [0, in): acc = fma(x[r][k], W[c][k], acc); y[r][c] = acc,
// with 16-bit weights widened to fp32 exactly first. GemmF32 computes the same chains with AVX2/FMA
// vectors across 16 output columns (blocked over rows and k, partial sums kept in y between k blocks: fp32 either
// way), so its bytes equal the reference's on every machine and for any split of the work into tiles or threads.
//
// Packed weights: panel p holds outputs [16p, 16p + 16) (rows past `out` are zero), k-major, so element (c, k) of W
// is at p * 16 * in + k * 16 + (c - 16 p). Weights may also be given unpacked ([out, in] as stored); each tile then
// gathers its panels itself, which costs a transpose per call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace lmkit::model::gemm {

inline constexpr uint32_t kPanel = 16;

// Storage for packed panels and scratch: 64-byte aligned (one cache line, one AVX-512 vector); blocks of 2 MiB and
// more are 2 MiB aligned and marked for transparent huge pages where the OS offers them, since the GEMM walks its
// weights a panel at a time across many pages, and 4 KiB pages cost a TLB miss every 4 KiB.
void* AllocatePanels(size_t bytes);
void FreePanels(void* p, size_t bytes);

// std::allocator over AllocatePanels.
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(AllocatePanels(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { FreePanels(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const {
    return true;
  }
};
template <class T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

enum class WeightType : uint8_t { kF32, kBf16, kF16 };

// A weight matrix as the GEMM reads it: `data` points at floats (kF32) or uint16 bit patterns (kBf16, kF16), either
// [out, in] row-major (packed = false) or in the panel layout above.
struct WeightView {
  WeightType type = WeightType::kF32;
  bool packed = false;
  const void* data = nullptr;
  uint32_t out = 0, in = 0;
};

// Panels of w [out, in] (T = float or uint16_t); the result has ceil(out / 16) * 16 * in elements.
template <class T>
AlignedVector<T> PackPanels(const T* w, uint32_t out, uint32_t in);
// Rows [r0, r1) of w (row r at w + r * in, any alignment) into `packed`, a zeroed buffer of PackPanels' size: packing
// a matrix piece by piece, so that a caller can drop each piece of its source once packed.
template <class T>
void PackPanelRows(const T* w, uint32_t in, uint32_t r0, uint32_t r1, T* packed);

// y[r * ldy + c] for r in [0, rows), c in [c0, c1) (c0 a multiple of 16), by the definition above. Columns outside
// [c0, c1) are not touched. Thread-safe; allocates at most one panel buffer per call.
void GemmF32(const WeightView& w, const float* x, size_t ldx, size_t rows, uint32_t c0, uint32_t c1, float* y,
             size_t ldy);
// The definition, one scalar chain per element (for tests).
void GemmF32Ref(const WeightView& w, const float* x, size_t ldx, size_t rows, uint32_t c0, uint32_t c1, float* y,
                size_t ldy);

// Which kernel GemmF32 uses on this CPU: "avx2" or "scalar" (the reference, on CPUs without AVX2, FMA and F16C).
// Dispatch is AVX2 or nothing: AVX-512 CPUs run the AVX2 kernels at half their vector width, and there are no
// AVX-512, AVX-512 BF16 or AMX kernels, because the machines these were written and measured on (AMD Zen 2/3) cannot
// run them and an untested kernel is not shipped. Any such kernel must keep the chains above (same bytes as the
// reference).
const char* GemmF32Isa();

}  // namespace lmkit::model::gemm
