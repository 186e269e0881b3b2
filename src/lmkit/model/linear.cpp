// Performance notes: the products are gemm_f32.h / gemm_i8.h (packed weights, AVX2 outer-product kernels; their own
// notes say what was measured). Work is split into (row block, output block) tiles so that both prefill (many rows)
// and decoding (one row) keep every worker busy; each output element belongs to exactly one tile and its sum does not
// depend on the tile (determinism). Row blocks are at most 96 rows (the GEMM's packed block of x) and output blocks
// at most 1024 columns: each tile packs its rows of x once per k block and reuses them across all its panels, and at
// 512 tokens of the 125M model's shapes, 1024-column tiles ran at 80-84 GFLOP per CPU second where 256-column ones ran
// at 65-69 (fp32, 1 thread, 2026-12-03). Matmuls under 64k multiply-adds run on the calling thread: for stories260K
// decoding (64x64 matrices) the pool round trip was most of the time (generate 16 x 256 tokens, 2 threads: 1.32 s ->
// 0.98 s with the threshold; same ids).
#include "lmkit/model/linear.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lmkit/formats/fp8.h"
#include "lmkit/formats/int8.h"
#include "lmkit/io/dtype.h"
#include "lmkit/model/gemm_i8.h"

namespace lmkit::model {
namespace {

#pragma GCC diagnostic ignored "-Wpsabi"
typedef float F8 __attribute__((vector_size(32)));

// Codes of one activation row with scale `s` (compressed-tensors convention, see linear.h), as int16 for gemm_i8.h.
void QuantizeRow(const float* x, uint32_t n, float s, int16_t* q) {
  const formats::Int8Range r = formats::RangeOf(formats::Int8Convention::kHalfStep);
  const float inv = formats::InverseScale(s);
  for (uint32_t i = 0; i < n; ++i) q[i] = formats::QuantizeValue(x[i], s, inv, r.lo, r.hi);
}

typedef uint32_t U8 __attribute__((vector_size(32)));

// formats::E4M3FromF32 then E4M3ToF32 on 8 values, branch-free: the same cases (NaN, saturation at 448, the subnormal
// grid of 2^-9, normal values keeping 3 mantissa bits, ties to even) as lane masks.
F8 E4M3Round8(F8 v) {
  U8 bits;
  std::memcpy(&bits, &v, sizeof bits);
  const U8 sign = bits & 0x80000000u, a = bits & 0x7fffffffu;
  F8 af;
  std::memcpy(&af, &a, sizeof af);
  // Subnormal: rint(a * 512) / 512; adding 2^23 rounds a * 512 (< 8) to an integer, half to even.
  const F8 sub = ((af * 512.0f + 8388608.0f) - 8388608.0f) * (1.0f / 512.0f);
  U8 sub_bits;
  std::memcpy(&sub_bits, &sub, sizeof sub_bits);
  const U8 normal = (a + 0x7ffffu + ((a >> 20) & 1u)) & 0xfff00000u;
  const U8 is_nan = (U8)(a > 0x7f800000u), is_sat = (U8)(a >= 0x43e00000u);
  const U8 is_sub = (U8)(a < 0x3c800000u);
  U8 r = (is_sub & sub_bits) | (~is_sub & normal);
  r = (is_sat & 0x43e00000u) | (~is_sat & r);
  r = (is_nan & 0x7fc00000u) | (~is_nan & r);
  r |= sign;
  F8 out;
  std::memcpy(&out, &r, sizeof out);
  return out;
}

// Rows per piece of PackHalf: about 1 MiB of 16-bit values, whole panels.
uint32_t HalfRowChunk(uint32_t in) {
  return std::max<uint32_t>(gemm::kPanel,
                            (uint32_t{1} << 19) / std::max<uint32_t>(1, in) / gemm::kPanel * gemm::kPanel);
}

}  // namespace

void RoundThroughE4M3(const float* x, uint32_t n, float s, float* out) {
  if (!(s > 0)) {
    std::fill(out, out + n, 0.0f);
    return;
  }
  uint32_t i = 0;
  F8 vs;
  for (int l = 0; l < 8; ++l) vs[l] = s;
  for (; i + 8 <= n; i += 8) {
    F8 v;
    std::memcpy(&v, x + i, sizeof v);
    const F8 r = E4M3Round8(v / vs) * vs;
    std::memcpy(out + i, &r, sizeof r);
  }
  for (; i < n; ++i) out[i] = formats::E4M3ToF32(formats::E4M3FromF32(x[i] / s)) * s;
}

float Dot(const float* a, const float* b, uint32_t n) {
  F8 acc = {};
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    F8 va, vb;
    std::memcpy(&va, a + i, sizeof va);
    std::memcpy(&vb, b + i, sizeof vb);
    acc += va * vb;
  }
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void Linear::Pack() {
  if (packed_) return;
  switch (kind) {
    case Kind::kFloat:
    case Kind::kFp8Static:
    case Kind::kFp8Dynamic:
      packed_f32_ = gemm::PackPanels(weight.data(), out, in);
      std::vector<float>().swap(weight);
      break;
    case Kind::kBf16:
    case Kind::kFp16:
      packed_u16_ = gemm::PackPanels(half.data(), out, in);
      std::vector<uint16_t>().swap(half);
      break;
    case Kind::kInt8Static:
    case Kind::kInt8Dynamic:
      packed_i8_ = gemm::PackI8Panels(codes.data(), out, in);
      std::vector<int8_t>().swap(codes);
      break;
  }
  packed_ = true;
}

void Linear::PackHalf(Kind half_kind, const void* bits,
                      const std::function<void(uint32_t r0, uint32_t r1)>& packed_rows) {
  kind = half_kind;
  std::vector<uint16_t>().swap(half);
  const size_t panels = (size_t{out} + gemm::kPanel - 1) / gemm::kPanel;
  packed_u16_.assign(panels * gemm::kPanel * in, 0);
  const uint32_t chunk = HalfRowChunk(in);
  for (uint32_t r0 = 0; r0 < out; r0 += chunk) {
    const uint32_t r1 = std::min(out, r0 + chunk);
    gemm::PackPanelRows(static_cast<const uint16_t*>(bits), in, r0, r1, packed_u16_.data());
    if (packed_rows) packed_rows(r0, r1);
  }
  packed_ = true;
}

void Linear::PackF32(const void* bits, const std::function<void(uint32_t r0, uint32_t r1)>& packed_rows) {
  kind = Kind::kFloat;
  std::vector<float>().swap(weight);
  const size_t panels = (size_t{out} + gemm::kPanel - 1) / gemm::kPanel;
  packed_f32_.assign(panels * gemm::kPanel * in, 0.0f);
  const uint32_t chunk = HalfRowChunk(in);
  for (uint32_t r0 = 0; r0 < out; r0 += chunk) {
    const uint32_t r1 = std::min(out, r0 + chunk);
    gemm::PackPanelRows(static_cast<const float*>(bits), in, r0, r1, packed_f32_.data());
    if (packed_rows) packed_rows(r0, r1);
  }
  packed_ = true;
}

void Linear::Row(uint32_t r, float* dst) const {
  const bool f32 = kind != Kind::kBf16 && kind != Kind::kFp16;
  auto widen = [&](uint16_t v) { return kind == Kind::kBf16 ? io::Bf16ToF32(v) : io::F16ToF32(v); };
  if (!packed_) {
    if (f32) {
      std::copy_n(weight.data() + size_t{r} * in, in, dst);
    } else {
      for (uint32_t k = 0; k < in; ++k) dst[k] = widen(half[size_t{r} * in + k]);
    }
    return;
  }
  // Panel layout (gemm_f32.h): element (r, k) at (r / 16) * 16 * in + k * 16 + r % 16.
  const size_t base = size_t{r / gemm::kPanel} * gemm::kPanel * in + r % gemm::kPanel;
  if (f32) {
    for (uint32_t k = 0; k < in; ++k) dst[k] = packed_f32_[base + size_t{k} * gemm::kPanel];
  } else {
    for (uint32_t k = 0; k < in; ++k) dst[k] = widen(packed_u16_[base + size_t{k} * gemm::kPanel]);
  }
}

size_t Linear::WeightBytes() const {
  return (weight.size() + packed_f32_.size()) * sizeof(float) + (half.size() + packed_u16_.size()) * sizeof(uint16_t) +
         codes.size() + packed_i8_.size();
}

void Linear::Apply(const float* x, uint64_t rows, float* y, ThreadPool* pool) const {
  const bool int8 = kind == Kind::kInt8Static || kind == Kind::kInt8Dynamic;
  const bool fp8 = kind == Kind::kFp8Static || kind == Kind::kFp8Dynamic;
  // FP8 kinds: the activations rounded through E4M3, then the float matmul.
  std::vector<float> xf;
  // Int8 kinds: activation codes (int16, rows padded to even) and scales, computed once per row before the matmul.
  std::vector<int16_t> xq;
  std::vector<float> xs;
  const size_t ldq = gemm::I8RowStride(in);
  if (fp8) {
    xf.resize(rows * in);
    for (uint64_t r = 0; r < rows; ++r) {
      const float* row = x + r * in;
      float s = input_scale;
      if (kind == Kind::kFp8Dynamic) {
        float amax = 0;
        for (uint32_t i = 0; i < in; ++i) amax = std::max(amax, std::fabs(row[i]));
        s = amax / formats::kE4M3Max;
      }
      RoundThroughE4M3(row, in, s, xf.data() + r * in);
    }
    x = xf.data();
  } else if (int8) {
    xq.assign(rows * ldq, 0);
    xs.resize(rows);
    for (uint64_t r = 0; r < rows; ++r) {
      const float* row = x + r * in;
      float s = input_scale;
      if (kind == Kind::kInt8Dynamic) {
        float amax = 0;
        for (uint32_t i = 0; i < in; ++i) amax = std::max(amax, std::fabs(row[i]));
        s = amax / formats::RangeOf(formats::Int8Convention::kHalfStep).divisor;
      }
      xs[r] = s;
      QuantizeRow(row, in, s, xq.data() + r * ldq);
    }
  }
  gemm::WeightView w;
  w.type = kind == Kind::kBf16   ? gemm::WeightType::kBf16
           : kind == Kind::kFp16 ? gemm::WeightType::kF16
                                 : gemm::WeightType::kF32;
  w.packed = packed_;
  w.out = out;
  w.in = in;
  if (w.type == gemm::WeightType::kF32)
    w.data = packed_ ? static_cast<const void*>(packed_f32_.data()) : weight.data();
  else
    w.data = packed_ ? static_cast<const void*>(packed_u16_.data()) : half.data();

  const unsigned workers = pool ? pool->size() : 1;
  uint64_t row_block = rows;
  if (rows > 6) row_block = std::min<uint64_t>(96, ((rows + workers - 1) / workers + 5) / 6 * 6);
  const uint64_t row_blocks = rows == 0 ? 0 : (rows + row_block - 1) / row_block;
  const uint64_t panels = (out + gemm::kPanel - 1) / gemm::kPanel;
  // Enough output blocks that every worker has several tiles, and none wider than 1024 outputs.
  uint64_t col_blocks =
      std::max<uint64_t>((4 * workers + row_blocks - 1) / std::max<uint64_t>(1, row_blocks), (out + 1023) / 1024);
  col_blocks = std::max<uint64_t>(1, std::min<uint64_t>(col_blocks, panels));
  const uint64_t col_block = (panels + col_blocks - 1) / col_blocks * gemm::kPanel;
  col_blocks = col_block == 0 ? 0 : (out + col_block - 1) / col_block;
  auto tile = [&](size_t t, unsigned) {
    const uint64_t rb = t / col_blocks, cb = t % col_blocks;
    const uint64_t r0 = rb * row_block, r1 = std::min(rows, r0 + row_block);
    const uint32_t c0 = static_cast<uint32_t>(cb * col_block);
    const uint32_t c1 = static_cast<uint32_t>(std::min<uint64_t>(out, c0 + col_block));
    if (int8) {
      const size_t n = c1 - c0;
      std::vector<int32_t> acc((r1 - r0) * n);
      gemm::GemmI8(packed_ ? packed_i8_.data() : codes.data(), packed_, out, in, xq.data() + r0 * ldq, ldq, r1 - r0, c0,
                   c1, acc.data(), n);
      for (uint64_t r = r0; r < r1; ++r)
        for (uint32_t c = c0; c < c1; ++c)
          y[r * out + c] = static_cast<float>(acc[(r - r0) * n + (c - c0)]) * (xs[r] * weight_scale[c]);
    } else {
      gemm::GemmF32(w, x + r0 * in, in, r1 - r0, c0, c1, y + r0 * out, out);
    }
    if (!bias.empty())
      for (uint64_t r = r0; r < r1; ++r)
        for (uint32_t c = c0; c < c1; ++c) y[r * out + c] += bias[c];
  };
  const uint64_t tiles = row_blocks * col_blocks;
  // Below ~64k multiply-adds a ParallelFor round trip (wake, hand out, join) costs more than the work.
  if (pool && tiles > 1 && rows * out * in >= (uint64_t{1} << 16)) {
    pool->ParallelFor(tiles, tile);
  } else {
    for (uint64_t t = 0; t < tiles; ++t) tile(t, 0);
  }
}

}  // namespace lmkit::model
