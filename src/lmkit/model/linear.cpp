// Performance notes: the matmul is a dot product of a row of x with a row of W (both contiguous, W kept [out, in] as
// stored), 8 independent fp32 lanes through GCC vector extensions, so the result does not depend on the compiler's
// willingness to reassociate. Work is split into (row block, output block) tiles so that both prefill (many rows) and
// decoding (one row) keep every worker busy; each output element belongs to exactly one tile (determinism). Matmuls
// under 64k multiply-adds run on the calling thread: for stories260K decoding (64x64 matrices) the pool round trip was
// most of the time (generate 16 x 256 tokens, 2 threads: 1.32 s -> 0.98 s with the threshold; same ids).
#include "lmkit/model/linear.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lmkit/formats/fp8.h"
#include "lmkit/formats/int8.h"

namespace lmkit::model {
namespace {

#pragma GCC diagnostic ignored "-Wpsabi"
typedef float F8 __attribute__((vector_size(32)));

int32_t DotI8(const int8_t* a, const int8_t* b, uint32_t n) {
  int32_t acc = 0;
  for (uint32_t i = 0; i < n; ++i) acc += static_cast<int32_t>(a[i]) * static_cast<int32_t>(b[i]);
  return acc;
}

// Codes of one activation row with scale `s` (compressed-tensors convention, see linear.h).
void QuantizeRow(const float* x, uint32_t n, float s, int8_t* q) {
  const formats::Int8Range r = formats::RangeOf(formats::Int8Convention::kHalfStep);
  const float inv = formats::InverseScale(s);
  for (uint32_t i = 0; i < n; ++i) q[i] = formats::QuantizeValue(x[i], s, inv, r.lo, r.hi);
}

}  // namespace

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

void Linear::Apply(const float* x, uint64_t rows, float* y, ThreadPool* pool) const {
  // Activation codes and scales for the int8 kinds, computed once per row before the matmul.
  std::vector<int8_t> xq;
  std::vector<float> xs;
  // FP8 kinds: the activations rounded through E4M3, then the float matmul.
  std::vector<float> xf;
  const bool fp8 = kind == Kind::kFp8Static || kind == Kind::kFp8Dynamic;
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
      for (uint32_t i = 0; i < in; ++i)
        xf[r * in + i] = s > 0 ? formats::E4M3ToF32(formats::E4M3FromF32(row[i] / s)) * s : 0.0f;
    }
    x = xf.data();
  } else if (kind != Kind::kFloat) {
    xq.resize(rows * in);
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
      QuantizeRow(row, in, s, xq.data() + r * in);
    }
  }
  const unsigned workers = pool ? pool->size() : 1;
  const uint64_t row_block = std::max<uint64_t>(1, std::min<uint64_t>(16, rows / workers));
  const uint64_t row_blocks = (rows + row_block - 1) / row_block;
  // Enough output blocks that every worker has several tiles, but at least 16 outputs per tile.
  uint64_t col_blocks = std::max<uint64_t>(1, (4 * workers + row_blocks - 1) / row_blocks);
  col_blocks = std::min<uint64_t>(col_blocks, std::max<uint32_t>(1, out / 16));
  const uint64_t col_block = (out + col_blocks - 1) / col_blocks;
  auto tile = [&](size_t t, unsigned) {
    const uint64_t rb = t / col_blocks, cb = t % col_blocks;
    const uint64_t r0 = rb * row_block, r1 = std::min(rows, r0 + row_block);
    const uint64_t c0 = cb * col_block, c1 = std::min<uint64_t>(out, c0 + col_block);
    for (uint64_t r = r0; r < r1; ++r) {
      float* yr = y + r * out;
      if (kind == Kind::kFloat || fp8) {
        const float* xr = x + r * in;
        for (uint64_t c = c0; c < c1; ++c) yr[c] = Dot(xr, weight.data() + c * in, in);
      } else {
        const int8_t* qr = xq.data() + r * in;
        for (uint64_t c = c0; c < c1; ++c)
          yr[c] = static_cast<float>(DotI8(qr, codes.data() + c * in, in)) * (xs[r] * weight_scale[c]);
      }
      if (!bias.empty())
        for (uint64_t c = c0; c < c1; ++c) yr[c] += bias[c];
    }
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
