// One Linear layer of the forward pass, y = x W^T (+ b), in the forms a checkpoint can give it:
//   float: W as fp32 (loaded from F32, or dequantized from compressed-tensors int8 for w8a16);
//   bf16 / fp16: W kept as the checkpoint's 16-bit values (`half`), widened to fp32 a panel at a time inside the GEMM,
//     so the product equals kFloat's on the widened weights and memory stays 2 bytes per weight;
//   int8 static (w8a8, static per-tensor activations): x is quantized with the checkpoint's input_scale, codes x codes
//     are summed in int32, and the sum is scaled by input_scale * weight_scale[row];
//   int8 dynamic (w8a8, per-token activations): as static, with each row of x getting its own scale absmax / 127.5;
//   fp8 static / dynamic (fp8-static, fp8): W as fp32 dequantized from E4M3, and each element of x replaced by
//     E4M3(x / s) * s with s = input_scale or the row's absmax / 448 (0 rows stay 0), as compressed-tensors simulates
//     it.
// Activation codes follow compressed-tensors' convention (formats/int8.h kHalfStep: q = clamp(rint(x / s), -128, 127),
// half to even), the same convention `lmkit quantize` writes weights and input_scale in.
//
// The float kinds compute gemm_f32.h's definition (one FMA chain per output in k order, then + b), the int8 kinds
// gemm_i8.h's exact int32 sums, so results are identical for any thread count, and for the float kinds on any x86
// CPU with FMA (AVX2 or AVX-512: the same chains).
//
// Loading: fill the fields, then call Pack() once (the loader's last step for each layer). Pack() moves the weights
// into the GEMM's panel layout and frees `weight` / `half` / `codes`; Apply works unpacked too, but then gathers the
// panels on every call.
//
// Contract: Apply reads `rows` rows of `in` floats from x and writes `rows` rows of `out` floats to y (no aliasing).
// `pool` may be null. A Linear is immutable after loading (and Pack) and safe to Apply from several threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lmkit/common/thread_pool.h"
#include "lmkit/model/gemm_f32.h"

namespace lmkit::model {

struct Linear {
  enum class Kind : uint8_t { kFloat, kInt8Static, kInt8Dynamic, kFp8Static, kFp8Dynamic, kBf16, kFp16 };
  std::string name;  // module name, e.g. "model.layers.0.self_attn.q_proj"
  Kind kind = Kind::kFloat;
  uint32_t out = 0, in = 0;
  std::vector<float> weight;        // kFloat and the fp8 kinds: [out, in]
  std::vector<int8_t> codes;        // int8 kinds: [out, in]
  std::vector<float> weight_scale;  // int8 kinds: one per output row
  float input_scale = 0;            // kInt8Static, kFp8Static
  std::vector<uint16_t> half;       // kBf16, kFp16: [out, in] bit patterns as stored
  std::vector<float> bias;          // empty or [out]

  // Moves weight / half / codes into the panel layout of gemm_f32.h / gemm_i8.h (and empties them). Idempotent.
  void Pack();
  // kBf16 / kFp16 straight from the checkpoint's bytes (`bits`: out * in little-endian 16-bit values, any
  // alignment, e.g. a pointer into the mapped file): sets `kind` and packs without a copy in `half`, in pieces of
  // about 1 MiB of rows; after each, `packed_rows(r0, r1)` (if set) is told that rows [r0, r1) of `bits` were read,
  // so that the loader can check them and drop their pages.
  void PackHalf(Kind half_kind, const void* bits,
                const std::function<void(uint32_t r0, uint32_t r1)>& packed_rows = nullptr);
  // kFloat straight from the checkpoint's F32 bytes (out * in little-endian floats, any alignment), as PackHalf: no
  // fp32 copy in `weight` before the panels.
  void PackF32(const void* bits, const std::function<void(uint32_t r0, uint32_t r1)>& packed_rows = nullptr);
  bool packed() const { return packed_; }
  // Bytes the weights take now (packed or not), for memory accounting and tests.
  size_t WeightBytes() const;
  void Apply(const float* x, uint64_t rows, float* y, ThreadPool* pool) const;
  // Row r of W widened to fp32 (`in` floats; exact for the 16-bit kinds), packed or not: the embedding lookup.
  // Float and 16-bit kinds only.
  void Row(uint32_t r, float* dst) const;

 private:
  bool packed_ = false;
  gemm::AlignedVector<float> packed_f32_;
  gemm::AlignedVector<uint16_t> packed_u16_;
  gemm::AlignedVector<int8_t> packed_i8_;
};

// out[i] = E4M3(x[i] / s) * s (formats/fp8.h rounding; 0 for every i when s <= 0): the fp8 kinds' activations, 8 lanes
// at a time with the same bits as the scalar formats::E4M3ToF32(formats::E4M3FromF32(x / s)) * s (exposed for tests).
void RoundThroughE4M3(const float* x, uint32_t n, float s, float* out);

// Dot product of n floats (8 lanes, then a fixed tree; exposed for tests).
float Dot(const float* a, const float* b, uint32_t n);

}  // namespace lmkit::model
