// `lmkit quantize`: weight quantization of a safetensors checkpoint into compressed-tensors (pack-quantized INT8,
// int-quantized INT8 with activations, float-quantized FP8) or into one llama.cpp GGUF file (Q8_0).
//
// Input: a .safetensors file, or a Hugging Face model directory (config.json plus model.safetensors or sharded
// model-*.safetensors with model.safetensors.index.json). Selection (docs/quant.md): a tensor is quantized when it is
// a 2-D F32/F16/BF16 "*.weight" and (with `include` patterns) matches one of them, or (without) is not an embedding,
// norm or lm_head; then any `exclude` match removes it. The tensors each scheme writes are in docs/quant.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/quant/granularity.h"
#include "lmkit/quant/metrics.h"
#include "lmkit/quant/scheme.h"

namespace lmkit::quant {

struct QuantizeReport;

// The request. Field names are what errors name (Field()).
struct QuantizeOptions {
  std::string input;
  std::string output;  // a file for a file input or for gguf-q8_0; a directory for a directory input
  QuantScheme scheme = QuantScheme::kW8A16;
  Granularity granularity;
  std::string calibration;           // CALIB.json: static input scales (w8a8: optional; fp8-static: required)
  std::vector<std::string> include;  // ECMAScript regexes, searched anywhere in the tensor name
  std::vector<std::string> exclude;
  QuantFormat format = QuantFormat::kCompressedTensors;
  bool split_fused = false;  // write a checkpoint that quantizes only part of a group vLLM fuses (q/k/v, gate/up)
  unsigned threads = 1;
  // Further outputs rendered from the finished report (the CLI's --report JSON and --svg chart, present/quant*.h):
  // opened before any work, written and renamed into place before the checkpoint, so the checkpoint is not replaced
  // when one of them fails.
  struct ExtraOutput {
    std::string path;
    std::function<std::string(const QuantizeReport&)> render;
  };
  std::vector<ExtraOutput> extra_outputs;
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
  // One line each: what a named loader will not do with this output (loader_rules.h), request fields as Field().
  std::vector<std::string> warnings;
  double GbPerSecond() const { return seconds > 0 ? (bytes_before + bytes_after) / seconds / 1e9 : 0; }
};

// Quantizes as requested and writes every output (the checkpoint, its config and index, the other files of an input
// directory, the report) or none: all are staged and renamed into place at the end, secondaries first. Peak memory
// is about the largest tensor's codes plus per-thread buffers, not the checkpoint. Same bytes for any thread count.
// Errors: kInvalidArgument (an inconsistent request, or a combination no loader serves, loader_rules.h),
// kNotFound/kIo (files), kInvalidInput naming the file and tensor (NaN/Inf, a weight whose dequantized value would
// overflow, a malformed index, config or calibration table).
Result<QuantizeReport> Quantize(const QuantizeOptions& options, ProgressSink* progress);

}  // namespace lmkit::quant
