// `lmkit quantize`: INT8 weight quantization of a safetensors checkpoint into compressed-tensors "int-quantized" form.
//
// Contract: Quantize reads INPUT (a .safetensors file, or a Hugging Face model directory: config.json plus
// model.safetensors or sharded model-*.safetensors with model.safetensors.index.json) and writes OUTPUT (a file for a
// file input; a directory for a directory input, with the same shard names, a rewritten index, config.json with
// "quantization_config", and every other regular file copied). Selection (docs/quant.md): a tensor is quantized when it
// is a 2-D F32/F16/BF16 "*.weight" and (with --include patterns) matches one of them, or (without) is not an embedding,
// norm or lm_head; then any --exclude match removes it. For a quantized `m.weight`: `m.weight` I8 [out, in],
// `m.weight_scale` in the weight's dtype ([out, 1] / [1] / [out, in/G]), and for static w8a8 `m.input_scale` [1] =
// amax / 127.5 from the calibration table (key `m` or `m.input`). Everything else is copied byte for byte.
// Streaming: one tensor at a time; input pages are dropped from the process (madvise DONTNEED) after use, so peak RSS
// is about the largest tensor's codes + one fp32 row per thread, not the checkpoint. Every output file goes through
// AtomicFile (nothing is left at the destination on error). Errors: kInvalidArgument (options), kNotFound/kIo (files),
// kInvalidInput naming the file and tensor (e.g. NaN/Inf in a weight, malformed index or calibration).
// Deterministic: same bytes for any thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/json.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/quant/metrics.h"
#include "lmkit/quant/quantizer.h"

namespace lmkit::quant {

enum class QuantScheme : uint8_t { kW8A16, kW8A8 };
enum class QuantFormat : uint8_t { kCompressedTensors, kGgufQ8_0 };

Result<QuantScheme> ParseQuantScheme(const std::string& s);  // w8a16 | w8a8
Result<QuantFormat> ParseQuantFormat(const std::string& s);  // compressed-tensors | gguf-q8_0

struct QuantizeOptions {
  std::string input;
  std::string output;
  QuantScheme scheme = QuantScheme::kW8A16;
  Granularity granularity;
  std::string calibration;           // CALIB.json for static w8a8; empty = dynamic per-token activations
  std::vector<std::string> include;  // ECMAScript regexes, searched anywhere in the tensor name
  std::vector<std::string> exclude;
  QuantFormat format = QuantFormat::kCompressedTensors;
  unsigned threads = 1;
};

struct TensorReport {
  std::string name;  // the original weight's name
  std::vector<uint64_t> shape;
  std::string dtype;
  float scale_min = 0;
  float scale_max = 0;
  ErrorStats stats;
};

struct QuantizeReport {
  std::string input, output;
  std::string scheme, granularity, format;
  std::vector<TensorReport> tensors;  // quantized tensors, in input order
  uint64_t tensors_copied = 0;
  uint64_t params_quantized = 0;
  uint64_t bytes_before = 0;  // tensor data read
  uint64_t bytes_after = 0;   // tensor data written
  double seconds = 0;
  uint64_t peak_rss_bytes = 0;
  ErrorStats total;  // over all quantized tensors
  // Selected weights stored unquantized because the format cannot take them (GGUF Q8_0: rows not a multiple of 32
  // long); always empty for compressed-tensors.
  std::vector<std::string> kept_unquantized;
  double GbPerSecond() const { return seconds > 0 ? (bytes_before + bytes_after) / seconds / 1e9 : 0; }
};

Result<QuantizeReport> Quantize(const QuantizeOptions& options, ProgressSink* progress);

// The "quantization_config" object written into config.json.
Json QuantizationConfig(const QuantizeOptions& options, const std::vector<std::string>& ignore);

// The report as JSON (--json / --report) and as a text table.
Json QuantizeReportToJson(const QuantizeReport& report);
std::string QuantizeReportToText(const QuantizeReport& report);

}  // namespace lmkit::quant
