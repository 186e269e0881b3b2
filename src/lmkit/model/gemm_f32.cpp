// Performance notes (AMD EPYC Zen 2 VM, AVX2, 2 FMA pipes: peak 16 fp32 FMAs per cycle per core):
// - Outer-product micro-kernel: 6 rows of x times one 16-wide packed panel, 12 ymm accumulators, one broadcast per
//   row and two panel loads per k. Each accumulator lane is one output's FMA chain in k order, which is what makes the
//   SIMD bytes equal the scalar definition (a dot-product kernel would reorder the sum per vector width).
// - k is blocked by 256 (a 16 x 256 fp32 panel slice is 16 KiB, half of L1d); partial sums go through y between
//   blocks, which rounds nothing (they are fp32 either way).
// - Fewer than 4 rows (decoding) take 2 or 4 panels per step so that 8 or more chains hide the FMA latency.
// - 16-bit weights are widened one panel slice at a time into a per-call buffer (io's bulk conversions), so a bf16
//   checkpoint stays 2 bytes per weight in memory; below 4 rows (decoding) the kernel widens them in registers.
#include "lmkit/model/gemm_f32.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lmkit/io/dtype.h"

namespace lmkit::model::gemm {
namespace {

constexpr size_t kF32Kc = 256;  // k block
constexpr size_t kF32Mr = 6;    // rows per micro-kernel call

float WeightAt(const WeightView& w, uint32_t c, size_t k) {
  const size_t i = w.packed ? size_t{c / kPanel} * kPanel * w.in + k * kPanel + c % kPanel : size_t{c} * w.in + k;
  switch (w.type) {
    case WeightType::kF32:
      return static_cast<const float*>(w.data)[i];
    case WeightType::kBf16:
      return io::Bf16ToF32(static_cast<const uint16_t*>(w.data)[i]);
    case WeightType::kF16:
      return io::F16ToF32(static_cast<const uint16_t*>(w.data)[i]);
  }
  return 0;
}

// Panel p's k slice [k0, k0 + kc) as 16 * kc fp32 (k-major): a pointer into the weights when they are packed fp32,
// else `buf` filled by widening or gathering.
const float* PanelSlice(const WeightView& w, uint32_t p, size_t k0, size_t kc, float* buf) {
  if (w.packed) {
    const size_t off = size_t{p} * kPanel * w.in + k0 * kPanel;
    switch (w.type) {
      case WeightType::kF32:
        return static_cast<const float*>(w.data) + off;
      case WeightType::kBf16:
        io::Bf16ToF32(static_cast<const uint16_t*>(w.data) + off, buf, kPanel * kc);
        return buf;
      case WeightType::kF16:
        io::F16ToF32(static_cast<const uint16_t*>(w.data) + off, buf, kPanel * kc);
        return buf;
    }
  }
  for (uint32_t j = 0; j < kPanel; ++j) {
    const uint32_t c = p * kPanel + j;
    if (c >= w.out) {
      for (size_t k = 0; k < kc; ++k) buf[k * kPanel + j] = 0;
    } else if (w.type == WeightType::kF32) {
      const float* row = static_cast<const float*>(w.data) + size_t{c} * w.in + k0;
      for (size_t k = 0; k < kc; ++k) buf[k * kPanel + j] = row[k];
    } else {
      for (size_t k = 0; k < kc; ++k) buf[k * kPanel + j] = WeightAt(w, c, k0 + k);
    }
  }
  return buf;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

// MR rows x NP panels of c (full 16-column panels, row stride ldc) += x[:, 0:kc] * the panels' slices b[]; with
// `first` the chains start from 0 instead of c. Accumulators are indexed by constants only, so that GCC keeps them in
// registers (with a partial-panel memcpy inside, it stored every accumulator back to the stack on each k: half speed).
template <int MR, int NP>
__attribute__((target("avx2,fma"))) void KernelAvx2(const float* x, size_t ldx, const float* const* b, size_t kc,
                                                    float* c, size_t ldc, bool first) {
  __m256 acc[MR][NP][2];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      acc[r][p][0] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + p * kPanel);
      acc[r][p][1] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + p * kPanel + 8);
    }
  for (size_t k = 0; k < kc; ++k) {
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      const __m256 b0 = _mm256_loadu_ps(b[p] + k * kPanel), b1 = _mm256_loadu_ps(b[p] + k * kPanel + 8);
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        const __m256 a = _mm256_broadcast_ss(x + r * ldx + k);
        acc[r][p][0] = _mm256_fmadd_ps(a, b0, acc[r][p][0]);
        acc[r][p][1] = _mm256_fmadd_ps(a, b1, acc[r][p][1]);
      }
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      _mm256_storeu_ps(c + r * ldc + p * kPanel, acc[r][p][0]);
      _mm256_storeu_ps(c + r * ldc + p * kPanel + 8, acc[r][p][1]);
    }
}

// As KernelAvx2, reading 16-bit panels (b[p]: 16 * kc values) and widening them in registers: for fewer than 4 rows
// (decoding) a widened panel slice would be read once, so widening it through a buffer doubled the memory traffic.
// The widening is exact (bf16: the bits shifted up; fp16: F16C's vcvtph2ps), so the chains are KernelAvx2's.
template <int MR, int NP, bool kBf16>
__attribute__((target("avx2,fma,f16c"))) void KernelHalfAvx2(const float* x, size_t ldx, const uint16_t* const* b,
                                                             size_t kc, float* c, size_t ldc, bool first) {
  __m256 acc[MR][NP][2];
#pragma GCC unroll 3
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      acc[r][p][0] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + p * kPanel);
      acc[r][p][1] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + p * kPanel + 8);
    }
  for (size_t k = 0; k < kc; ++k) {
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[p] + k * kPanel));
      __m256 b0, b1;
      if constexpr (kBf16) {
        b0 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(h)), 16));
        b1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(h, 1)), 16));
      } else {
        b0 = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
        b1 = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
      }
#pragma GCC unroll 3
      for (int r = 0; r < MR; ++r) {
        const __m256 a = _mm256_broadcast_ss(x + r * ldx + k);
        acc[r][p][0] = _mm256_fmadd_ps(a, b0, acc[r][p][0]);
        acc[r][p][1] = _mm256_fmadd_ps(a, b1, acc[r][p][1]);
      }
    }
  }
#pragma GCC unroll 3
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      _mm256_storeu_ps(c + r * ldc + p * kPanel, acc[r][p][0]);
      _mm256_storeu_ps(c + r * ldc + p * kPanel + 8, acc[r][p][1]);
    }
}

#pragma GCC diagnostic pop

using KernelHalf = void (*)(const float*, size_t, const uint16_t* const*, size_t, float*, size_t, bool);

template <bool kBf16, int MR>
KernelHalf PickHalfNp(int np) {
  switch (np) {
    case 1:
      return KernelHalfAvx2<MR, 1, kBf16>;
    case 2:
      return KernelHalfAvx2<MR, 2, kBf16>;
    case 3:
      return KernelHalfAvx2<MR, 3, kBf16>;
    default:
      return KernelHalfAvx2<MR, 4, kBf16>;
  }
}

template <bool kBf16>
KernelHalf PickHalf(int mr, int np) {
  switch (mr) {
    case 1:
      return PickHalfNp<kBf16, 1>(np);
    case 2:
      return PickHalfNp<kBf16, 2>(np);
    default:
      return PickHalfNp<kBf16, 3>(np);
  }
}

using KernelF32 = void (*)(const float*, size_t, const float* const*, size_t, float*, size_t, bool);

template <int MR>
KernelF32 PickF32Np(int np) {
  switch (np) {
    case 1:
      return KernelAvx2<MR, 1>;
    case 2:
      return KernelAvx2<MR, 2>;
    case 3:
      return KernelAvx2<MR, 3>;
    default:
      return KernelAvx2<MR, 4>;
  }
}

KernelF32 PickF32(int mr, int np) {
  switch (mr) {
    case 1:
      return PickF32Np<1>(np);
    case 2:
      return PickF32Np<2>(np);
    case 3:
      return PickF32Np<3>(np);
    case 4:
      return KernelAvx2<4, 1>;
    case 5:
      return KernelAvx2<5, 1>;
    default:
      return KernelAvx2<6, 1>;
  }
}

bool HaveAvx2Fma() {
  static const bool have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return have;
}

bool HaveF16c() {
  static const bool have = __builtin_cpu_supports("f16c");
  return have;
}

}  // namespace

template <class T>
void PackPanelRows(const T* w, uint32_t in, uint32_t r0, uint32_t r1, T* packed) {
  for (size_t c = r0; c < r1; ++c) {
    T* dst = packed + (c / kPanel) * kPanel * in + c % kPanel;
    const char* src = reinterpret_cast<const char*>(w + c * in);  // w may be unaligned (a mapped file)
    for (size_t k = 0; k < in; ++k) std::memcpy(dst + k * kPanel, src + k * sizeof(T), sizeof(T));
  }
}
template void PackPanelRows<float>(const float*, uint32_t, uint32_t, uint32_t, float*);
template void PackPanelRows<uint16_t>(const uint16_t*, uint32_t, uint32_t, uint32_t, uint16_t*);

template <class T>
AlignedVector<T> PackPanels(const T* w, uint32_t out, uint32_t in) {
  const size_t panels = (size_t{out} + kPanel - 1) / kPanel;
  AlignedVector<T> p(panels * kPanel * in, T{0});
  PackPanelRows(w, in, 0, out, p.data());
  return p;
}
template AlignedVector<float> PackPanels<float>(const float*, uint32_t, uint32_t);
template AlignedVector<uint16_t> PackPanels<uint16_t>(const uint16_t*, uint32_t, uint32_t);

void GemmF32Ref(const WeightView& w, const float* x, size_t ldx, size_t rows, uint32_t c0, uint32_t c1, float* y,
                size_t ldy) {
  for (size_t r = 0; r < rows; ++r)
    for (uint32_t c = c0; c < c1; ++c) {
      float acc = 0;
      for (size_t k = 0; k < w.in; ++k) acc = std::fma(x[r * ldx + k], WeightAt(w, c, k), acc);
      y[r * ldy + c] = acc;
    }
}

void GemmF32(const WeightView& w, const float* x, size_t ldx, size_t rows, uint32_t c0, uint32_t c1, float* y,
             size_t ldy) {
  if (!HaveAvx2Fma()) return GemmF32Ref(w, x, ldx, rows, c0, c1, y, ldy);
  if (rows == 0 || c1 <= c0) return;
  if (w.in == 0) {
    for (size_t r = 0; r < rows; ++r) std::fill(y + r * ldy + c0, y + r * ldy + c1, 0.0f);
    return;
  }
  const int np_max = rows >= 4 ? 1 : rows >= 2 ? 2 : 4;
  const bool direct = w.packed && w.type == WeightType::kF32;
  // Fewer than 4 rows of packed 16-bit weights: the kernel widens the panels itself (no buffer).
  const bool half_direct =
      w.packed && rows < 4 && (w.type == WeightType::kBf16 || (w.type == WeightType::kF16 && HaveF16c()));
  AlignedVector<float> buf(direct || half_direct ? 0 : size_t{4} * kPanel * kF32Kc);
  // The last panel of a range that ends mid-panel goes through `edge` (rows x 16), so kernels store whole panels.
  const uint32_t p0 = c0 / kPanel, p1 = (c1 + kPanel - 1) / kPanel, full_end = c1 / kPanel;
  AlignedVector<float> edge(full_end < p1 ? rows * kPanel : 0);
  const uint32_t edge_cols = c1 - full_end * kPanel;
  for (size_t k0 = 0; k0 < w.in; k0 += kF32Kc) {
    const size_t kc = std::min<size_t>(kF32Kc, w.in - k0);
    for (uint32_t p = p0; p < p1;) {
      const bool is_edge = p >= full_end;
      const int np = is_edge ? 1 : static_cast<int>(std::min<uint32_t>(np_max, full_end - p));
      float* c = is_edge ? edge.data() : y + size_t{p} * kPanel;  // edge keeps its k blocks' partial sums
      const size_t ldc = is_edge ? kPanel : ldy;
      if (half_direct) {
        const uint16_t* h[4];
        for (int i = 0; i < np; ++i)
          h[i] = static_cast<const uint16_t*>(w.data) + size_t{p + i} * kPanel * w.in + k0 * kPanel;
        const int mr = static_cast<int>(rows);
        (w.type == WeightType::kBf16 ? PickHalf<true>(mr, np) : PickHalf<false>(mr, np))(x + k0, ldx, h, kc, c, ldc,
                                                                                         k0 == 0);
        p += np;
        continue;
      }
      const float* b[4];
      for (int i = 0; i < np; ++i) b[i] = PanelSlice(w, p + i, k0, kc, buf.data() + size_t(i) * kPanel * kF32Kc);
      for (size_t r = 0; r < rows; r += kF32Mr) {
        const int mr = static_cast<int>(std::min(kF32Mr, rows - r));
        PickF32(mr, mr >= 4 ? 1 : np)(x + r * ldx + k0, ldx, b, kc, c + r * ldc, ldc, k0 == 0);
      }
      p += np;
    }
  }
  if (!edge.empty())
    for (size_t r = 0; r < rows; ++r)
      std::memcpy(y + r * ldy + full_end * kPanel, edge.data() + r * kPanel, edge_cols * sizeof(float));
}

const char* GemmF32Isa() { return HaveAvx2Fma() ? "avx2" : "scalar"; }

}  // namespace lmkit::model::gemm
