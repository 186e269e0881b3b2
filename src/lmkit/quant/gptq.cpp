// GPTQ, as gptq.h describes. Performance notes:
// - Given the scales, GPTQ's updates never cross rows (column i's error moves only later columns of the same row), so
//   each row runs the whole column loop on its own fp64 copy; rows are split over the pool. The lazy batches keep the
//   order of llm-compressor's arithmetic (in-batch updates one column at a time, later columns once per batch).
// - The factorization (Cholesky, triangular inverse, H⁻¹, Cholesky again: ~n³ flops) depends only on H, which q/k/v
//   and gate/up share: FactorHessian runs once per input and GptqQuantize reuses it. Its inner loops are contiguous
//   fp64 dot products and row updates that the compiler vectorizes; rows of the factor are split over the pool in
//   chunks, each element computed by one thread in one order.
#include "lmkit/quant/gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lmkit/formats/int8.h"
#include "lmkit/quant/quantizer.h"

namespace lmkit::quant {
namespace {

constexpr uint64_t kFactorRowsPerItem = 32;  // factor rows per pool item

void ForChunks(ThreadPool* pool, uint64_t begin, uint64_t end, const std::function<void(uint64_t, uint64_t)>& fn) {
  if (end <= begin) return;
  const uint64_t n = (end - begin + kFactorRowsPerItem - 1) / kFactorRowsPerItem;
  auto item = [&](size_t c, unsigned) {
    fn(begin + c * kFactorRowsPerItem, std::min(end, begin + (c + 1) * kFactorRowsPerItem));
  };
  if (pool && n > 1)
    pool->ParallelFor(n, item);
  else
    for (size_t c = 0; c < n; ++c) item(c, 0);
}

// In-place lower Cholesky factor of the [n, n] row-major matrix a (only the lower triangle is read and written).
bool CholeskyLower(std::vector<double>& a, uint64_t n, ThreadPool* pool) {
  for (uint64_t j = 0; j < n; ++j) {
    const double* rj = &a[j * n];
    double s = rj[j];
    for (uint64_t k = 0; k < j; ++k) s -= rj[k] * rj[k];
    if (!(s > 0) || !std::isfinite(s)) return false;
    const double d = std::sqrt(s);
    a[j * n + j] = d;
    ForChunks(pool, j + 1, n, [&](uint64_t b, uint64_t e) {
      for (uint64_t i = b; i < e; ++i) {
        double* ri = &a[i * n];
        double t = ri[j];
        for (uint64_t k = 0; k < j; ++k) t -= ri[k] * rj[k];
        ri[j] = t / d;
      }
    });
  }
  return true;
}

uint64_t ScaleIndex(const Granularity& g, uint64_t cols, uint64_t r, uint64_t c) {
  switch (g.kind) {
    case Granularity::Kind::kTensor:
      return 0;
    case Granularity::Kind::kGroup:
      return r * (cols / g.group_size) + c / g.group_size;
    default:
      return r;
  }
}

Status CheckOptions(uint64_t cols, const GptqOptions& o) {
  if (o.bits != 4 && o.bits != 8)
    return Status::InvalidArgument("GPTQ codes 4 or 8 bits, not " + std::to_string(o.bits));
  if (o.granularity.kind == Granularity::Kind::kGroup &&
      (o.granularity.group_size == 0 || cols % o.granularity.group_size != 0))
    return Status::InvalidArgument("group size " + std::to_string(o.granularity.group_size) + " does not divide " +
                                   std::to_string(cols) + " columns");
  if (o.block_size == 0) return Status::InvalidArgument("the GPTQ block size must be at least 1");
  if (!(o.dampening >= 0) || !std::isfinite(o.dampening))
    return Status::InvalidArgument("the GPTQ dampening must be a finite number >= 0");
  if (o.act_order && o.group_scales_at_group_start && o.granularity.kind == Granularity::Kind::kGroup)
    return Status::InvalidArgument(
        "activation order with group scales taken at the group's first column needs a g_idx, which lmkit does not "
        "write");
  return Status::Ok();
}

// Absmax of w over scale `s`'s elements, for every scale.
Status OriginalScales(const float* w, uint64_t rows, uint64_t cols, const GptqOptions& o, float* scales) {
  const IntGrid grid = SymmetricGrid(o.bits);
  const uint64_t n = o.granularity.ScaleCount(rows, cols);
  std::vector<float> amax(n, 0.0f);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) {
      const float v = w[r * cols + c];
      if (!std::isfinite(v))
        return Status::InvalidInput("", "non-finite value at [" + std::to_string(r) + ", " + std::to_string(c) + "]");
      float& m = amax[ScaleIndex(o.granularity, cols, r, c)];
      m = std::max(m, std::fabs(v));
    }
  for (uint64_t i = 0; i < n; ++i) scales[i] = StoredScale(amax[i], grid.divisor, o.scale_dtype);
  return Status::Ok();
}

}  // namespace

void HessianAccumulator::Add(const float* x, uint64_t rows, ThreadPool* pool) {
  const uint64_t n = cols_;
  std::vector<double> xd(x, x + rows * n);
  ForChunks(pool, 0, n, [&](uint64_t b, uint64_t e) {
    for (uint64_t r = 0; r < rows; ++r) {
      const double* xr = &xd[r * n];
      for (uint64_t i = b; i < e; ++i) {
        const double xi = xr[i];
        if (xi == 0) continue;
        double* si = &sum_[i * n];
        for (uint64_t j = i; j < n; ++j) si[j] += xi * xr[j];
      }
    }
  });
  samples_ += rows;
}

std::vector<double> HessianAccumulator::Hessian() const {
  const uint64_t n = cols_;
  std::vector<double> h(n * n, 0.0);
  if (samples_ == 0) return h;
  const double f = 2.0 / static_cast<double>(samples_);
  for (uint64_t i = 0; i < n; ++i)
    for (uint64_t j = i; j < n; ++j) h[i * n + j] = h[j * n + i] = f * sum_[i * n + j];
  return h;
}

IntGrid SymmetricGrid(int bits) {
  const float hi = static_cast<float>((1 << (bits - 1)) - 1), lo = -hi - 1.0f;
  return IntGrid{(hi - lo) / 2.0f, lo, hi};
}

Result<GptqFactor> FactorHessian(const double* hessian, uint64_t cols, double dampening, bool act_order,
                                 ThreadPool* pool) {
  if (!(dampening >= 0) || !std::isfinite(dampening))
    return Status::InvalidArgument("the GPTQ dampening must be a finite number >= 0");
  const uint64_t n = cols;
  for (uint64_t i = 0; i < n * n; ++i)
    if (!std::isfinite(hessian[i])) return Status::InvalidInput("", "non-finite Hessian entry");
  GptqFactor f;
  f.cols = n;
  f.perm.resize(n);
  std::iota(f.perm.begin(), f.perm.end(), uint64_t{0});
  // Activation order: largest diag H first (ties in column order, so the permutation is deterministic).
  if (act_order)
    std::stable_sort(f.perm.begin(), f.perm.end(),
                     [&](uint64_t a, uint64_t b) { return hessian[a * n + a] > hessian[b * n + b]; });
  f.dead.assign(n, false);
  std::vector<double> h(n * n);
  for (uint64_t i = 0; i < n; ++i)
    for (uint64_t j = 0; j < n; ++j) h[i * n + j] = hessian[f.perm[i] * n + f.perm[j]];
  double trace = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (h[i * n + i] == 0) {
      f.dead[f.perm[i]] = true;
      h[i * n + i] = 1;
    }
    trace += h[i * n + i];
  }
  const double damp = n ? dampening * trace / static_cast<double>(n) : 0;
  for (uint64_t i = 0; i < n; ++i) h[i * n + i] += damp;
  f.upper.assign(n * n, 0.0);
  // H = L Lᵀ -> L⁻¹ -> H⁻¹ = L⁻ᵀ L⁻¹ -> H⁻¹ = M Mᵀ, and the upper factor U = Mᵀ (H⁻¹ = Uᵀ U).
  if (!CholeskyLower(h, n, pool)) {
    f.cholesky_failed = true;
    for (uint64_t i = 0; i < n; ++i) f.upper[i * n + i] = 1;
    return f;
  }
  std::vector<double> li(n * n, 0.0);  // L⁻¹, lower: row i = (e_i - Σ_{k<i} L_ik row_k) / L_ii
  for (uint64_t i = 0; i < n; ++i) {
    double* ri = &li[i * n];
    ri[i] = 1;
    for (uint64_t k = 0; k < i; ++k) {
      const double c = h[i * n + k];
      const double* rk = &li[k * n];
      for (uint64_t j = 0; j <= k; ++j) ri[j] -= c * rk[j];
    }
    const double d = h[i * n + i];
    for (uint64_t j = 0; j <= i; ++j) ri[j] /= d;
  }
  std::vector<double> hinv(n * n, 0.0);  // lower triangle of L⁻ᵀ L⁻¹: (i, j <= i) = Σ_{k >= i} li[k][i] li[k][j]
  ForChunks(pool, 0, n, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) {
      double* out = &hinv[i * n];
      for (uint64_t k = i; k < n; ++k) {
        const double c = li[k * n + i];
        const double* rk = &li[k * n];
        for (uint64_t j = 0; j <= i; ++j) out[j] += c * rk[j];
      }
    }
  });
  if (!CholeskyLower(hinv, n, pool)) {
    f.cholesky_failed = true;
    for (uint64_t i = 0; i < n; ++i) f.upper[i * n + i] = 1;
    return f;
  }
  for (uint64_t i = 0; i < n; ++i)
    for (uint64_t j = i; j < n; ++j) f.upper[i * n + j] = hinv[j * n + i];
  return f;
}

Status RtnQuantize(const float* w, uint64_t rows, uint64_t cols, const GptqOptions& o, int8_t* codes, float* scales) {
  LMKIT_RETURN_IF_ERROR(CheckOptions(cols, o));
  LMKIT_RETURN_IF_ERROR(OriginalScales(w, rows, cols, o, scales));
  const IntGrid grid = SymmetricGrid(o.bits);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) {
      const float s = scales[ScaleIndex(o.granularity, cols, r, c)];
      codes[r * cols + c] = formats::QuantizeValue(w[r * cols + c], s, formats::InverseScale(s), grid.lo, grid.hi);
    }
  return Status::Ok();
}

Result<GptqResult> GptqQuantize(const float* w, uint64_t rows, uint64_t cols, const GptqFactor& f,
                                const double* hessian, const GptqOptions& o, ThreadPool* pool) {
  LMKIT_RETURN_IF_ERROR(CheckOptions(cols, o));
  if (f.cols != cols) return Status::InvalidArgument("the Hessian factor has the wrong number of columns");
  const uint64_t n = cols;
  const IntGrid grid = SymmetricGrid(o.bits);
  GptqResult res;
  res.codes.assign(rows * cols, 0);
  res.scales.assign(o.granularity.ScaleCount(rows, cols), 0.0f);
  LMKIT_RETURN_IF_ERROR(OriginalScales(w, rows, cols, o, res.scales.data()));
  res.cholesky_failed = f.cholesky_failed;
  for (bool d : f.dead) res.dead_columns += d ? 1 : 0;
  const bool at_start = o.group_scales_at_group_start && o.granularity.kind == Granularity::Kind::kGroup;
  const uint64_t g = o.granularity.group_size;
  const uint64_t B = o.block_size;
  auto row_fn = [&](size_t r, unsigned) {
    std::vector<double> wr(n), err(B);
    for (uint64_t i = 0; i < n; ++i) wr[i] = f.dead[f.perm[i]] ? 0.0 : w[r * n + f.perm[i]];
    for (uint64_t i1 = 0; i1 < n; i1 += B) {
      const uint64_t i2 = std::min(n, i1 + B);
      if (at_start)  // no permutation here (CheckOptions): position i is column i
        for (uint64_t c = (i1 + g - 1) / g * g; c < i2; c += g) {
          double m = 0;
          for (uint64_t k = c; k < c + g; ++k) m = std::max(m, std::fabs(wr[k]));
          res.scales[r * (n / g) + c / g] = StoredScale(static_cast<float>(m), grid.divisor, o.scale_dtype);
        }
      for (uint64_t i = i1; i < i2; ++i) {
        const uint64_t col = f.perm[i];
        const float s = res.scales[ScaleIndex(o.granularity, n, r, col)];
        const int8_t q =
            formats::QuantizeValue(static_cast<float>(wr[i]), s, formats::InverseScale(s), grid.lo, grid.hi);
        res.codes[r * n + col] = q;
        const double* u = &f.upper[i * n];
        const double e = (wr[i] - static_cast<double>(q) * s) / u[i];
        for (uint64_t j = i + 1; j < i2; ++j) wr[j] -= e * u[j];
        err[i - i1] = e;
      }
      for (uint64_t i = i1; i < i2; ++i) {
        const double e = err[i - i1];
        const double* u = &f.upper[i * n];
        for (uint64_t j = i2; j < n; ++j) wr[j] -= e * u[j];
      }
    }
  };
  if (pool)
    pool->ParallelFor(rows, row_fn);
  else
    for (size_t r = 0; r < rows; ++r) row_fn(r, 0);
  if (hessian) {
    res.error = ReconstructionError(w, res.codes.data(), res.scales.data(), rows, cols, o.granularity, hessian, pool);
    GptqOptions ro = o;
    ro.group_scales_at_group_start = false;
    std::vector<int8_t> rc(rows * cols);
    std::vector<float> rs(res.scales.size());
    LMKIT_RETURN_IF_ERROR(RtnQuantize(w, rows, cols, ro, rc.data(), rs.data()));
    res.rtn_error = ReconstructionError(w, rc.data(), rs.data(), rows, cols, o.granularity, hessian, pool);
  }
  return res;
}

Result<GptqResult> GptqQuantize(const float* w, uint64_t rows, uint64_t cols, const double* hessian,
                                const GptqOptions& o, ThreadPool* pool) {
  LMKIT_RETURN_IF_ERROR(CheckOptions(cols, o));
  LMKIT_ASSIGN_OR_RETURN(GptqFactor f, FactorHessian(hessian, cols, o.dampening, o.act_order, pool));
  return GptqQuantize(w, rows, cols, f, hessian, o, pool);
}

double ReconstructionError(const float* w, const int8_t* codes, const float* scales, uint64_t rows, uint64_t cols,
                           const Granularity& granularity, const double* hessian, ThreadPool* pool) {
  std::vector<double> num(rows, 0.0), den(rows, 0.0);
  auto row_fn = [&](size_t r, unsigned) {
    std::vector<double> x(cols), d(cols);
    for (uint64_t c = 0; c < cols; ++c) {
      x[c] = w[r * cols + c];
      d[c] = x[c] - static_cast<double>(codes[r * cols + c]) * scales[ScaleIndex(granularity, cols, r, c)];
    }
    double a = 0, b = 0;
    for (uint64_t i = 0; i < cols; ++i) {
      const double* hi = &hessian[i * cols];
      double hx = 0, hd = 0;
      for (uint64_t j = 0; j < cols; ++j) {
        hx += hi[j] * x[j];
        hd += hi[j] * d[j];
      }
      a += d[i] * hd;
      b += x[i] * hx;
    }
    num[r] = a;
    den[r] = b;
  };
  if (pool)
    pool->ParallelFor(rows, row_fn);
  else
    for (size_t r = 0; r < rows; ++r) row_fn(r, 0);
  double a = 0, b = 0;
  for (uint64_t r = 0; r < rows; ++r) {
    a += num[r];
    b += den[r];
  }
  return b > 0 ? a / b : 0.0;
}

}  // namespace lmkit::quant
