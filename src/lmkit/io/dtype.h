// Element types of tensor files (the safetensors dtype list) and conversions between them and float.
//
// Contract: DType lists every dtype of the safetensors spec that lmkit reads and writes (BOOL U8 I8 F8_E5M2 F8_E4M3 I16
// U16 F16 BF16 I32 U32 F32 F64 I64 U64). Names are the spec's spelling, case-sensitive. All multi-byte values are
// little-endian in files (lmkit runs on little-endian hosts only). Every conversion takes untyped pointers and reads
// and writes through memcpy, so tensor data straight out of a memory map may be unaligned. The functions are pure and
// thread-safe; `in` and `out` must not overlap.
//
// Rounding (docs/formats.md): F32 -> BF16 and F32 -> F16 round to nearest, ties to even; values too large for F16
// become +-inf; F16 subnormals are produced exactly; NaN stays NaN (quiet, sign kept); inf stays inf. BF16/F16/F8 ->
// F32 is exact. Integer -> float conversions round to nearest (the C++ conversion), so I32/I64/U32/U64 values beyond
// 2^24 are not exact in float (use the F64 row converter when that matters).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "lmkit/common/status.h"

namespace lmkit::io {

enum class DType : uint8_t {
  kBool,
  kU8,
  kI8,
  kF8E5M2,
  kF8E4M3,  // the "fn" variant (OCP E4M3FN): no infinities, 0x7F/0xFF are NaN, max 448
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kF64,
  kI64,
  kU64,
};

// Every DType in the order above (for tables, help text and tests).
std::span<const DType> AllDTypes();

// The spec's name, e.g. "BF16", "F8_E4M3".
std::string_view DTypeName(DType t);
// Inverse of DTypeName; nullopt for an unknown name (exact, case-sensitive match).
std::optional<DType> ParseDType(std::string_view name);
// Bytes per element (1, 2, 4 or 8).
size_t DTypeSize(DType t);
// F8_E5M2, F8_E4M3, F16, BF16, F32, F64.
bool IsFloatDType(DType t);

// ---- scalar conversions (exact definitions; the bulk functions below must agree with them bit for bit) -------------
float Bf16ToF32(uint16_t bits);
uint16_t F32ToBf16(float value);
float F16ToF32(uint16_t bits);
uint16_t F32ToF16(float value);
float F8E4M3ToF32(uint8_t bits);
float F8E5M2ToF32(uint8_t bits);

// ---- bulk conversions over n elements ------------------------------------------------------------------------------
void Bf16ToF32(const void* in, float* out, size_t n);
void F16ToF32(const void* in, float* out, size_t n);
void F32ToBf16(const float* in, void* out, size_t n);
void F32ToF16(const float* in, void* out, size_t n);

// Converts n elements of any DType to float (BOOL -> 0/1; integers by value; floats as above).
void ConvertToF32(DType from, const void* in, float* out, size_t n);
// Same into double: exact for every dtype except I64/U64 beyond 2^53.
void ConvertToF64(DType from, const void* in, double* out, size_t n);
// Converts n floats to a float DType (F16, BF16, F32, F64). Other targets: kUnsupported (quantizing to integers is
// the quant area's job, with its own rounding and scales).
Status ConvertFromF32(DType to, const float* in, void* out, size_t n);

}  // namespace lmkit::io
