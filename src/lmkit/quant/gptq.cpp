// GPTQ, as gptq.h describes. Performance notes:
// - The Hessian sums (2·N·n² flops for N tokens: ~0.8 TFLOP a layer for a 125M model and 65536 tokens) run on the
//   fp32 GEMM kernels (model/gemm_f32.h), Xᵀ X in tiles of the upper triangle, 512 tokens per fp32 chain, the chunks
//   added in fp64. The reconstruction errors ((W - Ŵ) H (W - Ŵ)ᵀ) use the same kernels on H rounded to fp32.
// - Given the scales, GPTQ's updates never cross rows (column i's error moves only later columns of the same row), so
//   rows run the whole column loop on their own fp64 copies, in groups of 8 that share each read of U; groups are split
//   over the pool. The lazy batches keep the order of llm-compressor's arithmetic (in-batch updates one column at a
//   time, later columns once per batch).
// - The factorization (Cholesky, triangular inverse, H⁻¹, Cholesky again: ~n³ flops) depends only on H, which q/k/v
//   and gate/up share: FactorHessian runs once per input and GptqQuantize reuses it. Its dot products run in four
//   chains; its row updates are contiguous fp64 loops the compiler vectorizes, blocked so that a row read serves 32
//   rows; rows of the factor are split over the pool in chunks, each element computed by one thread in one order.
#include "lmkit/quant/gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lmkit/formats/int8.h"
#include "lmkit/model/gemm_f32.h"
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

// Σ a_k b_k in four interleaved chains (k mod 4), combined as (c0 + c1) + (c2 + c3), then the tail: independent chains
// hide the add latency and vectorize without reassociation, and the order depends only on n.
double Dot(const double* a, const double* b, uint64_t n) {
  double c0 = 0, c1 = 0, c2 = 0, c3 = 0;
  uint64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    c0 += a[k] * b[k];
    c1 += a[k + 1] * b[k + 1];
    c2 += a[k + 2] * b[k + 2];
    c3 += a[k + 3] * b[k + 3];
  }
  double s = (c0 + c1) + (c2 + c3);
  for (; k < n; ++k) s += a[k] * b[k];
  return s;
}

// In-place lower Cholesky factor of the [n, n] row-major matrix a (only the lower triangle is read and written).
bool CholeskyLower(std::vector<double>& a, uint64_t n, ThreadPool* pool) {
  for (uint64_t j = 0; j < n; ++j) {
    const double* rj = &a[j * n];
    const double s = rj[j] - Dot(rj, rj, j);
    if (!(s > 0) || !std::isfinite(s)) return false;
    const double d = std::sqrt(s);
    a[j * n + j] = d;
    ForChunks(pool, j + 1, n, [&](uint64_t b, uint64_t e) {
      for (uint64_t i = b; i < e; ++i) {
        double* ri = &a[i * n];
        ri[j] = (ri[j] - Dot(ri, rj, j)) / d;
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

// H in fp32 panels, the "weights" of y = a H (H is symmetric, so a Hᵀ = a H).
struct PackedHessian {
  model::gemm::AlignedVector<float> panels;
  uint32_t n = 0;
};
PackedHessian PackHessian(const double* h, uint64_t n) {
  std::vector<float> f(n * n);
  for (uint64_t i = 0; i < n * n; ++i) f[i] = static_cast<float>(h[i]);
  return {model::gemm::PackPanels(f.data(), static_cast<uint32_t>(n), static_cast<uint32_t>(n)),
          static_cast<uint32_t>(n)};
}

// Σ_r a_r H a_rᵀ for the rows of `a` ([rows, n] fp32): a H on the fp32 GEMM in tiles, each row's dot product in fp64,
// the rows summed in order (same bytes for any pool).
double QuadraticForm(const PackedHessian& h, const float* a, uint64_t rows, ThreadPool* pool) {
  constexpr uint64_t kTileRows = 48;
  const uint32_t n = h.n;
  model::gemm::WeightView w;
  w.packed = true;
  w.data = h.panels.data();
  w.out = n;
  w.in = n;
  std::vector<double> per_row(rows, 0.0);
  const uint64_t tiles = (rows + kTileRows - 1) / kTileRows;
  auto item = [&](size_t t, unsigned) {
    const uint64_t r0 = t * kTileRows, r1 = std::min(rows, r0 + kTileRows);
    std::vector<float> y((r1 - r0) * n);
    model::gemm::GemmF32(w, a + r0 * n, n, r1 - r0, 0, n, y.data(), n);
    for (uint64_t r = r0; r < r1; ++r) {
      double s = 0;
      for (uint32_t i = 0; i < n; ++i)
        s += static_cast<double>(a[r * n + i]) * static_cast<double>(y[(r - r0) * n + i]);
      per_row[r] = s;
    }
  };
  if (pool && tiles > 1)
    pool->ParallelFor(tiles, item);
  else
    for (size_t t = 0; t < tiles; ++t) item(t, 0);
  double s = 0;
  for (double v : per_row) s += v;
  return s;
}

// W - codes * scales, [rows, cols] fp32.
std::vector<float> Residual(const float* w, const int8_t* codes, const float* scales, uint64_t rows, uint64_t cols,
                            const Granularity& g) {
  std::vector<float> d(rows * cols);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c)
      d[r * cols + c] =
          static_cast<float>(static_cast<double>(w[r * cols + c]) -
                             static_cast<double>(codes[r * cols + c]) * scales[ScaleIndex(g, cols, r, c)]);
  return d;
}

}  // namespace

void HessianAccumulator::AddChunk(const float* xt, uint64_t rows, uint64_t cols, double* sum, ThreadPool* pool) {
  // Σ_t x_t x_tᵀ = Xᵀ X, i.e. y = a bᵀ with a = b = Xᵀ ([cols, rows]): the GEMM's "weights" are Xᵀ in panels. Tiles of
  // kTileRows rows of the upper triangle by at most kTileCols columns; each writes its own part of `sum`.
  constexpr uint64_t kTileRows = 48, kTileCols = 256;
  const uint32_t n = static_cast<uint32_t>(cols), k = static_cast<uint32_t>(rows);
  const model::gemm::AlignedVector<float> panels = model::gemm::PackPanels(xt, n, k);
  model::gemm::WeightView w;
  w.packed = true;
  w.data = panels.data();
  w.out = n;
  w.in = k;
  struct Tile {
    uint64_t r0, r1;
    uint32_t c0, c1;
  };
  std::vector<Tile> tiles;
  for (uint64_t r0 = 0; r0 < n; r0 += kTileRows) {
    const uint64_t r1 = std::min<uint64_t>(n, r0 + kTileRows);
    for (uint64_t c0 = r0 / model::gemm::kPanel * model::gemm::kPanel; c0 < n; c0 += kTileCols)
      tiles.push_back(
          {r0, r1, static_cast<uint32_t>(c0), static_cast<uint32_t>(std::min<uint64_t>(n, c0 + kTileCols))});
  }
  auto item = [&](size_t t, unsigned) {
    const Tile& tl = tiles[t];
    const uint32_t width = tl.c1 - tl.c0;
    // The GEMM writes output column c of tile row r at y[r * width + c], c in [c0, c1).
    std::vector<float> y((tl.r1 - tl.r0) * width + tl.c0);
    model::gemm::GemmF32(w, xt + tl.r0 * k, k, tl.r1 - tl.r0, tl.c0, tl.c1, y.data(), width);
    for (uint64_t i = tl.r0; i < tl.r1; ++i) {
      const float* yr = &y[(i - tl.r0) * width];
      double* si = sum + i * cols;
      for (uint64_t j = std::max<uint64_t>(i, tl.c0); j < tl.c1; ++j) si[j] += static_cast<double>(yr[j]);
    }
  };
  if (pool && tiles.size() > 1)
    pool->ParallelFor(tiles.size(), item);
  else
    for (size_t t = 0; t < tiles.size(); ++t) item(t, 0);
}

void HessianAccumulator::Add(const float* x, uint64_t rows, ThreadPool* pool) {
  const uint64_t n = cols_;
  if (n == 0) {
    samples_ += rows;
    return;
  }
  if (pending_.empty()) pending_.assign(n * kChunkRows, 0.0f);
  for (uint64_t r = 0; r < rows;) {
    const uint64_t take = std::min(rows - r, kChunkRows - pending_rows_);
    for (uint64_t i = 0; i < n; ++i) {
      float* dst = &pending_[i * kChunkRows + pending_rows_];
      for (uint64_t t = 0; t < take; ++t) dst[t] = x[(r + t) * n + i];
    }
    pending_rows_ += take;
    r += take;
    if (pending_rows_ == kChunkRows) {
      AddChunk(pending_.data(), kChunkRows, n, sum_.data(), pool);
      pending_rows_ = 0;
    }
  }
  samples_ += rows;
}

std::vector<double> HessianAccumulator::Hessian(ThreadPool* pool) const {
  const uint64_t n = cols_;
  std::vector<double> h(n * n, 0.0);
  if (samples_ == 0) return h;
  std::vector<double> sum = sum_;
  if (pending_rows_ > 0) {
    // The partial chunk, compacted to [n, pending_rows_].
    std::vector<float> xt(n * pending_rows_);
    for (uint64_t i = 0; i < n; ++i) std::copy_n(&pending_[i * kChunkRows], pending_rows_, &xt[i * pending_rows_]);
    AddChunk(xt.data(), pending_rows_, n, sum.data(), pool);
  }
  const double f = 2.0 / static_cast<double>(samples_);
  for (uint64_t i = 0; i < n; ++i)
    for (uint64_t j = i; j < n; ++j) h[i * n + j] = h[j * n + i] = f * sum[i * n + j];
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
  // L⁻¹, lower: row i = (e_i - Σ_{k<i} L_ik row_k) / L_ii, each element's terms in ascending k. Rows go in blocks of
  // kFactorRowsPerItem: a block first takes the rows before it (k outer, so each is read once per block, not once per
  // row), then its own rows in order; the per-element order is unchanged.
  std::vector<double> li(n * n, 0.0);
  for (uint64_t b = 0; b < n; b += kFactorRowsPerItem) {
    const uint64_t e = std::min(n, b + kFactorRowsPerItem);
    for (uint64_t i = b; i < e; ++i) li[i * n + i] = 1;
    for (uint64_t k = 0; k < b; ++k) {
      const double* rk = &li[k * n];
      for (uint64_t i = b; i < e; ++i) {
        const double c = h[i * n + k];
        double* ri = &li[i * n];
        for (uint64_t j = 0; j <= k; ++j) ri[j] -= c * rk[j];
      }
    }
    for (uint64_t i = b; i < e; ++i) {
      double* ri = &li[i * n];
      for (uint64_t k = b; k < i; ++k) {
        const double c = h[i * n + k];
        const double* rk = &li[k * n];
        for (uint64_t j = 0; j <= k; ++j) ri[j] -= c * rk[j];
      }
      const double d = h[i * n + i];
      for (uint64_t j = 0; j <= i; ++j) ri[j] /= d;
    }
  }
  // Lower triangle of L⁻ᵀ L⁻¹: (i, j <= i) = Σ_{k >= i} li[k][i] li[k][j], terms in ascending k; k outer within a
  // chunk of rows, so each row of L⁻¹ is read once per chunk.
  std::vector<double> hinv(n * n, 0.0);
  ForChunks(pool, 0, n, [&](uint64_t b, uint64_t e) {
    for (uint64_t k = b; k < n; ++k) {
      const double* rk = &li[k * n];
      for (uint64_t i = b; i < std::min(e, k + 1); ++i) {
        const double c = rk[i];
        double* out = &hinv[i * n];
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
  // Rows in groups of kGroupRows: each row of U a batch reads is then read once per group, not once per row (for 2048
  // columns a batch of U is 2 MiB). Every weight sees the same subtractions in the same order as one row alone.
  constexpr uint64_t kGroupRows = 8;
  const uint64_t groups = (rows + kGroupRows - 1) / kGroupRows;
  auto group_fn = [&](size_t gi, unsigned) {
    const uint64_t r0 = gi * kGroupRows, r1 = std::min<uint64_t>(rows, r0 + kGroupRows), nr = r1 - r0;
    std::vector<double> wr(nr * n), err(nr * B);
    for (uint64_t r = r0; r < r1; ++r)
      for (uint64_t i = 0; i < n; ++i) wr[(r - r0) * n + i] = f.dead[f.perm[i]] ? 0.0 : w[r * n + f.perm[i]];
    for (uint64_t i1 = 0; i1 < n; i1 += B) {
      const uint64_t i2 = std::min(n, i1 + B);
      for (uint64_t r = r0; r < r1; ++r) {
        double* x = &wr[(r - r0) * n];
        if (at_start)  // no permutation here (CheckOptions): position i is column i
          for (uint64_t c = (i1 + g - 1) / g * g; c < i2; c += g) {
            double m = 0;
            for (uint64_t k = c; k < c + g; ++k) m = std::max(m, std::fabs(x[k]));
            res.scales[r * (n / g) + c / g] = StoredScale(static_cast<float>(m), grid.divisor, o.scale_dtype);
          }
        for (uint64_t i = i1; i < i2; ++i) {
          const uint64_t col = f.perm[i];
          const float s = res.scales[ScaleIndex(o.granularity, n, r, col)];
          const int8_t q =
              formats::QuantizeValue(static_cast<float>(x[i]), s, formats::InverseScale(s), grid.lo, grid.hi);
          res.codes[r * n + col] = q;
          const double* u = &f.upper[i * n];
          const double e = (x[i] - static_cast<double>(q) * s) / u[i];
          for (uint64_t j = i + 1; j < i2; ++j) x[j] -= e * u[j];
          err[(r - r0) * B + (i - i1)] = e;
        }
      }
      for (uint64_t i = i1; i < i2; ++i) {
        const double* u = &f.upper[i * n];
        for (uint64_t r = 0; r < nr; ++r) {
          const double e = err[r * B + (i - i1)];
          double* x = &wr[r * n];
          for (uint64_t j = i2; j < n; ++j) x[j] -= e * u[j];
        }
      }
    }
  };
  if (pool && groups > 1)
    pool->ParallelFor(groups, group_fn);
  else
    for (size_t gi = 0; gi < groups; ++gi) group_fn(gi, 0);
  if (hessian) {
    // ||W X||² once for both errors.
    const PackedHessian h = PackHessian(hessian, cols);
    const double den = QuadraticForm(h, w, rows, pool);
    auto error_of = [&](const int8_t* codes, const float* scales) {
      if (!(den > 0)) return 0.0;
      const std::vector<float> d = Residual(w, codes, scales, rows, cols, o.granularity);
      return QuadraticForm(h, d.data(), rows, pool) / den;
    };
    res.error = error_of(res.codes.data(), res.scales.data());
    GptqOptions ro = o;
    ro.group_scales_at_group_start = false;
    std::vector<int8_t> rc(rows * cols);
    std::vector<float> rs(res.scales.size());
    LMKIT_RETURN_IF_ERROR(RtnQuantize(w, rows, cols, ro, rc.data(), rs.data()));
    res.rtn_error = error_of(rc.data(), rs.data());
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
  const PackedHessian h = PackHessian(hessian, cols);
  const double den = QuadraticForm(h, w, rows, pool);
  if (!(den > 0)) return 0.0;
  const std::vector<float> d = Residual(w, codes, scales, rows, cols, granularity);
  return QuadraticForm(h, d.data(), rows, pool) / den;
}

}  // namespace lmkit::quant
