#include "lmkit/quant/calibrate.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <variant>

#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/npy.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/quant/calibrators.h"
#include "lmkit/quant/histogram.h"

namespace lmkit::quant {
namespace {

constexpr uint64_t kChunk = 1 << 16;

// One tensor's data in one file.
struct Segment {
  const uint8_t* data = nullptr;
  io::DType dtype = io::DType::kF32;
  std::vector<uint64_t> shape;
  std::string file;
  uint64_t elements() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return n;
  }
  // Elements per batch (a slice along dim 0) and number of batches.
  uint64_t batches() const { return shape.size() >= 2 ? shape[0] : 1; }
  uint64_t batch_elements() const { return shape.size() >= 2 && shape[0] ? elements() / shape[0] : elements(); }
};

struct Inputs {
  std::vector<std::unique_ptr<io::NpyFile>> npys;
  std::vector<std::unique_ptr<io::SafetensorsFile>> sts;
  std::vector<std::string> order;
  std::map<std::string, std::vector<Segment>> segments;
  uint64_t bytes = 0;
};

Status AddSegment(Inputs& in, const std::string& name, Segment seg) {
  if (!io::IsFloatDType(seg.dtype))
    return Status::InvalidInput(seg.file, "tensor '" + name + "' has dtype " + std::string(io::DTypeName(seg.dtype)) +
                                              "; activations must be floating point");
  in.bytes += seg.elements() * io::DTypeSize(seg.dtype);
  auto it = in.segments.find(name);
  if (it == in.segments.end()) {
    in.order.push_back(name);
    in.segments[name].push_back(std::move(seg));
  } else {
    it->second.push_back(std::move(seg));
  }
  return Status::Ok();
}

Result<Inputs> OpenInputs(const std::vector<std::string>& paths) {
  Inputs in;
  for (const std::string& p : paths) {
    std::string ext = std::filesystem::path(p).extension().string();
    if (ext == ".npy") {
      LMKIT_ASSIGN_OR_RETURN(io::NpyFile f, io::NpyFile::Open(p));
      auto owned = std::make_unique<io::NpyFile>(std::move(f));
      Segment s{owned->data().data(), owned->dtype(), owned->shape(), p};
      LMKIT_RETURN_IF_ERROR(AddSegment(in, std::filesystem::path(p).stem().string(), std::move(s)));
      in.npys.push_back(std::move(owned));
    } else if (ext == ".safetensors") {
      LMKIT_ASSIGN_OR_RETURN(io::SafetensorsFile f, io::SafetensorsFile::Open(p));
      auto owned = std::make_unique<io::SafetensorsFile>(std::move(f));
      for (const io::TensorInfo& t : owned->tensors())
        LMKIT_RETURN_IF_ERROR(AddSegment(in, t.name, Segment{owned->Data(t).data(), t.dtype, t.shape, p}));
      in.sts.push_back(std::move(owned));
    } else {
      return Status::InvalidInput(p, "activation files must be .npy or .safetensors");
    }
  }
  if (in.order.empty()) return Status::InvalidInput("", "no activation tensors in the inputs");
  return in;
}

struct Partial {
  float absmax = 0;
  float mn = std::numeric_limits<float>::infinity();
  float mx = -std::numeric_limits<float>::infinity();
  bool finite = true;
};

#pragma GCC diagnostic ignored "-Wpsabi"  // vector helpers are always inlined in this file
typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));

// min, max, max|x| and finiteness of a chunk, 8 lanes at a time (the scalar loop was half of a calibrate run).
[[gnu::always_inline]] inline void ScanImpl(const float* x, uint64_t n, Partial* p) {
  F8 mn = F8{} + p->mn, mx = F8{} + p->mx, am = F8{} + p->absmax, bad = {};
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    F8 v;
    std::memcpy(&v, x + i, sizeof v);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    const F8 a = reinterpret_cast<F8>(reinterpret_cast<I8>(v) & 0x7fffffff);
    am = a > am ? a : am;
    bad += v - v;  // NaN for NaN and inf
  }
  float b = 0;
  for (int j = 0; j < 8; ++j) {
    p->mn = std::min(p->mn, mn[j]);
    p->mx = std::max(p->mx, mx[j]);
    p->absmax = std::max(p->absmax, am[j]);
    b += bad[j];
  }
  for (; i < n; ++i) {
    p->mn = std::min(p->mn, x[i]);
    p->mx = std::max(p->mx, x[i]);
    p->absmax = std::max(p->absmax, std::fabs(x[i]));
    b += x[i] - x[i];
  }
  p->finite = p->finite && b == 0.0f;
}
__attribute__((target("avx2"))) void ScanAvx2(const float* x, uint64_t n, Partial* p) { ScanImpl(x, n, p); }
void ScanBase(const float* x, uint64_t n, Partial* p) { ScanImpl(x, n, p); }
void ScanChunk(const float* x, uint64_t n, Partial* p) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  (avx2 ? ScanAvx2 : ScanBase)(x, n, p);
}

// Calls fn(chunk_floats, count, worker) for every 64k-element chunk of every segment, in parallel.
void ForEachChunk(const std::vector<Segment>& segs, ThreadPool& pool, std::vector<std::vector<float>>& bufs,
                  const std::function<void(const float*, uint64_t, unsigned)>& fn) {
  for (const Segment& s : segs) {
    const uint64_t n = s.elements(), chunks = (n + kChunk - 1) / kChunk;
    const size_t es = io::DTypeSize(s.dtype);
    // Aligned F32 data is used in place (the copy was a third of the run time); other dtypes are converted per chunk.
    const bool in_place = s.dtype == io::DType::kF32 && reinterpret_cast<uintptr_t>(s.data) % alignof(float) == 0;
    pool.ParallelFor(chunks, [&](size_t c, unsigned w) {
      const uint64_t begin = c * kChunk, count = std::min(kChunk, n - begin);
      if (in_place) {
        fn(reinterpret_cast<const float*>(s.data) + begin, count, w);
        return;
      }
      io::ConvertToF32(s.dtype, s.data + begin * es, bufs[w].data(), count);
      fn(bufs[w].data(), count, w);
    });
  }
}

Result<TensorRange> CalibrateNvidia(const std::string& name, const std::vector<Segment>& segs,
                                    const CalibrateOptions& o, double percentile, ThreadPool& pool) {
  std::vector<std::vector<float>> bufs(pool.size(), std::vector<float>(kChunk));
  std::vector<Partial> parts(pool.size());
  ForEachChunk(segs, pool, bufs, [&](const float* x, uint64_t n, unsigned w) { ScanChunk(x, n, &parts[w]); });
  TensorRange r;
  r.name = name;
  Partial all;
  for (const Partial& p : parts) {
    all.finite &= p.finite;
    all.mn = std::min(all.mn, p.mn);
    all.mx = std::max(all.mx, p.mx);
    all.absmax = std::max(all.absmax, p.absmax);
  }
  if (!all.finite) return Status::InvalidInput(segs.front().file, "tensor '" + name + "' contains NaN or Inf");
  for (const Segment& s : segs) {
    r.samples += s.elements();
    r.batches += s.batches();
  }
  r.min = r.samples ? all.mn : 0;
  r.max = r.samples ? all.mx : 0;
  double amax = all.absmax;
  if (o.method != CalibMethod::kMinMax) {
    std::vector<AbsHistogram> hists(pool.size(), AbsHistogram(o.bins, all.absmax));
    ForEachChunk(segs, pool, bufs, [&](const float* x, uint64_t n, unsigned w) { hists[w].Add(x, n); });
    for (size_t w = 1; w < hists.size(); ++w) hists[0].Merge(hists[w]);
    const AbsHistogram& h = hists[0];
    r.final_bins = o.bins;
    if (all.absmax > 0) {
      switch (o.method) {
        case CalibMethod::kPercentile: amax = NvidiaPercentileAmax(h, percentile); break;
        case CalibMethod::kEntropy: amax = NvidiaEntropyAmax(h, o.quantized_bins, o.quantized_bins); break;
        case CalibMethod::kMse: amax = NvidiaMseAmax(h, o.quantized_bins); break;
        case CalibMethod::kMinMax: break;
      }
    }
  }
  r.amax = amax;
  r.lo = -amax;
  r.hi = amax;
  return r;
}

Result<TensorRange> CalibrateOrt(const std::string& name, const std::vector<Segment>& segs, const CalibrateOptions& o,
                                 double percentile) {
  OrtSignedHistogram signed_h(o.bins);
  OrtAbsHistogram abs_h(o.bins);
  TensorRange r;
  r.name = name;
  std::vector<float> batch;
  bool first = true;
  for (const Segment& s : segs) {
    const uint64_t nb = s.batches(), be = s.batch_elements();
    const size_t es = io::DTypeSize(s.dtype);
    batch.resize(be);
    for (uint64_t b = 0; b < nb; ++b) {
      io::ConvertToF32(s.dtype, s.data + b * be * es, batch.data(), be);
      for (float v : batch)
        if (!std::isfinite(v)) return Status::InvalidInput(s.file, "tensor '" + name + "' contains NaN or Inf");
      if (be == 0) continue;
      auto [mn, mx] = std::minmax_element(batch.begin(), batch.end());
      r.min = first ? *mn : std::min<double>(r.min, *mn);
      r.max = first ? *mx : std::max<double>(r.max, *mx);
      first = false;
      if (o.method == CalibMethod::kEntropy) signed_h.AddBatch(batch.data(), be);
      if (o.method == CalibMethod::kPercentile) abs_h.AddBatch(batch.data(), be);
      r.samples += be;
      ++r.batches;
    }
  }
  switch (o.method) {
    case CalibMethod::kEntropy: {
      auto [lo, hi] = OrtEntropyThreshold(signed_h, o.quantized_bins);
      r.lo = lo;
      r.hi = hi;
      r.final_bins = signed_h.counts().size();
      break;
    }
    case CalibMethod::kPercentile: {
      auto [lo, hi] = OrtPercentileThreshold(abs_h, percentile);
      r.lo = lo;
      r.hi = hi;
      r.final_bins = abs_h.counts().size();
      break;
    }
    default:
      r.lo = r.min;
      r.hi = r.max;
      break;
  }
  r.amax = std::max(std::fabs(r.lo), std::fabs(r.hi));
  return r;
}

}  // namespace

Result<CalibMethod> ParseCalibMethod(const std::string& s) {
  if (s == "minmax") return CalibMethod::kMinMax;
  if (s == "percentile") return CalibMethod::kPercentile;
  if (s == "entropy") return CalibMethod::kEntropy;
  if (s == "mse") return CalibMethod::kMse;
  return Status::Usage("--method must be minmax, percentile, entropy or mse, not '" + s + "'");
}

Result<CalibFlavor> ParseCalibFlavor(const std::string& s) {
  if (s == "nvidia") return CalibFlavor::kNvidia;
  if (s == "ort") return CalibFlavor::kOrt;
  return Status::Usage("--flavor must be nvidia or ort, not '" + s + "'");
}

const char* CalibMethodName(CalibMethod m) {
  switch (m) {
    case CalibMethod::kMinMax: return "minmax";
    case CalibMethod::kPercentile: return "percentile";
    case CalibMethod::kEntropy: return "entropy";
    case CalibMethod::kMse: return "mse";
  }
  return "";
}

const char* CalibFlavorName(CalibFlavor f) { return f == CalibFlavor::kNvidia ? "nvidia" : "ort"; }

Result<CalibrationTable> Calibrate(const CalibrateOptions& o, ProgressSink* progress) {
  if (o.inputs.empty()) return Status::Usage("no activation files given");
  if (o.method == CalibMethod::kMse && o.flavor == CalibFlavor::kOrt)
    return Status::Usage("--method mse exists only in the nvidia flavour (ONNX Runtime has no MSE calibrator)");
  const double percentile = o.percentile.value_or(o.flavor == CalibFlavor::kNvidia ? 99.99 : 99.999);
  if (!(percentile > 0 && percentile <= 100)) return Status::Usage("--percentile must be in (0, 100]");
  if (o.method != CalibMethod::kMinMax && o.bins < 2) return Status::Usage("--bins must be at least 2");
  if (o.method == CalibMethod::kEntropy && o.bins < o.quantized_bins)
    return Status::Usage(fmt::format("--bins must be at least {} for the entropy method", o.quantized_bins));
  const double t0 = MonotonicSeconds();
  LMKIT_ASSIGN_OR_RETURN(Inputs in, OpenInputs(o.inputs));
  CalibrationTable table;
  table.method = o.method;
  table.flavor = o.flavor;
  table.percentile = o.method == CalibMethod::kPercentile ? percentile : 0;
  table.bins = o.method == CalibMethod::kMinMax ? 0 : o.bins;
  table.bytes_read = in.bytes;
  ThreadPool pool(std::max(1u, o.threads));
  if (progress) progress->Begin("calibrating", in.order.size(), "tensors");
  size_t done = 0;
  for (const std::string& name : in.order) {
    const auto& segs = in.segments[name];
    Result<TensorRange> r = o.flavor == CalibFlavor::kOrt && o.method != CalibMethod::kMinMax
                                ? CalibrateOrt(name, segs, o, percentile)
                                : CalibrateNvidia(name, segs, o, percentile, pool);
    if (!r.ok()) return r.status();
    table.tensors.push_back(std::move(*r));
    if (progress) progress->Update(++done);
  }
  if (progress) progress->Finish();
  table.seconds = MonotonicSeconds() - t0;
  table.peak_rss_bytes = PeakRssBytes();
  return table;
}

Json CalibrationToJson(const CalibrationTable& t) {
  Json j;
  j["format"] = "lmkit-calibration";
  j["version"] = 1;
  j["method"] = CalibMethodName(t.method);
  j["flavor"] = t.method == CalibMethod::kMinMax ? "any" : CalibFlavorName(t.flavor);
  j["bins"] = t.bins;
  if (t.method == CalibMethod::kPercentile) j["percentile"] = t.percentile;
  Json tensors = Json::object();
  for (const TensorRange& r : t.tensors) {
    Json e;
    e["amax"] = r.amax;
    e["range"] = Json::array({r.lo, r.hi});
    e["min"] = r.min;
    e["max"] = r.max;
    e["samples"] = r.samples;
    e["batches"] = r.batches;
    e["bins"] = r.final_bins;
    e["scale_127"] = static_cast<double>(static_cast<float>(r.amax / 127.0));
    tensors[r.name] = std::move(e);
  }
  j["tensors"] = std::move(tensors);
  return j;
}

Result<std::map<std::string, double>> ParseCalibrationAmax(const std::string& text, const std::string& subject) {
  LMKIT_ASSIGN_OR_RETURN(Json j, ParseJson(text, subject));
  if (!j.is_object() || !j.contains("tensors") || !j["tensors"].is_object())
    return Status::InvalidInput(subject, "not an lmkit calibration table (no \"tensors\" object)");
  std::map<std::string, double> out;
  for (auto it = j["tensors"].begin(); it != j["tensors"].end(); ++it) {
    const Json& e = it.value();
    if (!e.is_object() || !e.contains("amax") || !e["amax"].is_number())
      return Status::InvalidInput(subject, "tensor '" + it.key() + "' has no numeric \"amax\"");
    double a = e["amax"].get<double>();
    if (!(std::isfinite(a) && a >= 0))
      return Status::InvalidInput(subject, "tensor '" + it.key() + "' has an invalid amax");
    out[it.key()] = a;
  }
  return out;
}

std::string TrtScaleHex(double amax) {
  float s = static_cast<float>(amax / 127.0);
  return fmt::format("{:08x}", std::bit_cast<uint32_t>(s));
}

std::string TrtCacheText(const CalibrationTable& t) {
  std::string out = t.method == CalibMethod::kEntropy ? "TRT-8601-EntropyCalibration2\n" : "TRT-8601-MinMaxCalibration\n";
  for (const TensorRange& r : t.tensors) out += r.name + ": " + TrtScaleHex(r.amax) + "\n";
  return out;
}

}  // namespace lmkit::quant
