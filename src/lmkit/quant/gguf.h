// GGUF (version 3) output: the header of a GGUF file, and llama.cpp's Q8_0 block format.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/quant/metrics.h"

namespace lmkit::quant::gguf {

constexpr uint64_t kAlignment = 32;
constexpr uint64_t kQ8_0Block = 32;       // weights per block
constexpr uint64_t kQ8_0BlockBytes = 34;  // fp16 scale + 32 codes

enum class GgmlType : uint32_t { kF32 = 0, kF16 = 1, kQ8_0 = 8, kBF16 = 30 };
std::string_view GgmlTypeName(GgmlType t);  // "F32", "F16", "Q8_0", "BF16"

// Bytes of a tensor with dimensions `ne` (ggml order); for Q8_0 ne[0] must be a multiple of 32.
uint64_t TensorBytes(GgmlType type, const std::vector<uint64_t>& ne);

// GgufHeader collects metadata key/values and tensor descriptions in the order they are added and
// Serialize() returns the header bytes: magic "GGUF", version 3, the tensor and key/value counts, the key/values, the
// tensor infos (name, dimensions in ggml order, ne[0] being the row length, ggml type, offset) and zero padding up
// to the 32-byte alignment (GGUF's default; no general.alignment key is written). Offsets are assigned by Serialize():
// tensors are laid out in the order added, each starting at a multiple of 32 from the data section's start; the
// caller then writes each tensor's TensorBytes() followed by PaddingAfter() zero bytes. All integers little-endian.
// Names: at most 63 bytes (ggml's GGML_MAX_NAME - 1) — AddTensor returns false otherwise.
class GgufHeader {
 public:
  void AddU32(std::string_view key, uint32_t v);
  void AddF32(std::string_view key, float v);
  void AddString(std::string_view key, std::string_view v);
  // Returns false (and adds nothing) when the name is longer than 63 bytes.
  bool AddTensor(std::string_view name, const std::vector<uint64_t>& ne, GgmlType type);

  // The header bytes, padding included; fills the offsets below.
  std::string Serialize();
  uint64_t TensorOffset(size_t i) const { return offsets_[i]; }  // from the data section's start
  uint64_t DataBytes() const { return data_bytes_; }             // the data section, padding included
  uint64_t PaddingAfter(size_t i) const;                         // zero bytes after tensor i

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    GgmlType type;
  };
  std::string kv_;  // serialized key/values
  uint64_t kv_count_ = 0;
  std::vector<Tensor> tensors_;
  std::vector<uint64_t> offsets_;
  uint64_t data_bytes_ = 0;
};

// Q8_0 (ggml's block_q8_0): each block of 32 weights is an IEEE fp16 scale d followed by 32 int8 codes (34 bytes).
// QuantizeQ8_0 follows ggml's reference quantizer (quantize_row_q8_0_ref, which gguf-py and so convert_hf_to_gguf.py
// reproduce bit for bit): d = fp32(max|x| / 127), id = fp32(1 / d) (0 when d = 0), q = round(x * id) with ties away
// from zero; d is stored rounded to fp16 (nearest, ties to even); a block of zeros gets d = 0 and zero codes.
// Dequantized value: fp32(fp16->fp32(d) * q), as ggml computes it.
enum class Q8_0Status { kOk, kNonFinite, kScaleOverflow };

// Quantizes n values (n a multiple of 32) into n / 32 blocks at `out`, adds the error of the dequantized values
// against x to *stats and folds the stored (fp16) block scales into *scale_min / *scale_max. kNonFinite: a NaN or
// infinite value; kScaleOverflow: a block's max|x| / 127 beyond fp16's range (|x| above about 8.3e6); on either, the
// blocks so far are written and stats are left unchanged. Stats: per-block fp32 partial sums (at most 4 terms per
// lane) added in fp64, so sums are exact to about 1e-7 relative; stats->clipped stays 0 (|x * id| <= 127 up to
// rounding).
Q8_0Status QuantizeQ8_0(const float* x, uint64_t n, uint8_t* out, ErrorStats* stats, float* scale_min,
                        float* scale_max);
void DequantizeQ8_0(const uint8_t* in, uint64_t n, float* out);

}  // namespace lmkit::quant::gguf
