// One Linear layer of the forward pass, y = x W^T (+ b), in the three forms a checkpoint can give it:
//   float: W as fp32 (loaded from F32/F16/BF16, or dequantized from compressed-tensors int8 for w8a16);
//   int8 static (w8a8, static per-tensor activations): x is quantized with the checkpoint's input_scale, codes x codes
//     are summed in int32, and the sum is scaled by input_scale * weight_scale[row];
//   int8 dynamic (w8a8, per-token activations): as static, with each row of x getting its own scale absmax / 127.5;
//   fp8 static / dynamic (fp8-static, fp8): W as fp32 dequantized from E4M3, and each element of x replaced by
//     E4M3(x / s) * s with s = input_scale or the row's absmax / 448 (0 rows stay 0), as compressed-tensors simulates
//     it.
// Activation codes follow compressed-tensors' convention (formats/int8.h kHalfStep: q = clamp(rint(x / s), -128, 127),
// half to even), the same convention `lmkit quantize` writes weights and input_scale in.
//
// Contract: Apply reads `rows` rows of `in` floats from x and writes `rows` rows of `out` floats to y (no aliasing).
// Each output element is computed by one worker in a fixed order, so results are identical for any thread count.
// `pool` may be null. A Linear is immutable after loading and safe to Apply from several threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/thread_pool.h"

namespace lmkit::model {

struct Linear {
  enum class Kind : uint8_t { kFloat, kInt8Static, kInt8Dynamic, kFp8Static, kFp8Dynamic };
  std::string name;  // module name, e.g. "model.layers.0.self_attn.q_proj"
  Kind kind = Kind::kFloat;
  uint32_t out = 0, in = 0;
  std::vector<float> weight;        // kFloat and the fp8 kinds: [out, in]
  std::vector<int8_t> codes;        // int8 kinds: [out, in]
  std::vector<float> weight_scale;  // int8 kinds: one per output row
  float input_scale = 0;            // kInt8Static, kFp8Static
  std::vector<float> bias;          // empty or [out]

  void Apply(const float* x, uint64_t rows, float* y, ThreadPool* pool) const;
};

// Dot product of n floats (the fp32 kernel, exposed for the attention code and tests).
float Dot(const float* a, const float* b, uint32_t n);

}  // namespace lmkit::model
