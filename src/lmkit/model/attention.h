// The forward pass's causal attention and its vectorised exp (used by the softmax and SiLU).
//
// Definition. For query t at position pos = p0 + t and head h (kv head h / (heads / kv_heads)), the keys it sees are
// [lo, pos] with lo = pos + 1 - window (window 0: lo = 0). A score is s_j = (fma chain over d of q[d] * k_j[d]) *
// scale, then cap * tanh(s / cap) when soft-capped. Keys are visited in blocks of kAttnKeyBlock aligned to absolute
// positions (from the block holding lo); per block, with m the running max (-inf at first) and l the running sum (0):
// m' = max(m, max_j s_j), p_j = Exp(s_j - m'), l = l * Exp(m - m') + Sum(p), acc = acc * Exp(m - m') (skipped when
// that is 1), then acc[c] = fma chain over j of p_j * v_j[c]; finally out = acc * (1 / l). Sum adds the block's p in 8
// lanes (lane i: j = i mod 8 in j order, from the block start) then ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)).
// Keys a query does not see have p = 0, which adds exact zeros, so a query's result does not depend on the other
// queries computed with it: one prefill gives the same bytes as decoding token by token.
//
// Work: one item is a block of queries times the heads sharing one kv head (GQA reuses each key and value block);
// scores and P.V are small register-blocked products (AVX2+FMA) on key blocks transposed once per call; no score
// matrix is kept beyond one block of keys.
//
// Determinism: each output element is computed by one worker in the fixed order above, so the bytes are the same for
// any thread count; the AVX2+FMA kernels and the scalar fallback compute the same operations (correctly rounded fma,
// mul, add, the same Exp), so they are also the same on every x86-64 CPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lmkit/common/thread_pool.h"

namespace lmkit::model {

struct AttnArgs {
  const float* q;   // [n, heads * hd]
  const float* kc;  // the layer's keys at positions [0, p0 + n), [.., kv_heads * hd]
  const float* vc;  // [.., kv_heads * vd]
  float* out;       // [n, heads * vd]
  uint32_t n, p0, heads, kv_heads, hd, vd, window;
  float scale, softcap;  // softcap 0: none
};

inline constexpr uint32_t kAttnKeyBlock = 64;

// out = attention of the n queries (definition above). heads must be a multiple of kv_heads. `pool` may be null.
void Attention(const AttnArgs& a, ThreadPool* pool);

// exp(x) in fp32 within 2 ulp of the true value over the normal range (results below 2^-126 may flush toward 0;
// exp(-inf) = 0, exp(+inf) = inf, NaN stays NaN). The scalar and vector forms give the same bits.
float Exp(float x);
void Exp(const float* x, float* y, size_t n);
// out[i] = silu(g[i]) * u[i] with silu(g) = g / (1 + Exp(-g)); out may alias g or u.
void SiluMul(const float* g, const float* u, float* out, size_t n);

namespace detail {
// Attention with the AVX2+FMA kernels (`avx2`, when the CPU has them) or the scalar fallback, for tests.
void AttentionWith(const AttnArgs& a, ThreadPool* pool, bool avx2);
}  // namespace detail

}  // namespace lmkit::model
