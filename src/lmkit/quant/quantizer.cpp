// Performance notes (measured on the 2-core build machine, bf16 input, see docs/benchmarks/quant.md):
// - Rows are converted to fp32 into a per-worker buffer (L1/L2-resident for hidden sizes up to ~16k) and then read
//   twice (absmax, code+metrics); reading the mapped input once keeps the loop memory-bound.
// - The hot loops use fixed-width lane arrays (kLanes) so GCC's SLP vectoriser emits packed max/mul/cvt without
//   -ffast-math; rint is done with the 1.5*2^23 "magic add" (identical to rintf for |v| < 2^22, and v is clamped to
//   +-256 first), because SSE2 has no packed round instruction and a libm call per element was 4x slower.
// - Metrics accumulate in fp64 per lane and are reduced per row, then rows in index order (deterministic).
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

constexpr int kLanes = 16;
constexpr uint64_t kRowsPerItem = 8;

// rintf(v) for |v| <= 256 in round-to-nearest mode without a libm call (see performance notes).
inline float RintSmall(float v) {
  const float magic = 12582912.0f;  // 1.5 * 2^23; the add/sub is not folded without -ffast-math (never use it here)
  return (v + magic) - magic;
}

// Converts a row of `dtype` to fp32 into `out`.
inline void LoadRow(const uint8_t* src, io::DType dtype, uint64_t n, float* out) {
  io::ConvertToF32(dtype, src, out, n);
}

// absmax of x[0, n) and whether every value is finite.
inline float AbsMax(const float* x, uint64_t n, bool* finite) {
  float m[kLanes] = {};
  float bad[kLanes] = {};
  uint64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      float a = std::fabs(x[i + j]);
      m[j] = m[j] < a ? a : m[j];
      bad[j] += x[i + j] - x[i + j];  // 0 for finite values, NaN for NaN and +-inf
    }
  }
  float mm = 0, bb = 0;
  for (; i < n; ++i) {
    float a = std::fabs(x[i]);
    mm = mm < a ? a : mm;
    bb += x[i] - x[i];
  }
  for (int j = 0; j < kLanes; ++j) {
    mm = mm < m[j] ? m[j] : mm;
    bb += bad[j];
  }
  *finite = bb == 0.0f;
  return mm;
}

// Codes x[0, n) with `scale` and accumulates the metrics.
inline void CodeSegment(const float* x, uint64_t n, float scale, Int8Range range, int8_t* codes, ErrorStats* st) {
  const float inv = InverseScale(scale);
  double sx2[kLanes] = {}, se2[kLanes] = {}, sxq[kLanes] = {}, sq2[kLanes] = {};
  float emax[kLanes] = {};
  int32_t clip[kLanes] = {};
  auto one = [&](int j, float xv, int8_t* out) {
    float v = std::fmin(std::fmax(xv * inv, -256.0f), 256.0f);
    float r = RintSmall(v);
    float c = std::fmin(std::fmax(r, range.lo), range.hi);
    clip[j] += c != r;
    *out = static_cast<int8_t>(static_cast<int32_t>(c));
    float xh = c * scale;
    float e = xv - xh;
    float ae = std::fabs(e);
    emax[j] = emax[j] < ae ? ae : emax[j];
    double xd = xv, xhd = xh, ed = e;
    sx2[j] += xd * xd;
    se2[j] += ed * ed;
    sxq[j] += xd * xhd;
    sq2[j] += xhd * xhd;
  };
  uint64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) one(j, x[i + j], codes + i + j);
  for (int j = 0; i < n; ++i, ++j) one(j, x[i], codes + i);
  double a = 0, b = 0, c = 0, d = 0;
  float em = 0;
  uint64_t cl = 0;
  for (int j = 0; j < kLanes; ++j) {
    a += sx2[j];
    b += se2[j];
    c += sxq[j];
    d += sq2[j];
    em = em < emax[j] ? emax[j] : em;
    cl += static_cast<uint64_t>(clip[j]);
  }
  st->count += n;
  st->clipped += cl;
  st->sum_x2 += a;
  st->sum_err2 += b;
  st->sum_x_xhat += c;
  st->sum_xhat2 += d;
  st->max_abs_err = std::max(st->max_abs_err, static_cast<double>(em));
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
        LoadRow(src + r * cols * esize, dtype, cols, buf);
        bool finite = true;
        item_max[item] = std::max(item_max[item], AbsMax(buf, cols, &finite));
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
        LoadRow(src + r * cols * esize, dtype, cols, buf);
        int8_t* out = codes + r * cols;
        bool finite = true;
        switch (g.kind) {
          case Granularity::Kind::kTensor:
            AbsMax(buf, 0, &finite);
            CodeSegment(buf, cols, tensor_scale, range, out, &st);
            break;
          case Granularity::Kind::kChannel: {
            float s = StoredScale(AbsMax(buf, cols, &finite), options.convention, options.scale_dtype);
            if (!finite) break;
            scales[r] = s;
            CodeSegment(buf, cols, s, range, out, &st);
            break;
          }
          case Granularity::Kind::kGroup: {
            const uint64_t gs = g.group_size, ng = cols / gs;
            for (uint64_t k = 0; k < ng && finite; ++k) {
              float s = StoredScale(AbsMax(buf + k * gs, gs, &finite), options.convention, options.scale_dtype);
              if (!finite) break;
              scales[r * ng + k] = s;
              CodeSegment(buf + k * gs, gs, s, range, out + k * gs, &st);
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
    LoadRow(src + r * cols * esize, dtype, cols, buf.data());
    return Status::InvalidInput("", "non-finite value at [" + std::to_string(r) + ", " +
                                        std::to_string(FirstNonFinite(buf.data(), cols)) + "]");
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
