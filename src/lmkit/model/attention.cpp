// Performance notes (AMD EPYC Zen 2 VM, AVX2, 2 FMA pipes):
// - A work item is one query block times the heads that share one kv head (GQA), so each key block is transposed
//   once and read by all of them: about 48 rows of queries (16 queries x 3 heads for 12/4 heads) per item.
// - Scores are a small GEMM (6 query rows x 16 keys per micro-kernel, 12 ymm accumulators, each lane one FMA chain
//   over the head dimension) on a transposed key block; P.V is the same shape over the block's keys, reading V rows
//   straight from the cache. The previous loop (one Dot per (query, key) and a scalar weighted sum of V) took 20% of
//   a 125M Llama's prefill.
// - Exp is a degree-6 polynomial on [-ln2/2, ln2/2] after range reduction by ln2 (coefficients a minimax fit of e^r
//   for relative error, 0.65 ulp before rounding), 8 lanes at a time; libm's expf was 7% of prefill (softmax and
//   SiLU).
// - Items are handed out last query block first: causal blocks late in the sequence cost the most.
// This file is compiled with -ffp-contract=off: a * b + c must stay two roundings where written so (the scalar
// fallback and the AVX2 kernels then give the same bits).
#include "lmkit/model/attention.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

namespace lmkit::model {
namespace {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;  // ln 2 = kLn2Hi + kLn2Lo, kLn2Hi with 9 significant bits
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kExpLo = -104.0f, kExpHi = 89.0f;  // beyond them exp is 0 / inf in fp32
constexpr float kC[7] = {1.0f, 1.0f, 0.49999994f, 0.16666412f, 0.041668113f, 0.008375789f, 0.0013841753f};

float Pow2(int32_t k) {  // k in [-126, 127]
  const uint32_t bits = static_cast<uint32_t>(k + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float ExpScalar(float x) {
  if (std::isnan(x)) return x;
  const float c = std::min(std::max(x, kExpLo), kExpHi);
  const float n = std::nearbyint(c * kLog2e);
  float r = std::fma(n, -kLn2Hi, c);
  r = std::fma(n, -kLn2Lo, r);
  float p = kC[6];
  for (int k = 5; k >= 0; --k) p = std::fma(p, r, kC[k]);
  // 2^n as two factors, each a normal float for n in [-150, 129].
  const int32_t ni = static_cast<int32_t>(n), a = ni >> 1, b = ni - a;
  return (p * Pow2(a)) * Pow2(b);
}

__attribute__((target("avx2,fma"))) inline __m256 Exp8(__m256 x) {
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 c = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpLo)), _mm256_set1_ps(kExpHi));
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Hi), c);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kC[6]);
  for (int k = 5; k >= 0; --k) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC[k]));
  const __m256i ni = _mm256_cvtps_epi32(n), a = _mm256_srai_epi32(ni, 1), b = _mm256_sub_epi32(ni, a);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 pa = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(a, bias), 23));
  const __m256 pb = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(b, bias), 23));
  return _mm256_blendv_ps(_mm256_mul_ps(_mm256_mul_ps(p, pa), pb), x, nan);
}

bool HaveAvx2Fma() {
  static const bool have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return have;
}

float LaneTree(const float* l) { return ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7])); }

// ---- Scalar kernels: the definition, operation for operation. ----

constexpr uint32_t kBk = kAttnKeyBlock;  // the row stride of transposed key blocks and of score rows

// s[r][j] = fma chain over d of q[r][d] * kt[d][j], for r < rows, j < nk16.
void QkScalar(const float* q, uint32_t rows, uint32_t hd, const float* kt, uint32_t nk16, float* s) {
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < nk16; ++j) {
      float acc = 0;
      for (uint32_t d = 0; d < hd; ++d) acc = std::fma(q[size_t{r} * hd + d], kt[size_t{d} * kBk + j], acc);
      s[size_t{r} * kBk + j] = acc;
    }
}

// p[j] = Exp(p[j] - m) for j < n (a multiple of 8); returns their lane sum.
float ExpSumScalar(float* p, uint32_t n, float m) {
  float lane[8] = {};
  for (uint32_t j = 0; j < n; ++j) lane[j % 8] += p[j] = ExpScalar(p[j] - m);
  return LaneTree(lane);
}

// s[j] = s[j] * scale for j in [lo, hi), -inf for the other j < n (a multiple of 8); returns the max.
float ScaleMaskScalar(float* s, uint32_t n, uint32_t lo, uint32_t hi, float scale) {
  float m = -INFINITY;
  for (uint32_t j = 0; j < n; ++j) {
    s[j] = j >= lo && j < hi ? s[j] * scale : -INFINITY;
    m = std::max(m, s[j]);
  }
  return m;
}

// acc[r][c] = fma chain over j < nk of p[r][j] * v[j][c], continuing from acc (row strides ldp, ldv, vd).
void PvScalar(const float* p, uint32_t rows, uint32_t ldp, const float* v, size_t ldv, uint32_t nk, uint32_t vd,
              float* acc) {
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < vd; ++c) {
      float a = acc[size_t{r} * vd + c];
      for (uint32_t j = 0; j < nk; ++j) a = std::fma(p[size_t{r} * ldp + j], v[j * ldv + c], a);
      acc[size_t{r} * vd + c] = a;
    }
}

// ---- AVX2+FMA kernels: the same chains, 8 or 16 lanes at a time. ----

// GCC keeps the accumulators in registers only with the loops over rows and vectors unrolled.
template <int MR>
__attribute__((target("avx2,fma"))) void QkMicro(const float* q, uint32_t hd, const float* kt, float* s) {
  __m256 c0[MR], c1[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = _mm256_setzero_ps();
  for (uint32_t d = 0; d < hd; ++d) {
    const __m256 b0 = _mm256_loadu_ps(kt + size_t{d} * kBk), b1 = _mm256_loadu_ps(kt + size_t{d} * kBk + 8);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 a = _mm256_broadcast_ss(q + static_cast<size_t>(i) * hd + d);
      c0[i] = _mm256_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(a, b1, c1[i]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    _mm256_storeu_ps(s + static_cast<size_t>(i) * kBk, c0[i]);
    _mm256_storeu_ps(s + static_cast<size_t>(i) * kBk + 8, c1[i]);
  }
}

constexpr uint32_t kMr = 6;

// The micro-kernels by row count (index mr - 1): the row tail of a block picks its instantiation.
constexpr void (*kQkMicro[kMr])(const float*, uint32_t, const float*, float*) = {QkMicro<1>, QkMicro<2>, QkMicro<3>,
                                                                                 QkMicro<4>, QkMicro<5>, QkMicro<6>};

__attribute__((target("avx2,fma"))) void QkAvx2(const float* q, uint32_t rows, uint32_t hd, const float* kt,
                                                uint32_t nk16, float* s) {
  for (uint32_t r = 0; r < rows; r += kMr) {
    const uint32_t mr = std::min(kMr, rows - r);
    for (uint32_t j = 0; j < nk16; j += 16) {
      const float* qr = q + size_t{r} * hd;
      float* sr = s + size_t{r} * kBk + j;
      kQkMicro[mr - 1](qr, hd, kt + j, sr);
    }
  }
}

__attribute__((target("avx2,fma"))) float ExpSumAvx2(float* p, uint32_t n, float m) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256 sum = _mm256_setzero_ps();
  for (uint32_t j = 0; j < n; j += 8) {
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(p + j), vm));
    _mm256_storeu_ps(p + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  float lane[8];
  _mm256_storeu_ps(lane, sum);
  return LaneTree(lane);
}

__attribute__((target("avx2,fma"))) float ScaleMaskAvx2(float* s, uint32_t n, uint32_t lo, uint32_t hi, float scale) {
  const __m256 vs = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY);
  const __m256i lo1 = _mm256_set1_epi32(static_cast<int>(lo) - 1), hiv = _mm256_set1_epi32(static_cast<int>(hi));
  __m256i jv = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 m = ninf;
  for (uint32_t j = 0; j < n; j += 8) {
    const __m256i ok = _mm256_and_si256(_mm256_cmpgt_epi32(jv, lo1), _mm256_cmpgt_epi32(hiv, jv));
    const __m256 v = _mm256_blendv_ps(ninf, _mm256_mul_ps(_mm256_loadu_ps(s + j), vs), _mm256_castsi256_ps(ok));
    _mm256_storeu_ps(s + j, v);
    m = _mm256_max_ps(m, v);
    jv = _mm256_add_epi32(jv, _mm256_set1_epi32(8));
  }
  float lane[8];
  _mm256_storeu_ps(lane, m);
  return *std::max_element(lane, lane + 8);
}

// MR rows x W (8 or 16) columns of acc.
template <int MR, int W>
__attribute__((target("avx2,fma"))) void PvMicro(const float* p, uint32_t ldp, const float* v, size_t ldv, uint32_t nk,
                                                 uint32_t vd, float* acc) {
  constexpr int kV = W / 8;
  __m256 c[MR][kV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 2
    for (int u = 0; u < kV; ++u) c[i][u] = _mm256_loadu_ps(acc + static_cast<size_t>(i) * vd + 8 * u);
  }
  for (uint32_t j = 0; j < nk; ++j) {
    __m256 b[kV];
#pragma GCC unroll 2
    for (int u = 0; u < kV; ++u) b[u] = _mm256_loadu_ps(v + j * ldv + 8 * u);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 a = _mm256_broadcast_ss(p + static_cast<size_t>(i) * ldp + j);
#pragma GCC unroll 2
      for (int u = 0; u < kV; ++u) c[i][u] = _mm256_fmadd_ps(a, b[u], c[i][u]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 2
    for (int u = 0; u < kV; ++u) _mm256_storeu_ps(acc + static_cast<size_t>(i) * vd + 8 * u, c[i][u]);
  }
}

template <int W>
constexpr void (*kPvMicro[kMr])(const float*, uint32_t, const float*, size_t, uint32_t, uint32_t, float*) = {
    PvMicro<1, W>, PvMicro<2, W>, PvMicro<3, W>, PvMicro<4, W>, PvMicro<5, W>, PvMicro<6, W>};

template <int W>
__attribute__((target("avx2,fma"))) void PvCols(const float* p, uint32_t rows, uint32_t ldp, const float* v, size_t ldv,
                                                uint32_t nk, uint32_t vd, float* acc) {
  for (uint32_t r = 0; r < rows; r += kMr) {
    const uint32_t mr = std::min(kMr, rows - r);
    const float* pr = p + size_t{r} * ldp;
    float* ar = acc + size_t{r} * vd;
    kPvMicro<W>[mr - 1](pr, ldp, v, ldv, nk, vd, ar);
  }
}

__attribute__((target("avx2,fma"))) void PvAvx2(const float* p, uint32_t rows, uint32_t ldp, const float* v, size_t ldv,
                                                uint32_t nk, uint32_t vd, float* acc) {
  uint32_t c = 0;
  for (; c + 16 <= vd; c += 16) PvCols<16>(p, rows, ldp, v + c, ldv, nk, vd, acc + c);
  for (; c + 8 <= vd; c += 8) PvCols<8>(p, rows, ldp, v + c, ldv, nk, vd, acc + c);
  for (; c < vd; ++c)
    for (uint32_t r = 0; r < rows; ++r) {
      float a = acc[size_t{r} * vd + c];
      for (uint32_t j = 0; j < nk; ++j) a = std::fma(p[size_t{r} * ldp + j], v[j * ldv + c], a);
      acc[size_t{r} * vd + c] = a;
    }
}

struct Kernels {
  void (*qk)(const float*, uint32_t, uint32_t, const float*, uint32_t, float*);
  float (*exp_sum)(float*, uint32_t, float);
  float (*scale_mask)(float*, uint32_t, uint32_t, uint32_t, float);
  void (*pv)(const float*, uint32_t, uint32_t, const float*, size_t, uint32_t, uint32_t, float*);
};

struct Scratch {
  std::vector<float> q, s, acc, m, l;
};

// Queries per item: about 48 rows of queries once the heads sharing a kv head are counted.
uint32_t QueryBlock(uint32_t group) { return group >= 3 ? 16 : group == 2 ? 24 : 48; }

uint32_t LoOf(const AttnArgs& a, uint32_t pos) { return a.window && pos + 1 > a.window ? pos + 1 - a.window : 0u; }

// Keys in blocks of kBk aligned to absolute positions, from the block holding the first query's first key; `kt` holds
// each (kv head, block) transposed, [kv_heads][blocks][hd][kBk], zero past the last key.
struct KeyBlocks {
  uint32_t kb0 = 0, blocks = 0;
  std::vector<float> kt;
  const float* At(const AttnArgs& a, uint32_t kvh, uint32_t kb) const {
    return kt.data() + (size_t{kvh} * blocks + (kb - kb0) / kBk) * a.hd * kBk;
  }
};

// One item: queries [t0, t1) of the `group` heads that share kv head `kvh`. Row r of the block is head
// kvh * group + r / nq, query t0 + r % nq.
void AttentionItem(const AttnArgs& a, const Kernels& k, const KeyBlocks& K, uint32_t t0, uint32_t t1, uint32_t kvh,
                   Scratch& S) {
  const uint32_t group = a.heads / a.kv_heads, nq = t1 - t0, rows = group * nq;
  const uint32_t qd = a.heads * a.hd, od = a.heads * a.vd, vvd = a.kv_heads * a.vd;
  S.q.resize(size_t{rows} * a.hd);
  S.s.resize(size_t{rows} * kBk);
  S.acc.assign(size_t{rows} * a.vd, 0.0f);
  S.m.assign(rows, -INFINITY);
  S.l.assign(rows, 0.0f);
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t h = kvh * group + r / nq, t = t0 + r % nq;
    std::memcpy(&S.q[size_t{r} * a.hd], a.q + size_t{t} * qd + size_t{h} * a.hd, sizeof(float) * a.hd);
  }
  const uint32_t last = a.p0 + t1;
  for (uint32_t kb = LoOf(a, a.p0 + t0) / kBk * kBk; kb < last; kb += kBk) {
    const uint32_t ke = std::min(last, kb + kBk), nk = ke - kb, nk16 = (nk + 15) / 16 * 16;
    k.qk(S.q.data(), rows, a.hd, K.At(a, kvh, kb), nk16, S.s.data());
    for (uint32_t r = 0; r < rows; ++r) {
      const uint32_t pos = a.p0 + t0 + r % nq;
      const uint32_t lo_abs = std::max(kb, LoOf(a, pos)), hi_abs = std::min(ke, pos + 1);
      float* s = &S.s[size_t{r} * kBk];
      if (lo_abs >= hi_abs) {  // no key of this block is visible: p = 0
        std::fill(s, s + nk16, 0.0f);
        continue;
      }
      const uint32_t lo = lo_abs - kb, hi = hi_abs - kb;
      float bm = k.scale_mask(s, nk16, lo, hi, a.scale);
      if (a.softcap > 0) {
        bm = -INFINITY;
        for (uint32_t j = lo; j < hi; ++j) bm = std::max(bm, s[j] = a.softcap * std::tanh(s[j] / a.softcap));
      }
      const float mn = std::max(S.m[r], bm), corr = ExpScalar(S.m[r] - mn);
      S.l[r] = S.l[r] * corr + k.exp_sum(s, nk16, mn);
      if (corr != 1.0f)
        for (uint32_t c = 0; c < a.vd; ++c) S.acc[size_t{r} * a.vd + c] *= corr;
      S.m[r] = mn;
    }
    k.pv(S.s.data(), rows, kBk, a.vc + size_t{kb} * vvd + size_t{kvh} * a.vd, vvd, nk, a.vd, S.acc.data());
  }
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t h = kvh * group + r / nq, t = t0 + r % nq;
    float* o = a.out + size_t{t} * od + size_t{h} * a.vd;
    const float inv = 1.0f / S.l[r];
    for (uint32_t c = 0; c < a.vd; ++c) o[c] = S.acc[size_t{r} * a.vd + c] * inv;
  }
}

}  // namespace

float Exp(float x) { return ExpScalar(x); }

namespace {

__attribute__((target("avx2,fma"))) void ExpAvx2(const float* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Exp8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = ExpScalar(x[i]);
}

__attribute__((target("avx2,fma"))) void SiluMulAvx2(const float* g, const float* u, float* out, size_t n) {
  size_t i = 0;
  const __m256 one = _mm256_set1_ps(1.0f), neg = _mm256_set1_ps(-0.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 e = Exp8(_mm256_xor_ps(gv, neg));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
  }
  for (; i < n; ++i) out[i] = g[i] / (1.0f + ExpScalar(-g[i])) * u[i];
}

}  // namespace

void Exp(const float* x, float* y, size_t n) {
  if (HaveAvx2Fma()) {
    ExpAvx2(x, y, n);
    return;
  }
  for (size_t i = 0; i < n; ++i) y[i] = ExpScalar(x[i]);
}

void SiluMul(const float* g, const float* u, float* out, size_t n) {
  if (HaveAvx2Fma()) {
    SiluMulAvx2(g, u, out, n);
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = g[i] / (1.0f + ExpScalar(-g[i])) * u[i];
}

void detail::AttentionWith(const AttnArgs& a, ThreadPool* pool, bool avx2) {
  if (a.n == 0) return;
  const Kernels k = avx2 && HaveAvx2Fma() ? Kernels{QkAvx2, ExpSumAvx2, ScaleMaskAvx2, PvAvx2}
                                          : Kernels{QkScalar, ExpSumScalar, ScaleMaskScalar, PvScalar};
  const uint32_t group = a.heads / a.kv_heads, bq = QueryBlock(group);
  const uint32_t qblocks = (a.n + bq - 1) / bq, kvd = a.kv_heads * a.hd, last = a.p0 + a.n;
  const size_t items = size_t{qblocks} * a.kv_heads;
  // A single decoding step over a short cache is too little work to hand out (see linear.cpp).
  const bool parallel = pool && uint64_t{a.n} * a.heads * last * a.hd >= (uint64_t{1} << 16);
  auto each = [&](size_t count, const std::function<void(size_t, unsigned)>& fn) {
    if (parallel && count > 1) {
      pool->ParallelFor(count, fn);
    } else {
      for (size_t i = 0; i < count; ++i) fn(i, 0);
    }
  };
  KeyBlocks K;
  K.kb0 = LoOf(a, a.p0) / kBk * kBk;
  K.blocks = (last - K.kb0 + kBk - 1) / kBk;
  K.kt.resize(size_t{a.kv_heads} * K.blocks * a.hd * kBk);
  each(size_t{a.kv_heads} * K.blocks, [&](size_t i, unsigned) {
    const uint32_t kvh = static_cast<uint32_t>(i / K.blocks), kb = K.kb0 + static_cast<uint32_t>(i % K.blocks) * kBk;
    float* dst = K.kt.data() + i * a.hd * kBk;
    const uint32_t nk = std::min(last, kb + kBk) - kb;
    for (uint32_t j = 0; j < nk; ++j) {
      const float* kr = a.kc + size_t{kb + j} * kvd + size_t{kvh} * a.hd;
      for (uint32_t d = 0; d < a.hd; ++d) dst[size_t{d} * kBk + j] = kr[d];
    }
    for (uint32_t d = 0; d < a.hd; ++d) std::fill(dst + size_t{d} * kBk + nk, dst + size_t{d} * kBk + kBk, 0.0f);
  });
  std::vector<Scratch> scratch(parallel ? pool->size() : 1);
  each(items, [&](size_t item, unsigned w) {
    const uint32_t qb = qblocks - 1 - static_cast<uint32_t>(item / a.kv_heads);
    const uint32_t kvh = static_cast<uint32_t>(item % a.kv_heads);
    AttentionItem(a, k, K, qb * bq, std::min(a.n, qb * bq + bq), kvh, scratch[w]);
  });
}

void Attention(const AttnArgs& a, ThreadPool* pool) { detail::AttentionWith(a, pool, true); }

}  // namespace lmkit::model
