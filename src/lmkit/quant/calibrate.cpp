#include "lmkit/quant/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <variant>

#include "lmkit/common/atomic_file.h"
#include "lmkit/common/file_reader.h"
#include "lmkit/common/name_table.h"
#include "lmkit/common/output_check.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/npy.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/quant/abs_histogram.h"
#include "lmkit/quant/calibrators.h"
#include "lmkit/quant/ort_histogram.h"

namespace lmkit::quant {
namespace {

constexpr uint64_t kChunk = 1 << 15;

// One tensor's data in one file, read with pread (file_reader.h: on the build VM a first touch of mapped pages ran at
// 1.8 GB/s, pread at 8.6 GB/s per thread).
struct Segment {
  const FileReader* reader = nullptr;
  uint64_t offset = 0;  // of the tensor's first byte in the file
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

// Reads elements [first, first + count) of `s` as fp32 into `out`: F32 straight into it, other dtypes through `raw`
// (resized as needed) and converted.
Status ReadAsF32(const Segment& s, uint64_t first, uint64_t count, float* out, std::vector<uint8_t>* raw) {
  const size_t es = io::DTypeSize(s.dtype);
  if (s.dtype == io::DType::kF32) return s.reader->ReadAt(s.offset + first * es, out, count * es);
  raw->resize(count * es);
  LMKIT_RETURN_IF_ERROR(s.reader->ReadAt(s.offset + first * es, raw->data(), count * es));
  io::ConvertToF32(s.dtype, raw->data(), out, count);
  return Status::Ok();
}

struct Inputs {
  std::vector<std::unique_ptr<FileReader>> readers;
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
    if (ext == ".npy" || ext == ".safetensors") {
      // The headers are validated through the usual readers (their mappings are dropped here: only the header pages
      // were touched); the data is then read with pread, and a file that changed in between is an error.
      LMKIT_ASSIGN_OR_RETURN(FileReader r, FileReader::Open(p));
      auto reader = std::make_unique<FileReader>(std::move(r));
      if (ext == ".npy") {
        LMKIT_ASSIGN_OR_RETURN(io::NpyFile f, io::NpyFile::Open(p));
        if (reader->size() != f.header().data_offset + f.header().num_bytes())
          return Status::InvalidInput(p, "file changed while being opened");
        Segment s{reader.get(), f.header().data_offset, f.dtype(), f.shape(), p};
        LMKIT_RETURN_IF_ERROR(AddSegment(in, std::filesystem::path(p).stem().string(), std::move(s)));
      } else {
        LMKIT_ASSIGN_OR_RETURN(io::SafetensorsFile f, io::SafetensorsFile::Open(p));
        if (reader->size() != f.file_bytes()) return Status::InvalidInput(p, "file changed while being opened");
        for (const io::TensorInfo& t : f.tensors())
          LMKIT_RETURN_IF_ERROR(
              AddSegment(in, t.name, Segment{reader.get(), f.data_offset() + t.begin, t.dtype, t.shape, p}));
      }
      in.readers.push_back(std::move(reader));
    } else {
      return Status::InvalidInput(p, "activation files must be .npy or .safetensors");
    }
  }
  if (in.order.empty()) return Status::InvalidInput("", "no activation tensors in the inputs");
  return in;
}

// Reads elements [first, first + count) of `s` as fp32 in kChunk pieces split over the pool: piece c goes to
// dest(c, worker) (F32 straight there, other dtypes through the worker's `raws` buffer and converted), then fn(piece,
// m, worker, element index of the piece in `s`) runs on it while it is in cache. The first read error in piece order
// is returned.
template <typename Dest, typename Fn>
Status ReadPieces(const Segment& s, uint64_t first, uint64_t count, ThreadPool& pool,
                  std::vector<std::vector<uint8_t>>& raws, Dest dest, Fn fn) {
  const uint64_t pieces = (count + kChunk - 1) / kChunk;
  std::vector<Status> errors(pieces);
  std::atomic<bool> failed{false};
  pool.ParallelFor(pieces, [&](size_t c, unsigned w) {
    if (failed.load(std::memory_order_relaxed)) return;
    const uint64_t begin = c * kChunk, m = std::min(kChunk, count - begin);
    float* out = dest(c, w);
    Status st = ReadAsF32(s, first + begin, m, out, &raws[w]);
    if (!st.ok()) {
      errors[c] = std::move(st);
      failed = true;
      return;
    }
    fn(out, m, w, first + begin);
  });
  if (failed)
    for (Status& e : errors)
      if (!e.ok()) return e;
  return Status::Ok();
}

// minmax needs only the scan of the samples, unless the histogram is kept for the survey.
bool ScanOnly(const CalibrateRequest& o) { return o.method == CalibMethod::kMinMax && !o.survey; }

// Every method's threshold on `h` (the one `method_amax` came from is not computed twice). A threshold the histogram
// cannot give (entropy with fewer bins than quantized levels) is NaN.
ThresholdSurvey Survey(const AbsHistogram& h, const SampleRange& all, const CalibrateRequest& o, double percentile,
                       double method_amax, ThreadPool* pool) {
  ThresholdSurvey s;
  s.counts = h.counts();
  s.abs_max = all.abs_max;
  s.percentile = percentile;
  s.minmax = all.abs_max;
  if (!(all.abs_max > 0)) return s;
  s.percentile_amax = o.method == CalibMethod::kPercentile ? method_amax : NvidiaPercentileAmax(h, percentile);
  s.mse = o.method == CalibMethod::kMse ? method_amax : NvidiaMseAmax(h, o.quantized_bins);
  s.entropy = o.method == CalibMethod::kEntropy ? method_amax
              : h.bins() >= o.quantized_bins    ? NvidiaEntropyAmax(h, o.quantized_bins, o.quantized_bins, pool)
                                                : std::nan("");
  return s;
}

// The threshold from the scan (`all`) and, except for minmax, the |x| histogram over [0, all.abs_max].
TensorRange FinishNvidia(TensorRange r, const SampleRange& all, const AbsHistogram* h, const CalibrateRequest& o,
                         double percentile, ThreadPool* pool) {
  double amax = all.abs_max;
  if (h) {
    if (o.method != CalibMethod::kMinMax) r.final_bins = o.bins;
    if (all.abs_max > 0) {
      switch (o.method) {
        case CalibMethod::kPercentile:
          amax = NvidiaPercentileAmax(*h, percentile);
          break;
        case CalibMethod::kEntropy:
          amax = NvidiaEntropyAmax(*h, o.quantized_bins, o.quantized_bins, pool);
          break;
        case CalibMethod::kMse:
          amax = NvidiaMseAmax(*h, o.quantized_bins);
          break;
        case CalibMethod::kMinMax:
          break;
      }
    }
    if (o.survey) r.survey = Survey(*h, all, o, percentile, amax, pool);
  }
  r.amax = amax;
  r.lo = -amax;
  r.hi = amax;
  return r;
}

// Pass 0 reads every segment once, scanning each piece and (except minmax) counting it under the running max|x|
// (SpeculativeAbsHistogram); pass 1 reads again only the stretches counted under a smaller max. The tensor's samples
// are its segments in order: stream position = elements of the segments before + index in the segment.
Result<TensorRange> CalibrateNvidia(const std::string& name, const std::vector<Segment>& segs,
                                    const CalibrateRequest& o, double percentile, ThreadPool& pool) {
  std::vector<std::vector<float>> bufs(pool.size(), std::vector<float>(kChunk));
  std::vector<std::vector<uint8_t>> raws(pool.size());
  auto buffer = [&](size_t, unsigned w) { return bufs[w].data(); };
  const bool minmax = ScanOnly(o);
  SpeculativeAbsHistogram h(o.bins, pool.size());
  std::vector<SampleRange> parts(pool.size());
  uint64_t base = 0;
  for (const Segment& s : segs) {
    LMKIT_RETURN_IF_ERROR(
        ReadPieces(s, 0, s.elements(), pool, raws, buffer, [&](const float* x, uint64_t n, unsigned w, uint64_t at) {
          if (minmax)
            ScanRange(x, n, &parts[w]);
          else
            h.AddFirst(base + at, x, n, w, &parts[w]);
        }));
    h.Compact();
    base += s.elements();
  }
  TensorRange r;
  r.name = name;
  SampleRange all;
  for (const SampleRange& p : parts) all.Merge(p);
  if (!all.finite) return Status::InvalidInput(segs.front().file, "tensor '" + name + "' contains NaN or Inf");
  for (const Segment& s : segs) {
    r.samples += s.elements();
    r.batches += s.batches();
  }
  r.min = r.samples ? all.min : 0;
  r.max = r.samples ? all.max : 0;
  if (minmax) return FinishNvidia(std::move(r), all, nullptr, o, percentile, &pool);
  h.BeginSecond(all.abs_max);
  base = 0;
  for (const Segment& s : segs) {
    for (const auto& [begin, end] : h.Recount(base, s.elements()))
      LMKIT_RETURN_IF_ERROR(
          ReadPieces(s, begin - base, end - begin, pool, raws, buffer,
                     [&](const float* x, uint64_t n, unsigned w, uint64_t at) { h.AddSecond(base + at, x, n, w); }));
    base += s.elements();
  }
  const AbsHistogram hist = h.Finish();
  return FinishNvidia(std::move(r), all, &hist, o, percentile, &pool);
}

// ONNX Runtime's state for one tensor: histograms grown batch by batch in input order.
struct OrtState {
  explicit OrtState(uint32_t bins) : signed_h(bins), abs_h(bins) {}
  OrtSignedHistogram signed_h;
  OrtAbsHistogram abs_h;
  TensorRange r;
  bool first = true;
};

// Counts a batch the histogram took into the tensor's range, samples and batches.
void NoteOrtBatch(OrtState& st, const SampleRange& range, uint64_t be) {
  TensorRange& r = st.r;
  r.min = st.first ? range.min : std::min<double>(r.min, range.min);
  r.max = st.first ? range.max : std::max<double>(r.max, range.max);
  st.first = false;
  r.samples += be;
  ++r.batches;
}

// One batch whose range (and finiteness) `range` holds: the histogram's own AddBatch, binning in parallel.
Status OrtAddScanned(OrtState& st, const float* batch, uint64_t be, const SampleRange& range, const CalibrateRequest& o,
                     const std::string& file, const std::string& name, ThreadPool* pool) {
  if (be == 0) return Status::Ok();
  if (!range.finite) return Status::InvalidInput(file, "tensor '" + name + "' contains NaN or Inf");
  const bool added = o.method == CalibMethod::kEntropy      ? st.signed_h.AddBatch(batch, be, range, pool)
                     : o.method == CalibMethod::kPercentile ? st.abs_h.AddBatch(batch, be, range, pool)
                                                            : true;
  if (!added)
    return Status::InvalidInput(
        file, fmt::format("tensor '{}': batch {} (|x| up to {:g}) would grow the ort flavour's histogram past {} bins "
                          "or beyond the float range; use {} nvidia",
                          name, st.r.batches + 1, range.abs_max, OrtMaxBins(o.bins), Field("flavor")));
  NoteOrtBatch(st, range, be);
  return Status::Ok();
}

// The same for a batch in memory, in one pass when it fits the histogram's current range (AddIfWithinRange);
// otherwise with the range that pass measured. (The ort state only serves entropy and percentile.)
Status OrtAddBatch(OrtState& st, const float* batch, uint64_t be, const CalibrateRequest& o, const std::string& file,
                   const std::string& name, ThreadPool* pool) {
  if (be == 0) return Status::Ok();
  SampleRange range;
  const bool added = o.method == CalibMethod::kEntropy ? st.signed_h.AddIfWithinRange(batch, be, pool, &range)
                                                       : st.abs_h.AddIfWithinRange(batch, be, pool, &range);
  if (!added) return OrtAddScanned(st, batch, be, range, o, file, name, pool);
  NoteOrtBatch(st, range, be);
  return Status::Ok();
}

// Reads elements [first, first + count) of `s` into `out` and returns their range, each piece scanned while it is
// still in cache (one pass over memory instead of a read and then a scan).
Result<SampleRange> ReadScanned(const Segment& s, uint64_t first, uint64_t count, float* out, ThreadPool& pool,
                                std::vector<std::vector<uint8_t>>& raws) {
  std::vector<SampleRange> parts(pool.size());
  LMKIT_RETURN_IF_ERROR(ReadPieces(
      s, first, count, pool, raws, [&](size_t c, unsigned) { return out + c * kChunk; },
      [&](const float* piece, uint64_t m, unsigned w, uint64_t) { ScanRange(piece, m, &parts[w]); }));
  SampleRange r;
  for (const SampleRange& p : parts) r.Merge(p);
  return r;
}

TensorRange FinishOrt(OrtState& st, const CalibrateRequest& o, double percentile, ThreadPool* pool) {
  TensorRange& r = st.r;
  switch (o.method) {
    case CalibMethod::kEntropy: {
      auto [lo, hi] = OrtEntropyThreshold(st.signed_h, o.quantized_bins, pool);
      r.lo = lo;
      r.hi = hi;
      r.final_bins = st.signed_h.counts().size();
      break;
    }
    case CalibMethod::kPercentile: {
      auto [lo, hi] = OrtPercentileThreshold(st.abs_h, percentile);
      r.lo = lo;
      r.hi = hi;
      r.final_bins = st.abs_h.counts().size();
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

Result<TensorRange> CalibrateOrt(const std::string& name, const std::vector<Segment>& segs, const CalibrateRequest& o,
                                 double percentile, ThreadPool& pool) {
  OrtState st(o.bins);
  st.r.name = name;
  std::vector<float> batch;
  std::vector<std::vector<uint8_t>> raws(pool.size());
  for (const Segment& s : segs) {
    const uint64_t nb = s.batches(), be = s.batch_elements();
    batch.resize(be);
    for (uint64_t b = 0; b < nb; ++b) {
      LMKIT_ASSIGN_OR_RETURN(const SampleRange range, ReadScanned(s, b * be, be, batch.data(), pool, raws));
      LMKIT_RETURN_IF_ERROR(OrtAddScanned(st, batch.data(), be, range, o, s.file, name, &pool));
    }
  }
  return FinishOrt(st, o, percentile, &pool);
}

// The option checks shared by file and streaming calibration; returns the percentile to use.
Result<double> CheckOptions(const CalibrateRequest& o) {
  if (o.method == CalibMethod::kMse && o.flavor == CalibFlavor::kOrt)
    return Status::InvalidArgument(Field("method") +
                                   " mse exists only in the nvidia flavour (ONNX Runtime has no MSE calibrator)");
  // A percentile given to another method was accepted and changed nothing.
  if (o.percentile && o.method != CalibMethod::kPercentile)
    return Status::InvalidArgument(Field("percentile") + " applies to " + Field("method") + " percentile only");
  const double percentile = o.percentile.value_or(o.flavor == CalibFlavor::kNvidia ? 99.99 : 99.999);
  if (!(percentile > 0 && percentile <= 100))
    return Status::InvalidArgument(Field("percentile") + " must be in (0, 100]");
  if (o.method != CalibMethod::kMinMax && o.bins < 2)
    return Status::InvalidArgument(Field("bins") + " must be at least 2");
  if (o.method == CalibMethod::kEntropy && o.bins < o.quantized_bins)
    return Status::InvalidArgument(
        fmt::format("{} must be at least {} for the entropy method", Field("bins"), o.quantized_bins));
  if (o.survey && o.flavor == CalibFlavor::kOrt && o.method != CalibMethod::kMinMax)
    return Status::InvalidArgument(
        Field("survey") + " draws the nvidia flavour's |x| histogram; the ort flavour builds other histograms");
  if (o.survey && o.bins < 2) return Status::InvalidArgument(Field("bins") + " must be at least 2");
  return percentile;
}

constexpr std::array<CalibMethodInfo, 4> kMethods = {{
    {CalibMethod::kMinMax, "minmax", "amax = max|x| over all samples"},
    {CalibMethod::kPercentile, "percentile", "the |x| below which a percentile of the samples lie"},
    {CalibMethod::kEntropy, "entropy", "the threshold minimising the KL divergence of the quantized histogram"},
    {CalibMethod::kMse, "mse", "the threshold minimising the quantization MSE over the histogram (nvidia only)"},
}};
constexpr std::array<CalibFlavorInfo, 2> kFlavors = {{
    {CalibFlavor::kNvidia, "nvidia", "one |x| histogram over the global max; batch-order independent"},
    {CalibFlavor::kOrt, "ort", "ONNX Runtime's histograms grown batch by batch"},
}};

}  // namespace

std::span<const CalibMethodInfo> CalibMethods() { return kMethods; }
std::span<const CalibFlavorInfo> CalibFlavors() { return kFlavors; }

Status CheckCalibrationOutputs(const std::vector<std::string>& inputs, const CalibrateRequest& o) {
  LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput(inputs, o.output, "output"));
  LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput(inputs, o.trt_cache, "trt_cache"));
  std::vector<std::pair<std::string, std::string>> outputs = {{"output", o.output}, {"trt_cache", o.trt_cache}};
  for (const CalibrateRequest::ExtraOutput& e : o.extra_outputs) {
    if (e.field.empty()) continue;
    LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput(inputs, e.path, e.field));
    outputs.emplace_back(e.field, e.path);
  }
  return CheckDistinctOutputs(outputs);
}

Result<CalibMethod> ParseCalibMethod(std::string_view s) {
  return ParseName(kMethods, &CalibMethodInfo::method, s, "method", UnknownName::kNot);
}

Result<CalibFlavor> ParseCalibFlavor(std::string_view s) {
  return ParseName(kFlavors, &CalibFlavorInfo::flavor, s, "flavor", UnknownName::kNot);
}

const char* CalibMethodName(CalibMethod m) { return EntryOf(kMethods, &CalibMethodInfo::method, m).name.data(); }

const char* CalibFlavorName(CalibFlavor f) { return EntryOf(kFlavors, &CalibFlavorInfo::flavor, f).name.data(); }

void AddCalibrationWarnings(CalibrationTable* t) {
  for (const TensorRange& r : t->tensors)
    if (r.amax == 0)
      t->warnings.push_back(
          "tensor '" + r.name + "': amax 0 (" +
          (r.max == 0 && r.min == 0 ? std::string("every sample is 0") : std::string("the method's threshold is 0")) +
          "); a quantized layer cannot take an input_scale of 0 from it");
}

struct CalibrationOutputs::Files {
  std::optional<AtomicFile> json, trt;
  std::vector<std::pair<AtomicFile, size_t>> extra;  // with its index in extra_outputs
};
CalibrationOutputs::CalibrationOutputs() = default;
CalibrationOutputs::CalibrationOutputs(CalibrationOutputs&&) noexcept = default;
CalibrationOutputs& CalibrationOutputs::operator=(CalibrationOutputs&&) noexcept = default;
CalibrationOutputs::~CalibrationOutputs() = default;

Result<CalibrationOutputs> CalibrationOutputs::Open(const CalibrateRequest& o) {
  CalibrationOutputs out;
  out.f_ = std::make_unique<Files>();
  if (!o.output.empty()) {
    LMKIT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(o.output));
    out.f_->json = std::move(f);
  }
  if (!o.trt_cache.empty()) {
    LMKIT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(o.trt_cache));
    out.f_->trt = std::move(f);
  }
  for (size_t i = 0; i < o.extra_outputs.size(); ++i) {
    if (o.extra_outputs[i].path.empty()) continue;
    LMKIT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(o.extra_outputs[i].path));
    out.f_->extra.emplace_back(std::move(f), i);
  }
  return out;
}

Status CalibrationOutputs::Commit(const CalibrationTable& table, const RenderCalibrationOutput& render) {
  if (!f_) return Status::Ok();
  // The secondary outputs are renamed into place first: if one fails, CALIB.json is not replaced.
  if (f_->json) LMKIT_RETURN_IF_ERROR(f_->json->Write(DumpJson(CalibrationToJson(table)) + "\n"));
  if (f_->trt) {
    LMKIT_RETURN_IF_ERROR(f_->trt->Write(TrtCacheText(table)));
    LMKIT_RETURN_IF_ERROR(f_->trt->Commit());
  }
  for (auto& [file, index] : f_->extra) {
    LMKIT_RETURN_IF_ERROR(file.Write(render ? render(table, index) : std::string()));
    LMKIT_RETURN_IF_ERROR(file.Commit());
  }
  if (f_->json) LMKIT_RETURN_IF_ERROR(f_->json->Commit());
  return Status::Ok();
}

Result<CalibrationTable> Calibrate(const CalibrateRequest& o, ProgressSink* progress,
                                   const RenderCalibrationOutput& render) {
  LMKIT_RETURN_IF_ERROR(CheckCalibrationOutputs(o.inputs, o));
  if (o.inputs.empty()) return Status::InvalidArgument("no activation files given");
  LMKIT_ASSIGN_OR_RETURN(const double percentile, CheckOptions(o));
  const double t0 = MonotonicSeconds();
  LMKIT_ASSIGN_OR_RETURN(CalibrationOutputs outputs, CalibrationOutputs::Open(o));
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
                                ? CalibrateOrt(name, segs, o, percentile, pool)
                                : CalibrateNvidia(name, segs, o, percentile, pool);
    if (!r.ok()) return r.status();
    // A tensor with no elements used to get "amax 0, samples 0": a range measured from nothing, which a w8a8 quantize
    // turns into input_scale 0 (every activation of the layer coded as 0).
    if (r->samples == 0)
      return Status::InvalidInput(segs.front().file, "tensor '" + name + "' has no elements to calibrate from");
    table.tensors.push_back(std::move(*r));
    if (progress) progress->Update(++done);
  }
  if (progress) progress->Finish();
  AddCalibrationWarnings(&table);
  table.seconds = MonotonicSeconds() - t0;
  table.peak_rss_bytes = PeakRssBytes();
  LMKIT_RETURN_IF_ERROR(outputs.Commit(table, render));
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
  std::string out =
      t.method == CalibMethod::kEntropy ? "TRT-8601-EntropyCalibration2\n" : "TRT-8601-MinMaxCalibration\n";
  for (const TensorRange& r : t.tensors) out += r.name + ": " + TrtScaleHex(r.amax) + "\n";
  return out;
}

struct StreamingCalibrator::State {
  CalibrateRequest o;
  double percentile = 0;
  std::string source;
  std::vector<std::string> names;
  int pass = -1;
  std::unique_ptr<ThreadPool> pool;  // o.threads
  std::vector<SampleRange> scans;    // nvidia, pass 0
  std::vector<uint64_t> samples, batches;
  // nvidia except minmax: the |x| histogram per tensor, counted in pass 0 where the running max allows and finished
  // in pass 1 (integer counts: the same table for any thread count); offsets[tensor] is the pass's stream position.
  std::vector<SpeculativeAbsHistogram> hists;
  std::vector<uint64_t> offsets;
  std::vector<OrtState> ort;
  double t0 = 0;
  bool Ort() const { return o.flavor == CalibFlavor::kOrt && o.method != CalibMethod::kMinMax; }
};

StreamingCalibrator::StreamingCalibrator() = default;
StreamingCalibrator::StreamingCalibrator(StreamingCalibrator&&) noexcept = default;
StreamingCalibrator& StreamingCalibrator::operator=(StreamingCalibrator&&) noexcept = default;
StreamingCalibrator::~StreamingCalibrator() = default;

Result<StreamingCalibrator> StreamingCalibrator::Create(const CalibrateRequest& o, std::vector<std::string> names,
                                                        std::string source) {
  LMKIT_ASSIGN_OR_RETURN(const double percentile, CheckOptions(o));
  StreamingCalibrator c;
  c.s_ = std::make_unique<State>();
  State& s = *c.s_;
  s.o = o;
  s.percentile = percentile;
  s.source = std::move(source);
  s.names = std::move(names);
  s.scans.resize(s.names.size());
  s.samples.assign(s.names.size(), 0);
  s.batches.assign(s.names.size(), 0);
  s.pool = std::make_unique<ThreadPool>(std::max(1u, o.threads));
  if (s.Ort())
    for (size_t i = 0; i < s.names.size(); ++i) s.ort.emplace_back(o.bins);
  else if (!ScanOnly(o))
    for (size_t i = 0; i < s.names.size(); ++i) s.hists.emplace_back(o.bins, s.pool->size());
  s.offsets.assign(s.names.size(), 0);
  s.t0 = MonotonicSeconds();
  return c;
}

int StreamingCalibrator::passes() const { return s_->Ort() || ScanOnly(s_->o) ? 1 : 2; }

Status StreamingCalibrator::BeginPass(int pass) {
  State& s = *s_;
  if (pass != s.pass + 1 || pass >= passes()) return Status::InvalidArgument("calibration passes must run in order");
  s.pass = pass;
  if (pass == 1) {
    for (size_t i = 0; i < s.names.size(); ++i) {
      if (!s.scans[i].finite) return Status::InvalidInput(s.source, "tensor '" + s.names[i] + "' contains NaN or Inf");
      s.hists[i].BeginSecond(s.scans[i].abs_max);
    }
    s.offsets.assign(s.names.size(), 0);
  }
  return Status::Ok();
}

Status StreamingCalibrator::Add(size_t tensor, const float* x, uint64_t n) {
  State& s = *s_;
  if (tensor >= s.names.size() || s.pass < 0)
    return Status::InvalidArgument("calibration input out of range or before a pass");
  if (s.Ort()) return OrtAddBatch(s.ort[tensor], x, n, s.o, s.source, s.names[tensor], s.pool.get());
  // The batch goes in chunks (chunk c is stream samples offset + c * kChunk on: the unit pass 1 may have to recount),
  // split among the workers when there are several chunks and workers; each worker counts into its own histogram.
  const uint64_t chunks = (n + kChunk - 1) / kChunk;
  const uint64_t offset = s.offsets[tensor];
  s.offsets[tensor] += n;
  auto each_chunk = [&](auto&& fn) {
    auto one = [&](size_t c, unsigned w) {
      fn(x + c * kChunk, std::min(kChunk, n - c * kChunk), offset + c * kChunk, w);
    };
    if (s.pool->size() > 1 && chunks > 1)
      s.pool->ParallelFor(chunks, one);
    else
      for (uint64_t c = 0; c < chunks; ++c) one(c, 0);
  };
  if (s.pass == 0) {
    s.samples[tensor] += n;
    ++s.batches[tensor];
    if (ScanOnly(s.o)) {
      s.scans[tensor].Merge(ScanSamples(x, n, s.pool.get()));
      return Status::Ok();
    }
    std::vector<SampleRange> parts(s.pool->size());
    SpeculativeAbsHistogram& h = s.hists[tensor];
    each_chunk([&](const float* p, uint64_t m, uint64_t at, unsigned w) { h.AddFirst(at, p, m, w, &parts[w]); });
    h.Compact();
    for (const SampleRange& r : parts) s.scans[tensor].Merge(r);
  } else {
    SpeculativeAbsHistogram& h = s.hists[tensor];
    if (h.Covered(offset, n)) return Status::Ok();  // pass 0 counted all of it under the final max
    each_chunk([&](const float* p, uint64_t m, uint64_t at, unsigned w) { h.AddSecond(at, p, m, w); });
  }
  return Status::Ok();
}

Result<CalibrationTable> StreamingCalibrator::Finish() {
  State& s = *s_;
  if (s.pass != passes() - 1) return Status::InvalidArgument("calibration finished before its last pass");
  CalibrationTable table;
  table.method = s.o.method;
  table.flavor = s.o.flavor;
  table.percentile = s.o.method == CalibMethod::kPercentile ? s.percentile : 0;
  table.bins = s.o.method == CalibMethod::kMinMax ? 0 : s.o.bins;
  for (size_t i = 0; i < s.names.size(); ++i) {
    if (s.Ort()) {
      s.ort[i].r.name = s.names[i];
      table.tensors.push_back(FinishOrt(s.ort[i], s.o, s.percentile, s.pool.get()));
      table.bytes_read += s.ort[i].r.samples * sizeof(float);
      continue;
    }
    const SampleRange& all = s.scans[i];
    if (!all.finite) return Status::InvalidInput(s.source, "tensor '" + s.names[i] + "' contains NaN or Inf");
    TensorRange r;
    r.name = s.names[i];
    r.samples = s.samples[i];
    r.batches = s.batches[i];
    r.min = r.samples ? all.min : 0;
    r.max = r.samples ? all.max : 0;
    table.bytes_read += r.samples * sizeof(float);
    std::optional<AbsHistogram> h;
    if (!ScanOnly(s.o)) h = s.hists[i].Finish();
    table.tensors.push_back(FinishNvidia(std::move(r), all, h ? &*h : nullptr, s.o, s.percentile, s.pool.get()));
  }
  table.seconds = MonotonicSeconds() - s.t0;
  table.peak_rss_bytes = PeakRssBytes();
  return table;
}

}  // namespace lmkit::quant
