// `lmkit calibrate`: per-tensor activation ranges from sample activations in .npy / .safetensors files, written as
// CALIB.json (and a TensorRT calibration cache).
//
// Flavours (docs/quant.md): nvidia: one |x| histogram of `bins` over [0, max|x| of all samples], independent of batch
// order/size; the first read counts under the running max|x| and the second reads only what that got wrong (the same
// counts as two full passes); parallel over chunks, deterministic. ort: ONNX Runtime's histograms grown batch by batch
// in input order (signed for entropy, |x| for percentile). minmax ignores the flavour (amax = max|x|).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/json.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"

namespace lmkit::quant {

enum class CalibMethod : uint8_t { kMinMax, kPercentile, kEntropy, kMse };
enum class CalibFlavor : uint8_t { kNvidia, kOrt };

// The name tables behind parsing, --help and the outputs.
struct CalibMethodInfo {
  CalibMethod method;
  std::string_view name;
  std::string_view summary;
};
struct CalibFlavorInfo {
  CalibFlavor flavor;
  std::string_view name;
  std::string_view summary;
};
std::span<const CalibMethodInfo> CalibMethods();
std::span<const CalibFlavorInfo> CalibFlavors();
// kInvalidArgument naming Field("method") / Field("flavor") for a name not in the table.
Result<CalibMethod> ParseCalibMethod(std::string_view s);
Result<CalibFlavor> ParseCalibFlavor(std::string_view s);
const char* CalibMethodName(CalibMethod m);
const char* CalibFlavorName(CalibFlavor f);

struct CalibrationTable;

struct CalibrateRequest {
  std::vector<std::string> inputs;
  CalibMethod method = CalibMethod::kEntropy;
  CalibFlavor flavor = CalibFlavor::kNvidia;
  std::optional<double> percentile;  // default: 99.99 (nvidia), 99.999 (ort)
  uint32_t bins = 2048;
  uint32_t quantized_bins = 128;  // entropy: 2^(bits-1) target levels
  unsigned threads = 1;
  // Also keep each tensor's |x| histogram and every method's threshold on it (TensorRange::survey), for the chart of
  // `calibrate --svg`. The nvidia flavour's histogram (built for minmax too); with the ort flavour (except minmax) it
  // is kInvalidArgument naming the field.
  bool survey = false;
  // Outputs: CALIB.json (`output`) and a TensorRT cache (`trt_cache`), each skipped when empty. Both are opened before
  // the work and renamed into place after it, the cache first, so a failure leaves neither replaced.
  std::string output;
  std::string trt_cache;
  // Further outputs rendered from the finished table by the caller's RenderCalibrationOutput (the chart of
  // `calibrate --svg`, present/quant_svg.h): opened with the others and renamed into place before CALIB.json.
  struct ExtraOutput {
    std::string path;
    std::string field;  // the request field that named `path`, for errors ("" = not checked against the inputs)
  };
  std::vector<ExtraOutput> extra_outputs;
};

// The contents of CalibrateRequest::extra_outputs[index], rendered from the finished table: front-end code
// (present/), which the core does not call. Without one, each extra output is written empty.
using RenderCalibrationOutput = std::function<std::string(const CalibrationTable& table, size_t index)>;

// The outputs of `o` (output, trt_cache, the named extra outputs) must not replace one of `inputs` and must be
// distinct files: kInvalidArgument naming the fields. Calibrate and model::CalibrateModel run it first.
Status CheckCalibrationOutputs(const std::vector<std::string>& inputs, const CalibrateRequest& o);

// Every method's threshold on one tensor's |x| histogram (the nvidia flavour's): what the chart of a calibration
// marks. Thresholds as the methods compute them (minmax = max|x|), with the options' percentile and bins.
struct ThresholdSurvey {
  std::vector<uint64_t> counts;  // |x| histogram: counts.size() bins of equal width over [0, abs_max]; empty = none
  double abs_max = 0;
  double percentile = 0;  // the percentile the percentile threshold is for
  double minmax = 0, percentile_amax = 0, entropy = 0, mse = 0;
};

struct TensorRange {
  std::string name;
  double amax = 0;          // symmetric threshold: max(|lo|, |hi|)
  double lo = 0, hi = 0;    // the method's (possibly asymmetric) range; (-amax, amax) for symmetric methods
  double min = 0, max = 0;  // of the data
  uint64_t samples = 0;
  uint64_t batches = 0;
  uint64_t final_bins = 0;  // histogram size at the end (grows in the ort flavour); 0 for minmax
  ThresholdSurvey survey;   // with CalibrateRequest::survey
};

struct CalibrationTable {
  CalibMethod method = CalibMethod::kEntropy;
  CalibFlavor flavor = CalibFlavor::kNvidia;
  double percentile = 0;  // used value (percentile method only)
  uint32_t bins = 0;
  std::vector<TensorRange> tensors;
  double seconds = 0;
  uint64_t bytes_read = 0;
  uint64_t peak_rss_bytes = 0;
  // One line each, e.g. a tensor whose amax is 0 (`lmkit quantize` refuses to turn it into an input_scale).
  std::vector<std::string> warnings;
};

// Reads every input (.npy: one tensor named after the file's stem; .safetensors: every tensor by name), groups
// tensors by name across files (first appearance fixes the output order) and streams each tensor's data in file order.
// A "batch" is one slice along the first dimension (a 1-D tensor is one batch). Memory is bounded by the histogram
// size plus one batch converted to fp32 (ort flavour) or 32k-element chunks per thread (nvidia flavour), never by
// the number of samples. Writes options.output / options.trt_cache. Errors: kInvalidArgument for inconsistent options
// (mse with ort, percentile outside (0, 100] or given to another method, bins < 128 for entropy), kInvalidInput for a
// non-float tensor, NaN/Inf or no inputs, kNotFound/kIo from opening or writing. Thread-safe; the result is the same
// for any thread count.
Result<CalibrationTable> Calibrate(const CalibrateRequest& options, ProgressSink* progress,
                                   const RenderCalibrationOutput& render = {});

// Appends a warning for every tensor whose amax is 0 (an input_scale of 0 would code every activation of its layer as
// 0, so `lmkit quantize` refuses it; the table keeps what the data say). Calibrate calls it; so do callers that build a
// table from StreamingCalibrator.
void AddCalibrationWarnings(CalibrationTable* table);

// The outputs of a calibration (CALIB.json and the TensorRT cache), for callers that compute the table themselves
// (`lmkit calibrate --model`): Open before the work (an unwritable path fails early), Commit the finished table (the
// secondary outputs first, then CALIB.json; CALIB.json is not replaced when one of them fails). Empty paths are
// skipped.
class CalibrationOutputs {
 public:
  // options.output, options.trt_cache and options.extra_outputs.
  static Result<CalibrationOutputs> Open(const CalibrateRequest& options);
  CalibrationOutputs();
  CalibrationOutputs(CalibrationOutputs&&) noexcept;
  CalibrationOutputs& operator=(CalibrationOutputs&&) noexcept;
  ~CalibrationOutputs();
  Status Commit(const CalibrationTable& table, const RenderCalibrationOutput& render = {});

 private:
  struct Files;
  std::unique_ptr<Files> f_;
};

// Calibration of tensors produced in memory (`lmkit calibrate --model`: the inputs of a model's Linear layers during
// its forward pass), through exactly the histograms and threshold selection Calibrate uses, so the table is the one
// Calibrate would give for files holding the same batches in the same order. The nvidia flavour (except minmax) needs
// the data twice: pass 0 finds min/max/max|x| and counts under the running max|x|, pass 1 recounts the batches (or
// parts) that were counted under a smaller one and returns at once for the rest; minmax and ort need one pass. The
// caller feeds every pass with the same batches: BeginPass(p) for p in [0, passes()), then Add(tensor, x, n) per batch
// (n floats; one Add = one batch). Memory is the histograms only. Errors: kInvalidArgument from the options (as
// Calibrate), an index out of range, calls out of order; kInvalidInput for NaN/Inf (subject = `source`). Not
// thread-safe.
class StreamingCalibrator {
 public:
  static Result<StreamingCalibrator> Create(const CalibrateRequest& options, std::vector<std::string> names,
                                            std::string source);
  StreamingCalibrator();
  StreamingCalibrator(StreamingCalibrator&&) noexcept;
  StreamingCalibrator& operator=(StreamingCalibrator&&) noexcept;
  ~StreamingCalibrator();

  int passes() const;
  Status BeginPass(int pass);
  Status Add(size_t tensor, const float* x, uint64_t n);
  Result<CalibrationTable> Finish();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The CALIB.json document: {"format": "lmkit-calibration", "version": 1, "method", "flavor", "bins", ["percentile"],
// "tensors": {name: {"amax", "range": [lo, hi], "min", "max", "samples", "batches", "bins", "scale_127"}}}.
Json CalibrationToJson(const CalibrationTable& table);
// name -> amax from a CALIB.json (kInvalidInput naming `subject` when malformed).
Result<std::map<std::string, double>> ParseCalibrationAmax(const std::string& text, const std::string& subject);

// TensorRT calibration cache: "TRT-8601-EntropyCalibration2" (entropy) or "TRT-8601-MinMaxCalibration" (others), then
// "<name>: <hex>" per tensor with the big-endian IEEE-754 bits of float(amax / 127) as 8 lowercase hex digits.
std::string TrtCacheText(const CalibrationTable& table);
std::string TrtScaleHex(double amax);

}  // namespace lmkit::quant
