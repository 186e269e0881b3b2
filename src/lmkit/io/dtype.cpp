// Performance notes: the bulk BF16/F16 <-> F32 loops are branch-free per element (select instead of if) and read/write
// through memcpy, so GCC/Clang vectorise them at -O2/-O3 without target flags; F16 -> F32 uses the "shift into a float
// and multiply by 2^112" identity, which is exact for normals and subnormals alike and needs no table. The two
// widening loops (what quantize and calibrate read F16/BF16 through) are also compiled as AVX2 and AVX-512 clones,
// chosen at run time: the same operations per element, so the same bits; F16 quantization of 1e9 parameters in memory
// was 2.6x slower than BF16 with the SSE2 loop.
#include "lmkit/io/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace lmkit::io {
namespace {

struct DTypeRow {
  DType type;
  std::string_view name;
  size_t size;
  bool is_float;
};

constexpr std::array<DTypeRow, 15> kTable = {{
    {DType::kBool, "BOOL", 1, false},
    {DType::kU8, "U8", 1, false},
    {DType::kI8, "I8", 1, false},
    {DType::kF8E5M2, "F8_E5M2", 1, true},
    {DType::kF8E4M3, "F8_E4M3", 1, true},
    {DType::kI16, "I16", 2, false},
    {DType::kU16, "U16", 2, false},
    {DType::kF16, "F16", 2, true},
    {DType::kBF16, "BF16", 2, true},
    {DType::kI32, "I32", 4, false},
    {DType::kU32, "U32", 4, false},
    {DType::kF32, "F32", 4, true},
    {DType::kF64, "F64", 8, true},
    {DType::kI64, "I64", 8, false},
    {DType::kU64, "U64", 8, false},
}};

constexpr std::array<DType, 15> kAll = {DType::kBool, DType::kU8,  DType::kI8,  DType::kF8E5M2, DType::kF8E4M3,
                                        DType::kI16,  DType::kU16, DType::kF16, DType::kBF16,   DType::kI32,
                                        DType::kU32,  DType::kF32, DType::kF64, DType::kI64,    DType::kU64};

const DTypeRow& Row(DType t) { return kTable[static_cast<size_t>(t)]; }

template <typename T>
T Load(const void* p, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const uint8_t*>(p) + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void Store(void* p, size_t i, T v) {
  std::memcpy(static_cast<uint8_t*>(p) + i * sizeof(T), &v, sizeof(T));
}

inline float F16BitsToF32(uint32_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t em = h & 0x7fffu;
  // em << 13 puts the half's exponent and mantissa into float position with a bias 112 too small; multiplying by
  // 2^112 fixes the bias and normalises half subnormals (which land as float subnormals) exactly.
  float f = std::bit_cast<float>(em << 13) * 0x1p112f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  bits = em >= 0x7c00u ? ((em << 13) | 0x7f800000u) : bits;  // inf / NaN keep their payload
  return std::bit_cast<float>(bits | sign);
}

inline uint16_t F32BitsToF16(uint32_t x) {
  uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((x >> 13) & 0x3ffu));  // NaN: quiet, top payload
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 (incl. inf) rounds to inf
  uint32_t exp = x >> 23;
  if (exp < 113) {  // below 2^-14: half subnormal (or zero); value in units of 2^-24 is mant * 2^(exp-126)
    if (exp < 102) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to zero
    uint32_t mant = (x & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // 14 .. 24
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    q += (rem > half || (rem == half && (q & 1u))) ? 1u : 0u;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t q = ((exp - 112) << 10) | ((x & 0x7fffffu) >> 13);
  uint32_t rem = x & 0x1fffu;
  q += (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ? 1u : 0u;  // a carry into the exponent is correct rounding
  return static_cast<uint16_t>(sign | q);
}

inline uint16_t F32BitsToBf16(uint32_t x) {
  bool nan = (x & 0x7fffffffu) > 0x7f800000u;
  uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  uint32_t quiet = (x >> 16) | 0x40u;
  return static_cast<uint16_t>(nan ? quiet : rounded);
}

std::array<float, 256> MakeE4M3Table() {
  std::array<float, 256> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t e = (b >> 3) & 0xfu, m = b & 7u;
    float v;
    if (e == 15 && m == 7) {
      v = std::numeric_limits<float>::quiet_NaN();
    } else if (e == 0) {
      v = std::ldexp(static_cast<float>(m), -9);
    } else {
      v = std::ldexp(1.0f + static_cast<float>(m) / 8.0f, static_cast<int>(e) - 7);
    }
    t[b] = (b & 0x80u) ? -v : v;
  }
  return t;
}

const std::array<float, 256>& E4M3Table() {
  static const std::array<float, 256> table = MakeE4M3Table();
  return table;
}

template <typename Out, typename Fn>
void ConvertRow(DType from, const void* in, Out* out, size_t n, Fn f16_to) {
  switch (from) {
    case DType::kBool:
      for (size_t i = 0; i < n; ++i) out[i] = Load<uint8_t>(in, i) != 0 ? Out(1) : Out(0);
      return;
    case DType::kU8:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(Load<uint8_t>(in, i));
      return;
    case DType::kI8:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(Load<int8_t>(in, i));
      return;
    case DType::kF8E5M2:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(F16BitsToF32(uint32_t{Load<uint8_t>(in, i)} << 8));
      return;
    case DType::kF8E4M3: {
      const auto& t = E4M3Table();
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(t[Load<uint8_t>(in, i)]);
      return;
    }
    case DType::kI16:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(Load<int16_t>(in, i));
      return;
    case DType::kU16:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(Load<uint16_t>(in, i));
      return;
    case DType::kF16:
      f16_to(in, out, n);
      return;
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i)
        out[i] = static_cast<Out>(std::bit_cast<float>(uint32_t{Load<uint16_t>(in, i)} << 16));
      return;
    case DType::kI32:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(Load<int32_t>(in, i));
      return;
    case DType::kU32:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(Load<uint32_t>(in, i));
      return;
    case DType::kF32:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(Load<float>(in, i));
      return;
    case DType::kF64:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(Load<double>(in, i));
      return;
    case DType::kI64:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(Load<int64_t>(in, i));
      return;
    case DType::kU64:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(Load<uint64_t>(in, i));
      return;
  }
}

}  // namespace

std::span<const DType> AllDTypes() { return kAll; }
std::string_view DTypeName(DType t) { return Row(t).name; }
size_t DTypeSize(DType t) { return Row(t).size; }
bool IsFloatDType(DType t) { return Row(t).is_float; }

std::optional<DType> ParseDType(std::string_view name) {
  for (const auto& r : kTable)
    if (r.name == name) return r.type;
  return std::nullopt;
}

float Bf16ToF32(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }
uint16_t F32ToBf16(float value) { return F32BitsToBf16(std::bit_cast<uint32_t>(value)); }
float F16ToF32(uint16_t bits) { return F16BitsToF32(bits); }
uint16_t F32ToF16(float value) { return F32BitsToF16(std::bit_cast<uint32_t>(value)); }
float F8E4M3ToF32(uint8_t bits) { return E4M3Table()[bits]; }
float F8E5M2ToF32(uint8_t bits) { return F16BitsToF32(uint32_t{bits} << 8); }

namespace {

[[gnu::always_inline]] inline void Bf16RowImpl(const void* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(uint32_t{Load<uint16_t>(in, i)} << 16);
}
// F16BitsToF32 on 16 lanes (GCC vector extensions: the compiler had turned the scalar loop's select into a branch
// and left it scalar). Lane for lane the same integer and fp32 operations, so the same bits.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // the vector types never cross a call: everything here is inlined
typedef uint16_t H16 __attribute__((vector_size(32)));
typedef uint32_t U16 __attribute__((vector_size(64)));
typedef int32_t S16 __attribute__((vector_size(64)));
typedef float F16x __attribute__((vector_size(64)));
[[gnu::always_inline]] inline void F16RowImpl(const void* in, float* out, size_t n) {
  const auto* p = static_cast<const uint8_t*>(in);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    H16 h;
    std::memcpy(&h, p + 2 * i, sizeof h);
    const U16 w = __builtin_convertvector(h, U16);
    const U16 sign = (w & 0x8000u) << 16;
    const U16 em = w & 0x7fffu;
    const F16x f = reinterpret_cast<F16x>(em << 13) * 0x1p112f;
    const S16 special = em >= 0x7c00u;  // inf / NaN keep their payload
    const U16 bits =
        reinterpret_cast<U16>(special ? reinterpret_cast<S16>((em << 13) | 0x7f800000u) : reinterpret_cast<S16>(f));
    const U16 r = bits | sign;
    std::memcpy(out + i, &r, sizeof r);
  }
  for (; i < n; ++i) out[i] = F16BitsToF32(Load<uint16_t>(in, i));
}
#pragma GCC diagnostic pop
void Bf16RowBase(const void* in, float* out, size_t n) { Bf16RowImpl(in, out, n); }
__attribute__((target("avx2"))) void Bf16RowAvx2(const void* in, float* out, size_t n) { Bf16RowImpl(in, out, n); }
__attribute__((target("avx512f"))) void Bf16RowAvx512(const void* in, float* out, size_t n) { Bf16RowImpl(in, out, n); }
void F16RowBase(const void* in, float* out, size_t n) { F16RowImpl(in, out, n); }
__attribute__((target("avx2"))) void F16RowAvx2(const void* in, float* out, size_t n) { F16RowImpl(in, out, n); }
__attribute__((target("avx512f"))) void F16RowAvx512(const void* in, float* out, size_t n) { F16RowImpl(in, out, n); }

// 2: AVX-512F, 1: AVX2, 0: the baseline (SSE2 on x86-64).
int WideningLevel() {
  static const int level = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
  return level;
}

}  // namespace

void Bf16ToF32(const void* in, float* out, size_t n) {
  const int l = WideningLevel();
  (l == 2 ? Bf16RowAvx512 : l == 1 ? Bf16RowAvx2 : Bf16RowBase)(in, out, n);
}
void F16ToF32(const void* in, float* out, size_t n) {
  const int l = WideningLevel();
  (l == 2 ? F16RowAvx512 : l == 1 ? F16RowAvx2 : F16RowBase)(in, out, n);
}
void F32ToBf16(const float* in, void* out, size_t n) {
  for (size_t i = 0; i < n; ++i) Store<uint16_t>(out, i, F32BitsToBf16(std::bit_cast<uint32_t>(in[i])));
}
void F32ToF16(const float* in, void* out, size_t n) {
  for (size_t i = 0; i < n; ++i) Store<uint16_t>(out, i, F32BitsToF16(std::bit_cast<uint32_t>(in[i])));
}

void ConvertToF32(DType from, const void* in, float* out, size_t n) {
  if (from == DType::kBF16) return Bf16ToF32(in, out, n);
  ConvertRow(from, in, out, n, [](const void* p, float* o, size_t k) { F16ToF32(p, o, k); });
}

void ConvertToF64(DType from, const void* in, double* out, size_t n) {
  ConvertRow(from, in, out, n, [](const void* p, double* o, size_t k) {
    for (size_t i = 0; i < k; ++i) o[i] = F16BitsToF32(Load<uint16_t>(p, i));
  });
}

Status ConvertFromF32(DType to, const float* in, void* out, size_t n) {
  switch (to) {
    case DType::kF16:
      F32ToF16(in, out, n);
      return Status::Ok();
    case DType::kBF16:
      F32ToBf16(in, out, n);
      return Status::Ok();
    case DType::kF32:
      if (n) std::memcpy(out, in, n * sizeof(float));
      return Status::Ok();
    case DType::kF64:
      for (size_t i = 0; i < n; ++i) Store<double>(out, i, static_cast<double>(in[i]));
      return Status::Ok();
    default:
      return Status::Unsupported("", "cannot convert F32 to " + std::string(DTypeName(to)));
  }
}

}  // namespace lmkit::io
