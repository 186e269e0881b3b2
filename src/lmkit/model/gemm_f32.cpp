// Performance notes (AMD EPYC Zen 3 VM, AVX2, 2 FMA pipes: peak 16 fp32 FMAs per cycle per core, ~104 GFLOP/s at
// 3.24 GHz; figures in docs/benchmarks.md, "The forward pass (#43)"):
// - One micro-kernel template (Kernel) for every weight type: MR rows of x times NP 16-wide packed panels, each
//   accumulator lane one output's FMA chain in k order (what makes the SIMD bytes equal the scalar definition; a
//   dot-product kernel would reorder the sum per vector width). A load policy says how 16 weights of one k become
//   two fp32 vectors: fp32 loads, bf16 shifted / masked into place, fp16 through F16C.
// - Prefill (4+ rows) is blocked as BLIS does: k blocks of 256 (a 16 x 256 fp32 panel slice is 16 KiB, half of L1d),
//   row blocks of 96 whose x slice is packed once per k block into 6-row micro-panels (k-major, so the 6 broadcasts
//   of one k are 24 contiguous bytes; strided rows of x at power-of-two widths fought over the same L1 sets) and
//   reused across every panel of the call, 6 x 16 micro-tiles (12 ymm accumulators). Partial sums go through y
//   between k blocks, which rounds nothing (they are fp32 either way).
// - Fewer than 4 rows (decoding) read x in place and take 2 or 4 panels per step so that 8 or more chains hide the
//   FMA latency; there the weights' memory traffic is the limit, and 16-bit weights stay 16-bit up to the registers.
#include "lmkit/model/gemm_f32.h"

#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <type_traits>

#include "lmkit/io/dtype.h"

namespace lmkit::model::gemm {
namespace {

constexpr size_t kKc = 256;  // k block
constexpr size_t kMr = 6;    // rows per micro-tile (and per packed micro-panel of x)
constexpr size_t kMc = 96;   // rows per packed block of x: 96 x 256 fp32 = 96 KiB, in L2 beside the output tile

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

// Rows [0, mrows) x k [0, kc) of x into micro-panels of kMr rows, k-major: micro-panel i (rows 6i to 6i + 5) at
// i * kMr * kc, element (k, r) at k * kMr + r. A last micro-panel of fewer rows leaves its other lanes unwritten (the
// kernel for that height never reads them). `a` needs 2 floats of slack past the last micro-panel.
__attribute__((target("avx2,fma,f16c"))) void PackX(const float* x, size_t ldx, size_t mrows, size_t kc, float* a) {
  size_t i = 0;
  for (; i + kMr <= mrows; i += kMr) {
    float* dst = a + i * kc;
    const float* src = x + i * ldx;
    size_t k = 0;
    // 8 k of the 6 rows: an 8 x 8 transpose (rows 6 and 7 are don't-care) whose columns are stored 6 floats apart in
    // k order, each store's last two lanes overwritten by the next one (the slack takes the last).
    for (; k + 8 <= kc; k += 8) {
      __m256 r[8];
      for (size_t j = 0; j < kMr; ++j) r[j] = _mm256_loadu_ps(src + j * ldx + k);
      r[6] = r[7] = _mm256_setzero_ps();
      __m256 t[8], u[8];
      for (int j = 0; j < 4; ++j) {
        t[2 * j] = _mm256_unpacklo_ps(r[2 * j], r[2 * j + 1]);
        t[2 * j + 1] = _mm256_unpackhi_ps(r[2 * j], r[2 * j + 1]);
      }
      for (int j = 0; j < 2; ++j) {
        u[4 * j] = _mm256_shuffle_ps(t[4 * j], t[4 * j + 2], 0x44);
        u[4 * j + 1] = _mm256_shuffle_ps(t[4 * j], t[4 * j + 2], 0xee);
        u[4 * j + 2] = _mm256_shuffle_ps(t[4 * j + 1], t[4 * j + 3], 0x44);
        u[4 * j + 3] = _mm256_shuffle_ps(t[4 * j + 1], t[4 * j + 3], 0xee);
      }
      // u[j] holds k = j (low half) and j + 4 (high half) for rows 0-3 (u[j]) and 4-7 (u[4 + j]).
      for (int j = 0; j < 4; ++j) _mm256_storeu_ps(dst + (k + j) * kMr, _mm256_permute2f128_ps(u[j], u[4 + j], 0x20));
      for (int j = 0; j < 4; ++j)
        _mm256_storeu_ps(dst + (k + 4 + j) * kMr, _mm256_permute2f128_ps(u[j], u[4 + j], 0x31));
    }
    for (; k < kc; ++k)
      for (size_t j = 0; j < kMr; ++j) dst[k * kMr + j] = src[j * ldx + k];
  }
  if (i < mrows) {
    float* dst = a + i * kc;
    for (size_t r = 0; r < mrows - i; ++r)
      for (size_t k = 0; k < kc; ++k) dst[k * kMr + r] = x[(i + r) * ldx + k];
  }
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

#define LMKIT_AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) inline

// Load policies: the 16 weights of one k of a panel (16 consecutive values) as two fp32 vectors, widened exactly.
// kInterleaved: the vectors hold the even and the odd columns instead of columns 0-7 and 8-15; the kernel then
// shuffles the outputs to and from that order once per call, not once per k.
struct LoadF32 {
  using T = float;
  static constexpr bool kInterleaved = false;
  LMKIT_AVX2_INLINE static void Load(const float* p, __m256& b0, __m256& b1) {
    b0 = _mm256_loadu_ps(p);
    b1 = _mm256_loadu_ps(p + 8);
  }
};
// bf16 is the high half of an fp32: read as 8 32-bit words (column 2j in the low half of word j, 2j + 1 in the high
// half), a shift left by 16 widens the even columns and a mask the odd ones: one load and two integer operations.
struct LoadBf16 {
  using T = uint16_t;
  static constexpr bool kInterleaved = true;
  LMKIT_AVX2_INLINE static void Load(const uint16_t* p, __m256& b0, __m256& b1) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    b0 = _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
    b1 = _mm256_castsi256_ps(_mm256_and_si256(h, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
  }
};
// fp16 through F16C's vcvtph2ps (exact, subnormals included).
struct LoadF16 {
  using T = uint16_t;
  static constexpr bool kInterleaved = false;
  LMKIT_AVX2_INLINE static void Load(const uint16_t* p, __m256& b0, __m256& b1) {
    b0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    b1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  }
};

// 16 outputs (columns 0-15 at c) into the policy's lane order, and back.
template <class L>
LMKIT_AVX2_INLINE void LoadOut(const float* c, __m256& v0, __m256& v1) {
  const __m256 lo = _mm256_loadu_ps(c), hi = _mm256_loadu_ps(c + 8);
  if constexpr (L::kInterleaved) {
    const __m256 t0 = _mm256_permute2f128_ps(lo, hi, 0x20), t1 = _mm256_permute2f128_ps(lo, hi, 0x31);
    v0 = _mm256_shuffle_ps(t0, t1, 0x88);  // columns 0 2 4 6 | 8 10 12 14
    v1 = _mm256_shuffle_ps(t0, t1, 0xdd);  // columns 1 3 5 7 | 9 11 13 15
  } else {
    v0 = lo;
    v1 = hi;
  }
}
template <class L>
LMKIT_AVX2_INLINE void StoreOut(float* c, __m256 v0, __m256 v1) {
  if constexpr (L::kInterleaved) {
    const __m256 u0 = _mm256_unpacklo_ps(v0, v1), u1 = _mm256_unpackhi_ps(v0, v1);  // 0-3 | 8-11, 4-7 | 12-15
    _mm256_storeu_ps(c, _mm256_permute2f128_ps(u0, u1, 0x20));
    _mm256_storeu_ps(c + 8, _mm256_permute2f128_ps(u0, u1, 0x31));
  } else {
    _mm256_storeu_ps(c, v0);
    _mm256_storeu_ps(c + 8, v1);
  }
}

// MR rows x NP panels of c (full 16-column panels, row stride ldc) += x[:, 0:kc] * the panels' slices b[] (16 * kc
// weights each, k-major); with `first` the chains start from 0 instead of c. x is packed (kPackedX: PackX's
// micro-panel layout) or in place (row r at x + r * ldx). Accumulators are indexed by constants only, so that GCC
// keeps them in registers (with a partial-panel memcpy inside, it stored every accumulator back on each k: half speed).
template <class L, int MR, int NP, bool kPackedX>
__attribute__((target("avx2,fma,f16c"))) void Kernel(const float* x, size_t ldx, const typename L::T* const* b,
                                                     size_t kc, float* c, size_t ldc, bool first) {
  __m256 acc[MR][NP][2];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      if (first) {
        acc[r][p][0] = _mm256_setzero_ps();
        acc[r][p][1] = _mm256_setzero_ps();
      } else {
        LoadOut<L>(c + r * ldc + p * kPanel, acc[r][p][0], acc[r][p][1]);
      }
    }
  const typename L::T* bp[NP];
#pragma GCC unroll 4
  for (int p = 0; p < NP; ++p) bp[p] = b[p];
  for (size_t k = 0; k < kc; ++k) {
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      __m256 b0, b1;
      L::Load(bp[p] + k * kPanel, b0, b1);
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        const __m256 a = _mm256_broadcast_ss(kPackedX ? x + k * kMr + r : x + r * ldx + k);
        acc[r][p][0] = _mm256_fmadd_ps(a, b0, acc[r][p][0]);
        acc[r][p][1] = _mm256_fmadd_ps(a, b1, acc[r][p][1]);
      }
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) StoreOut<L>(c + r * ldc + p * kPanel, acc[r][p][0], acc[r][p][1]);
}

#pragma GCC diagnostic pop

template <class L>
using KernelFn = void (*)(const float*, size_t, const typename L::T* const*, size_t, float*, size_t, bool);

// Micro-tiles of packed x: 6 rows, or the 1 to 5 left at the end of a row block.
template <class L>
KernelFn<L> PickPacked(size_t mr) {
  switch (mr) {
    case 1:
      return Kernel<L, 1, 1, true>;
    case 2:
      return Kernel<L, 2, 1, true>;
    case 3:
      return Kernel<L, 3, 1, true>;
    case 4:
      return Kernel<L, 4, 1, true>;
    case 5:
      return Kernel<L, 5, 1, true>;
    default:
      return Kernel<L, 6, 1, true>;
  }
}

// Decoding tiles: 1 row x 1-4 panels, 2 or 3 rows x 1-2 panels (at most 12 accumulators).
template <class L>
KernelFn<L> PickSmall(size_t mr, int np) {
  if (mr == 1) {
    switch (np) {
      case 1:
        return Kernel<L, 1, 1, false>;
      case 2:
        return Kernel<L, 1, 2, false>;
      case 3:
        return Kernel<L, 1, 3, false>;
      default:
        return Kernel<L, 1, 4, false>;
    }
  }
  if (mr == 2) return np == 1 ? Kernel<L, 2, 1, false> : Kernel<L, 2, 2, false>;
  return np == 1 ? Kernel<L, 3, 1, false> : Kernel<L, 3, 2, false>;
}

// Panel p's k slice [k0, k0 + kc) in the policy's type: 16-bit panels are read as stored (the weights must be packed
// and of the policy's type); fp32 through PanelSlice (packed fp32 in place, anything else widened or gathered).
template <class L>
const typename L::T* SliceFor(const WeightView& w, uint32_t p, size_t k0, size_t kc, float* buf) {
  if constexpr (std::is_same_v<typename L::T, float>) {
    return PanelSlice(w, p, k0, kc, buf);
  } else {
    return static_cast<const uint16_t*>(w.data) + size_t{p} * kPanel * w.in + k0 * kPanel;
  }
}

// Whether the policy reads its panels from a per-call buffer (PanelSlice's widening or gathering).
template <class L>
bool NeedsBuffer(const WeightView& w) {
  return std::is_same_v<typename L::T, float> && !(w.packed && w.type == WeightType::kF32);
}

// The last panel of a range that ends mid-panel goes through `edge` (rows x 16), so kernels store whole panels.
struct Edge {
  uint32_t p0, p1, full_end;
  AlignedVector<float> buf;
  Edge(uint32_t c0, uint32_t c1, size_t rows)
      : p0(c0 / kPanel),
        p1((c1 + kPanel - 1) / kPanel),
        full_end(c1 / kPanel),
        buf(full_end < p1 ? rows * kPanel : 0) {}
  void CopyOut(float* y, size_t ldy, size_t rows, uint32_t c1) const {
    if (buf.empty()) return;
    for (size_t r = 0; r < rows; ++r)
      std::memcpy(y + r * ldy + full_end * kPanel, buf.data() + r * kPanel, (c1 - full_end * kPanel) * sizeof(float));
  }
};

// 4+ rows: row blocks of kMc, k blocks of kKc, x packed per (row block, k block), 6 x 16 micro-tiles.
template <class L>
void GemmBlocked(const WeightView& w, const float* x, size_t ldx, size_t rows, uint32_t c0, uint32_t c1, float* y,
                 size_t ldy) {
  const size_t mc = std::min(rows, kMc);
  Edge edge(c0, c1, mc);
  AlignedVector<float> xp((mc + kMr - 1) / kMr * kMr * kKc + 2);
  AlignedVector<float> buf(NeedsBuffer<L>(w) ? kPanel * kKc : 0);
  for (size_t r0 = 0; r0 < rows; r0 += kMc) {
    const size_t mrows = std::min(kMc, rows - r0), micro = (mrows + kMr - 1) / kMr;
    for (size_t k0 = 0; k0 < w.in; k0 += kKc) {
      const size_t kc = std::min<size_t>(kKc, w.in - k0);
      PackX(x + r0 * ldx + k0, ldx, mrows, kc, xp.data());
      for (uint32_t p = edge.p0; p < edge.p1; ++p) {
        const bool is_edge = p >= edge.full_end;
        float* c = is_edge ? edge.buf.data() : y + r0 * ldy + size_t{p} * kPanel;  // edge keeps its partial sums
        const size_t ldc = is_edge ? kPanel : ldy;
        const typename L::T* b = SliceFor<L>(w, p, k0, kc, buf.data());
        // The next panel's slice is fetched a piece per micro-tile: it spans pages, where hardware prefetchers stop,
        // and its first micro-tile would otherwise wait on memory at every k.
        const char* next = nullptr;
        size_t next_kc = kc;
        if (buf.empty() && p + 1 < edge.p1) {
          next = reinterpret_cast<const char*>(SliceFor<L>(w, p + 1, k0, kc, nullptr));
        } else if (buf.empty() && k0 + kc < w.in) {
          next = reinterpret_cast<const char*>(SliceFor<L>(w, edge.p0, k0 + kc, kc, nullptr));
          next_kc = std::min<size_t>(kKc, w.in - k0 - kc);
        }
        const size_t lines = kPanel * next_kc * sizeof(typename L::T) / 64, per = (lines + micro - 1) / micro;
        for (size_t i = 0, line = 0; i < mrows; i += kMr) {
          for (const size_t end = std::min(lines, line + per); next && line < end; ++line)
            _mm_prefetch(next + line * 64, _MM_HINT_T0);
          PickPacked<L>(std::min(kMr, mrows - i))(xp.data() + i * kc, 0, &b, kc, c + i * ldc, ldc, k0 == 0);
        }
      }
    }
    edge.CopyOut(y + r0 * ldy, ldy, mrows, c1);
  }
}

// 1 to 3 rows (decoding): x read in place, several panels per step.
template <class L>
void GemmSmall(const WeightView& w, const float* x, size_t ldx, size_t rows, uint32_t c0, uint32_t c1, float* y,
               size_t ldy) {
  const int np_max = rows >= 2 ? 2 : 4;
  Edge edge(c0, c1, rows);
  AlignedVector<float> buf(NeedsBuffer<L>(w) ? size_t{4} * kPanel * kKc : 0);
  for (size_t k0 = 0; k0 < w.in; k0 += kKc) {
    const size_t kc = std::min<size_t>(kKc, w.in - k0);
    for (uint32_t p = edge.p0; p < edge.p1;) {
      const bool is_edge = p >= edge.full_end;
      const int np = is_edge ? 1 : static_cast<int>(std::min<uint32_t>(np_max, edge.full_end - p));
      float* c = is_edge ? edge.buf.data() : y + size_t{p} * kPanel;
      const size_t ldc = is_edge ? kPanel : ldy;
      const typename L::T* b[4];
      for (int i = 0; i < np; ++i) b[i] = SliceFor<L>(w, p + i, k0, kc, buf.data() + size_t(i) * kPanel * kKc);
      PickSmall<L>(rows, np)(x + k0, ldx, b, kc, c, ldc, k0 == 0);
      p += np;
    }
  }
  edge.CopyOut(y, ldy, rows, c1);
}

template <class L>
void GemmWith(const WeightView& w, const float* x, size_t ldx, size_t rows, uint32_t c0, uint32_t c1, float* y,
              size_t ldy) {
  if (rows < 4)
    GemmSmall<L>(w, x, ldx, rows, c0, c1, y, ldy);
  else
    GemmBlocked<L>(w, x, ldx, rows, c0, c1, y, ldy);
}

bool HaveAvx2Fma() {
  static const bool have =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return have;
}

}  // namespace

void* AllocatePanels(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  if (bytes < kHuge) return ::operator new (bytes, std::align_val_t{64});
  void* p = ::operator new (bytes, std::align_val_t{kHuge});
#ifdef MADV_HUGEPAGE
  // Advice only: where huge pages are off or short, the kernel keeps 4 KiB pages and the result is the same.
  madvise(p, bytes / kHuge * kHuge, MADV_HUGEPAGE);
#endif
  return p;
}

void FreePanels(void* p, size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  ::operator delete (p, std::align_val_t{bytes < kHuge ? 64 : kHuge});
}

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
  if (w.packed && w.type == WeightType::kBf16) return GemmWith<LoadBf16>(w, x, ldx, rows, c0, c1, y, ldy);
  if (w.packed && w.type == WeightType::kF16) return GemmWith<LoadF16>(w, x, ldx, rows, c0, c1, y, ldy);
  GemmWith<LoadF32>(w, x, ldx, rows, c0, c1, y, ldy);
}

const char* GemmF32Isa() { return HaveAvx2Fma() ? "avx2" : "scalar"; }

}  // namespace lmkit::model::gemm
