// Performance notes (perf on the shared 2-core build machine, bf16 4096x4096 rows; docs/benchmarks/quant.md):
// - BF16 rows are widened into a per-worker fp32 buffer (L1/L2-resident for hidden sizes up to ~16k) by a fused
//   vector loop; aligned F32 rows are read in place. Each row is then read twice (absmax, code+metrics) from cache, so
//   the mapped input is streamed from memory once. The generic io converter took 33% of the time; the fused one ~5%.
// - Hot loops use GCC vector extensions (8 floats per step) compiled twice, baseline (SSE2) and AVX2, picked at run
//   time: plain loops were left scalar (fp reductions and fminf need -ffast-math, which would change the format).
//   fminf/fmaxf calls were replaced by compare-selects (10x), rint by the 1.5*2^23 magic add (|v| <= 256 there).
// - Metrics: exact products summed in fp64 per lane, 2 fp64 adds per element instead of 4 (see CodeSegmentImpl).
// - Work items are blocks of rows (kRowsPerItem) so the pool's per-item overhead is negligible even for small rows.
#include "lmkit/quant/quantizer.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace lmkit::quant {
namespace {

constexpr uint64_t kRowsPerItem = 8;

// GCC vector extensions: 8 floats per step. The baseline build lowers them to pairs of SSE2 ops, the AVX2 clone below
// to single ymm ops. (Plain loops were not vectorised: fp reductions need -ffast-math, which would change the format.)
// The helpers below are always inlined in this file, so the "AVX vector return changes the ABI" note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));
typedef double D4 __attribute__((vector_size(32)));
typedef int8_t C8 __attribute__((vector_size(8)));

[[gnu::always_inline]] inline F8 Load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline F8 Abs8(F8 v) { return reinterpret_cast<F8>(reinterpret_cast<I8>(v) & 0x7fffffff); }
[[gnu::always_inline]] inline float HMax(F8 v) {
  float m = 0;
  for (int j = 0; j < 8; ++j) m = m < v[j] ? v[j] : m;
  return m;
}

// absmax of x[0, n) and whether every value is finite (NaN/inf make x - x NaN, caught by the `bad` sum; the
// comparisons alone would skip NaN).
[[gnu::always_inline]] inline float AbsMaxImpl(const float* x, uint64_t n, bool* finite) {
  F8 m = {}, bad = {};
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    F8 v = Load8(x + i);
    F8 a = Abs8(v);
    m = m < a ? a : m;
    bad += v - v;
  }
  float mm = HMax(m), bb = 0;
  for (int j = 0; j < 8; ++j) bb += bad[j];
  for (; i < n; ++i) {
    float a = std::fabs(x[i]);
    mm = mm < a ? a : mm;
    bb += x[i] - x[i];
  }
  *finite = bb == 0.0f;
  return mm;
}

// Codes x[0, n) with `scale` and accumulates the metrics. The sums use exact products (x*x and x*code fit a double
// exactly; code^2 is an integer) and xhat = code * scale is applied per segment:
//   sum xhat^2 = s^2 sum c^2,  sum x xhat = s sum x c,  sum (x - xhat)^2 = sum x^2 - 2 s sum x c + s^2 sum c^2,
// so the loop needs two fp64 adds per element instead of four (the cancellation in the last line costs ~1e-9
// relative at 40 dB SQNR). max|x - xhat| is exact in fp32 (Sterbenz: xhat is within a factor 2 of x).
[[gnu::always_inline]] inline void CodeSegmentImpl(const float* x, uint64_t n, float scale, Int8Range range,
                                                   int8_t* codes, ErrorStats* st) {
  const float inv = InverseScale(scale);
  const float magic = 12582912.0f;  // 1.5 * 2^23: (v + magic) - magic == rint(v) for |v| < 2^22 (never folded:
                                    // no -ffast-math in this project)
  double tx2 = 0, txc = 0;
  int64_t tc2 = 0;
  uint64_t tclip = 0;
  float em = 0;
  auto scalar = [&](float xv, int8_t* out) {
    float v = xv * inv;
    v = v < -256.0f ? -256.0f : v;
    v = v > 256.0f ? 256.0f : v;
    const float r = (v + magic) - magic;
    float c = r < range.lo ? range.lo : r;
    c = c > range.hi ? range.hi : c;
    tclip += c != r ? 1 : 0;
    *out = static_cast<int8_t>(static_cast<int32_t>(c));
    const float ae = std::fabs(xv - c * scale);
    em = em < ae ? ae : em;
    tx2 += static_cast<double>(xv) * xv;
    txc += static_cast<double>(xv) * c;
    tc2 += static_cast<int64_t>(c) * static_cast<int64_t>(c);
  };
  constexpr uint64_t kBlock = 1 << 16;  // int32 lane sums of c^2 (<= 16384 each) cannot overflow within a block
  uint64_t i = 0;
  while (i + 8 <= n) {
    const uint64_t bend = std::min(n, i + kBlock);
    D4 sx2a = {}, sx2b = {}, sxca = {}, sxcb = {};
    I8 sc2 = {}, clip = {};
    F8 emax = {};
    const F8 vinv = F8{} + inv, vs = F8{} + scale, vmagic = F8{} + magic;
    const F8 vlo = F8{} + range.lo, vhi = F8{} + range.hi, vneg = F8{} - 256.0f, vpos = F8{} + 256.0f;
    for (; i + 8 <= bend; i += 8) {
      const F8 xv = Load8(x + i);
      F8 v = xv * vinv;
      v = v < vneg ? vneg : v;
      v = v > vpos ? vpos : v;
      const F8 r = (v + vmagic) - vmagic;
      F8 c = r < vlo ? vlo : r;
      c = c > vhi ? vhi : c;
      clip -= (c != r);  // a true comparison is -1
      const I8 ci = __builtin_convertvector(c, I8);
      const C8 c8 = __builtin_convertvector(ci, C8);
      std::memcpy(codes + i, &c8, 8);
      const F8 ae = Abs8(xv - c * vs);
      emax = emax < ae ? ae : emax;
      const D4 xl = __builtin_convertvector(__builtin_shufflevector(xv, xv, 0, 1, 2, 3), D4);
      const D4 xh = __builtin_convertvector(__builtin_shufflevector(xv, xv, 4, 5, 6, 7), D4);
      const D4 cl = __builtin_convertvector(__builtin_shufflevector(c, c, 0, 1, 2, 3), D4);
      const D4 ch = __builtin_convertvector(__builtin_shufflevector(c, c, 4, 5, 6, 7), D4);
      sx2a += xl * xl;
      sx2b += xh * xh;
      sxca += xl * cl;
      sxcb += xh * ch;
      sc2 += ci * ci;
    }
    for (int j = 0; j < 4; ++j) {
      tx2 += sx2a[j] + sx2b[j];
      txc += sxca[j] + sxcb[j];
    }
    for (int j = 0; j < 8; ++j) {
      tc2 += sc2[j];
      tclip += static_cast<uint64_t>(clip[j]);
    }
    float m = HMax(emax);
    em = em < m ? m : em;
  }
  for (; i < n; ++i) scalar(x[i], codes + i);
  const double s = scale, c2 = static_cast<double>(tc2);
  st->count += n;
  st->clipped += tclip;
  st->sum_x2 += tx2;
  st->sum_x_xhat += s * txc;
  st->sum_xhat2 += s * s * c2;
  st->sum_err2 += std::max(0.0, tx2 - 2.0 * s * txc + s * s * c2);
  st->max_abs_err = std::max(st->max_abs_err, static_cast<double>(em));
}

// The same loops compiled for AVX2 (8-wide fp32, 4-wide fp64) and for the baseline, picked once at run time. No FMA
// contraction happens in either (ISO C++ mode: -ffp-contract=off), so both give identical bits.
__attribute__((target("avx2"))) float AbsMaxAvx2(const float* x, uint64_t n, bool* finite) {
  return AbsMaxImpl(x, n, finite);
}
float AbsMaxBase(const float* x, uint64_t n, bool* finite) { return AbsMaxImpl(x, n, finite); }
__attribute__((target("avx2"))) void CodeSegmentAvx2(const float* x, uint64_t n, float scale, Int8Range range,
                                                     int8_t* codes, ErrorStats* st) {
  CodeSegmentImpl(x, n, scale, range, codes, st);
}
void CodeSegmentBase(const float* x, uint64_t n, float scale, Int8Range range, int8_t* codes, ErrorStats* st) {
  CodeSegmentImpl(x, n, scale, range, codes, st);
}

bool HaveAvx2() {
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
}
inline float AbsMax(const float* x, uint64_t n, bool* finite) {
  return HaveAvx2() ? AbsMaxAvx2(x, n, finite) : AbsMaxBase(x, n, finite);
}
inline void CodeSegment(const float* x, uint64_t n, float scale, Int8Range range, int8_t* codes, ErrorStats* st) {
  HaveAvx2() ? CodeSegmentAvx2(x, n, scale, range, codes, st) : CodeSegmentBase(x, n, scale, range, codes, st);
}

// BF16 -> fp32 for one row, vectorised (8 per step: widen, shift). The same exact conversion as io::Bf16ToF32, kept
// here because it is fused into the hot loop's AVX2 clone: the generic io converter was a third of the run time.
typedef uint16_t H8 __attribute__((vector_size(16)));
[[gnu::always_inline]] inline void Bf16RowImpl(const uint8_t* src, uint64_t n, float* out) {
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    H8 h;
    std::memcpy(&h, src + 2 * i, sizeof h);
    const I8 w = __builtin_convertvector(h, I8) << 16;
    std::memcpy(out + i, &w, sizeof w);
  }
  if (i < n) io::Bf16ToF32(src + 2 * i, out + i, n - i);
}
__attribute__((target("avx2"))) void Bf16RowAvx2(const uint8_t* src, uint64_t n, float* out) {
  Bf16RowImpl(src, n, out);
}
void Bf16RowBase(const uint8_t* src, uint64_t n, float* out) { Bf16RowImpl(src, n, out); }

// A row as fp32: F32 rows that are 4-byte aligned (always, in files lmkit and HF write) are used in place; others are
// converted into `buf`.
inline const float* LoadRow(const uint8_t* src, io::DType dtype, uint64_t n, float* buf) {
  if (dtype == io::DType::kF32 && reinterpret_cast<uintptr_t>(src) % alignof(float) == 0)
    return reinterpret_cast<const float*>(src);
  if (dtype == io::DType::kBF16) {
    HaveAvx2() ? Bf16RowAvx2(src, n, buf) : Bf16RowBase(src, n, buf);
    return buf;
  }
  io::ConvertToF32(dtype, src, buf, n);
  return buf;
}

uint64_t FirstNonFinite(const float* x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return i;
  return n;
}

}  // namespace

std::vector<uint64_t> Granularity::ScaleShape(uint64_t rows, uint64_t cols) const {
  switch (kind) {
    case Kind::kChannel: return {rows, 1};
    case Kind::kTensor: return {1};
    case Kind::kGroup: return {rows, group_size ? cols / group_size : 0};
  }
  return {};
}

uint64_t Granularity::ScaleCount(uint64_t rows, uint64_t cols) const {
  uint64_t n = 1;
  for (uint64_t d : ScaleShape(rows, cols)) n *= d;
  return n;
}

Result<Granularity> ParseGranularity(std::string_view text) {
  Granularity g;
  if (text == "channel") return g;
  if (text == "tensor") {
    g.kind = Granularity::Kind::kTensor;
    return g;
  }
  if (text.substr(0, 6) == "group:") {
    std::string_view num = text.substr(6);
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (ec == std::errc() && p == num.data() + num.size() && n >= 1) {
      g.kind = Granularity::Kind::kGroup;
      g.group_size = n;
      return g;
    }
  }
  return Status::Usage("--granularity must be channel, tensor or group:N (N >= 1), not '" + std::string(text) + "'");
}

std::string GranularityName(const Granularity& g) {
  switch (g.kind) {
    case Granularity::Kind::kChannel: return "channel";
    case Granularity::Kind::kTensor: return "tensor";
    case Granularity::Kind::kGroup: return "group:" + std::to_string(g.group_size);
  }
  return "";
}

const char* StrategyName(const Granularity& g) {
  switch (g.kind) {
    case Granularity::Kind::kChannel: return "channel";
    case Granularity::Kind::kTensor: return "tensor";
    case Granularity::Kind::kGroup: return "group";
  }
  return "";
}

float StoredScale(float absmax, Int8Convention convention, io::DType scale_dtype) {
  float s = absmax / RangeOf(convention).divisor;
  if (scale_dtype == io::DType::kBF16) {
    uint32_t bits;
    std::memcpy(&bits, &s, 4);
    return io::Bf16ToF32(Bf16RoundUp(bits));
  }
  if (scale_dtype == io::DType::kF16) {
    uint16_t h = io::F32ToF16(s);
    if (io::F16ToF32(h) < s) ++h;  // positive values: the next bit pattern is the next larger half
    return io::F16ToF32(h);
  }
  return s;
}

Status QuantizeMatrix(const void* data, io::DType dtype, uint64_t rows, uint64_t cols,
                      const QuantizeMatrixOptions& options, ThreadPool* pool, int8_t* codes, float* scales,
                      ErrorStats* stats) {
  if (dtype != io::DType::kF32 && dtype != io::DType::kF16 && dtype != io::DType::kBF16)
    return Status::InvalidInput("", std::string("cannot quantize dtype ") + std::string(io::DTypeName(dtype)));
  const Granularity& g = options.granularity;
  if (g.kind == Granularity::Kind::kGroup && (g.group_size == 0 || cols % g.group_size != 0))
    return Status::InvalidInput("", "group size " + std::to_string(g.group_size) + " does not divide the " +
                                        std::to_string(cols) + " columns");
  const Int8Range range = RangeOf(options.convention);
  const size_t esize = io::DTypeSize(dtype);
  const auto* src = static_cast<const uint8_t*>(data);
  const uint64_t items = (rows + kRowsPerItem - 1) / kRowsPerItem;
  const unsigned workers = pool ? pool->size() : 1;
  std::vector<std::vector<float>> buffers(workers, std::vector<float>(cols));
  std::atomic<uint64_t> bad_row{std::numeric_limits<uint64_t>::max()};
  auto note_bad = [&](uint64_t r) {
    uint64_t cur = bad_row.load();
    while (r < cur && !bad_row.compare_exchange_weak(cur, r)) {
    }
  };
  auto run = [&](uint64_t count, const std::function<void(size_t, unsigned)>& fn) {
    if (pool)
      pool->ParallelFor(count, fn);
    else
      for (uint64_t i = 0; i < count; ++i) fn(i, 0);
  };

  // Per-tensor: one absmax over everything first.
  float tensor_scale = 0;
  if (g.kind == Granularity::Kind::kTensor) {
    std::vector<float> item_max(items, 0.0f);
    run(items, [&](size_t item, unsigned w) {
      float* buf = buffers[w].data();
      for (uint64_t r = item * kRowsPerItem; r < std::min(rows, (item + 1) * kRowsPerItem); ++r) {
        const float* row = LoadRow(src + r * cols * esize, dtype, cols, buf);
        bool finite = true;
        item_max[item] = std::max(item_max[item], AbsMax(row, cols, &finite));
        if (!finite) note_bad(r);
      }
    });
    float m = 0;
    for (float v : item_max) m = std::max(m, v);
    tensor_scale = StoredScale(m, options.convention, options.scale_dtype);
    if (bad_row.load() == std::numeric_limits<uint64_t>::max()) scales[0] = tensor_scale;
  }

  std::vector<ErrorStats> item_stats(items);
  if (bad_row.load() == std::numeric_limits<uint64_t>::max()) {
    run(items, [&](size_t item, unsigned w) {
      float* buf = buffers[w].data();
      ErrorStats& st = item_stats[item];
      for (uint64_t r = item * kRowsPerItem; r < std::min(rows, (item + 1) * kRowsPerItem); ++r) {
        const float* row = LoadRow(src + r * cols * esize, dtype, cols, buf);
        int8_t* out = codes + r * cols;
        bool finite = true;
        switch (g.kind) {
          case Granularity::Kind::kTensor:
            CodeSegment(row, cols, tensor_scale, range, out, &st);
            break;
          case Granularity::Kind::kChannel: {
            float s = StoredScale(AbsMax(row, cols, &finite), options.convention, options.scale_dtype);
            if (!finite) break;
            scales[r] = s;
            CodeSegment(row, cols, s, range, out, &st);
            break;
          }
          case Granularity::Kind::kGroup: {
            const uint64_t gs = g.group_size, ng = cols / gs;
            for (uint64_t k = 0; k < ng && finite; ++k) {
              float s = StoredScale(AbsMax(row + k * gs, gs, &finite), options.convention, options.scale_dtype);
              if (!finite) break;
              scales[r * ng + k] = s;
              CodeSegment(row + k * gs, gs, s, range, out + k * gs, &st);
            }
            break;
          }
        }
        if (!finite) note_bad(r);
      }
    });
  }
  if (uint64_t r = bad_row.load(); r != std::numeric_limits<uint64_t>::max()) {
    std::vector<float> buf(cols);
    const float* row = LoadRow(src + r * cols * esize, dtype, cols, buf.data());
    return Status::InvalidInput("", "non-finite value at [" + std::to_string(r) + ", " +
                                        std::to_string(FirstNonFinite(row, cols)) + "]");
  }
  if (stats) {
    ErrorStats total;
    for (const ErrorStats& s : item_stats) total.Merge(s);
    *stats = total;
  }
  return Status::Ok();
}

void DequantizeMatrix(const int8_t* codes, const float* scales, uint64_t rows, uint64_t cols,
                      const Granularity& granularity, float* out) {
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) {
      float s = 0;
      switch (granularity.kind) {
        case Granularity::Kind::kChannel: s = scales[r]; break;
        case Granularity::Kind::kTensor: s = scales[0]; break;
        case Granularity::Kind::kGroup: s = scales[r * (cols / granularity.group_size) + c / granularity.group_size]; break;
      }
      out[r * cols + c] = static_cast<float>(codes[r * cols + c]) * s;
    }
}

}  // namespace lmkit::quant
