// Performance notes (AMD EPYC Zen 2 VM, AVX2, no VNNI):
// - vpmaddwd on sign-extended codes: 16 exact multiply-adds per instruction into int32. vpmaddubsw (u8 x s8) would
//   do 32 but saturates its int16 pair sums (255 * 127 * 2 > 32767 after the unsigned shift of the activations), which
//   would break exactness; VNNI's vpdpbusd does not saturate and is the next step on CPUs that have it.
// - Same outer-product shape as the fp32 kernel: 6 rows x 16 outputs, 12 int32 accumulators; a k pair of a panel is
//   32 bytes, widened to two ymm of int16 once and used by all 6 rows.
#include "lmkit/model/gemm_i8.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace lmkit::model::gemm {
namespace {

constexpr size_t kI8Mr = 6;

// Panel p of w [out, in] (as stored) into dst, in the packed layout (16 * I8RowStride(in) bytes).
void PackI8Panel(const int8_t* w, uint32_t out, uint32_t in, uint32_t p, int8_t* dst) {
  const size_t pairs = I8RowStride(in) / 2;
  std::memset(dst, 0, pairs * 32);
  for (uint32_t j = 0; j < kPanel; ++j) {
    const uint32_t c = p * kPanel + j;
    if (c >= out) break;
    const int8_t* row = w + size_t{c} * in;
    int8_t* d = dst + (j / 8) * 16 + (j % 8) * 2;
    for (size_t k = 0; k < in; ++k) d[(k / 2) * 32 + (k % 2)] = row[k];
  }
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

// MR rows x one panel: c[r * ldc + 0..15] = the exact sums. Constant indices only, so the accumulators stay in
// registers (a partial-panel memcpy at the end made GCC keep them on the stack).
template <int MR>
__attribute__((target("avx2"))) void KernelI8Avx2(const int16_t* x, size_t ldx, const int8_t* b, size_t pairs,
                                                  int32_t* c, size_t ldc) {
  __m256i s[MR][2];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) s[r][0] = s[r][1] = _mm256_setzero_si256();
  for (size_t j = 0; j < pairs; ++j) {
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + j * 32)));
    const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + j * 32 + 16)));
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      int32_t pair;
      std::memcpy(&pair, x + r * ldx + 2 * j, sizeof pair);
      const __m256i a = _mm256_set1_epi32(pair);
      s[r][0] = _mm256_add_epi32(s[r][0], _mm256_madd_epi16(a, w0));
      s[r][1] = _mm256_add_epi32(s[r][1], _mm256_madd_epi16(a, w1));
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), s[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc + 8), s[r][1]);
  }
}

#pragma GCC diagnostic pop

using KernelI8 = void (*)(const int16_t*, size_t, const int8_t*, size_t, int32_t*, size_t);

KernelI8 PickI8(size_t mr) {
  switch (mr) {
    case 1:
      return KernelI8Avx2<1>;
    case 2:
      return KernelI8Avx2<2>;
    case 3:
      return KernelI8Avx2<3>;
    case 4:
      return KernelI8Avx2<4>;
    case 5:
      return KernelI8Avx2<5>;
    default:
      return KernelI8Avx2<6>;
  }
}

bool HaveAvx2I8() {
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
}

}  // namespace

AlignedVector<int8_t> PackI8Panels(const int8_t* w, uint32_t out, uint32_t in) {
  const size_t panels = (size_t{out} + kPanel - 1) / kPanel, bytes = kPanel * I8RowStride(in);
  AlignedVector<int8_t> p(panels * bytes);
  for (size_t i = 0; i < panels; ++i) PackI8Panel(w, out, in, static_cast<uint32_t>(i), p.data() + i * bytes);
  return p;
}

void GemmI8Ref(const int8_t* w, uint32_t in, const int16_t* xq, size_t ldx, size_t rows, uint32_t c0, uint32_t c1,
               int32_t* acc, size_t ldacc) {
  for (size_t r = 0; r < rows; ++r)
    for (uint32_t c = c0; c < c1; ++c) {
      int32_t s = 0;
      for (size_t k = 0; k < in; ++k) s += int32_t{xq[r * ldx + k]} * int32_t{w[size_t{c} * in + k]};
      acc[r * ldacc + (c - c0)] = s;
    }
}

void GemmI8(const int8_t* w, bool packed, uint32_t out, uint32_t in, const int16_t* xq, size_t ldx, size_t rows,
            uint32_t c0, uint32_t c1, int32_t* acc, size_t ldacc) {
  if (!HaveAvx2I8() && !packed) return GemmI8Ref(w, in, xq, ldx, rows, c0, c1, acc, ldacc);
  const size_t bytes = kPanel * I8RowStride(in), pairs = I8RowStride(in) / 2;
  AlignedVector<int8_t> buf(packed ? 0 : bytes);
  std::vector<int32_t> edge(c1 % kPanel ? rows * kPanel : 0);
  for (uint32_t p = c0 / kPanel; p * kPanel < c1; ++p) {
    const int8_t* b = w + size_t{p} * bytes;
    if (!packed) {
      PackI8Panel(w, out, in, p, buf.data());
      b = buf.data();
    }
    const uint32_t ncols = std::min<uint32_t>(kPanel, c1 - p * kPanel);
    int32_t* dst = acc + (p * kPanel - c0);
    if (!HaveAvx2I8()) {  // packed weights on a CPU without AVX2: the definition over the packed layout
      for (size_t r = 0; r < rows; ++r)
        for (uint32_t j = 0; j < ncols; ++j) {
          int32_t s = 0;
          for (size_t k = 0; k < in; ++k)
            s += int32_t{xq[r * ldx + k]} * int32_t{b[(k / 2) * 32 + (j / 8) * 16 + (j % 8) * 2 + k % 2]};
          dst[r * ldacc + j] = s;
        }
      continue;
    }
    // A partial last panel goes through `edge` so that the kernel always stores 16 columns.
    int32_t* c = ncols == kPanel ? dst : edge.data();
    const size_t ldc = ncols == kPanel ? ldacc : kPanel;
    for (size_t r = 0; r < rows; r += kI8Mr) {
      const size_t mr = std::min(kI8Mr, rows - r);
      PickI8(mr)(xq + r * ldx, ldx, b, pairs, c + r * ldc, ldc);
    }
    if (ncols != kPanel)
      for (size_t r = 0; r < rows; ++r) std::memcpy(dst + r * ldacc, edge.data() + r * kPanel, ncols * sizeof(int32_t));
  }
}

}  // namespace lmkit::model::gemm
