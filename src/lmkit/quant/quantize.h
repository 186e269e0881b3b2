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
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/io/token_dtype.h"
#include "lmkit/quant/granularity.h"
#include "lmkit/quant/metrics.h"
#include "lmkit/quant/scheme.h"

namespace lmkit::quant {

struct QuantizeResult;

// The request. Field names are what errors name (Field()).
struct QuantizeRequest {
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
  // Calibrated quantization (GPTQ, SmoothQuant): the model (a Llama-family directory) runs over `calibration_tokens`
  // in windows of `seq_len` tokens (0: min(max_position_embeddings, 512)), the first `samples` of them (0: all).
  QuantMethod method = QuantMethod::kRtn;
  std::optional<double> smoothquant_alpha;  // SmoothQuant's migration strength in [0, 1]
  bool smoothquant_auto = false;  // pick it from SmoothQuantAlphas() by KL(float || quantized) on held-out windows
  std::string calibration_tokens;
  io::TokenDtype tokens_dtype = io::TokenDtype::kU16;  // for a headerless .bin token file
  std::string calibration_label;  // what the report names as the tokens (empty: calibration_tokens)
  uint64_t samples = 0;
  uint32_t seq_len = 0;
  double dampening = 0.01;  // GPTQ: fraction of mean(diag H) added to the diagonal
  // GPTQ: columns in descending diag H, scales of the original groups (llm-compressor 0.14's default, "static").
  bool act_order = true;
  // Sequential (quant/calibrated.h): layer by layer, each on the outputs of the layers quantized before it, with one
  // layer's weights in memory; false: one pass of the whole float model collects every statistic (all in memory).
  bool sequential = true;
  // Sequential: keep the finished layers' tensors in memory instead of a scratch file (the same output bytes).
  bool keep_in_memory = false;
  // Further outputs rendered from the finished report by the caller's RenderQuantizeOutput (the CLI's --report JSON
  // and --svg chart, present/quant*.h): opened before any work, written and renamed into place before the checkpoint,
  // so the checkpoint is not replaced when one of them fails.
  struct ExtraOutput {
    std::string path;
    std::string field;  // the request field that named `path`, for errors ("" = not checked against the inputs)
  };
  std::vector<ExtraOutput> extra_outputs;
};

// The contents of QuantizeRequest::extra_outputs[index], rendered from the finished report: front-end code
// (present/), which the core does not call. Without one, each extra output is written empty.
using RenderQuantizeOutput = std::function<std::string(const QuantizeResult& report, size_t index)>;

struct TensorReport {
  std::string name;  // the original weight's name
  std::vector<uint64_t> shape;
  std::string dtype;
  float scale_min = 0;
  float scale_max = 0;
  ErrorStats stats;  // against the weights as written before quantization (smoothed, with SmoothQuant)
  // GPTQ: ||(W - Ŵ) X||^2 / ||W X||^2 on the calibration inputs for GPTQ's codes and for round-to-nearest's.
  std::optional<double> gptq_error, rtn_error;
  uint64_t dead_columns = 0;     // GPTQ: input channels no calibration token reached
  bool cholesky_failed = false;  // GPTQ fell back to round-to-nearest
};

// One norm SmoothQuant folded scales into, and the spread of those scales.
struct SmoothReport {
  std::string norm;                   // e.g. "model.layers.0.input_layernorm"
  std::vector<std::string> balanced;  // the Linear modules multiplied by the scales
  float scale_min = 0, scale_max = 0;
  float activation_range_max = 0;  // the largest per-channel max - min of the norm's output
};

struct AlphaTrial {
  double alpha = 0;
  double mean_kl = 0, top1_agreement = 0;
};

// What the calibration run did.
struct CalibrationRunReport {
  std::string tokens;
  uint64_t samples = 0, held_out = 0;  // windows calibrated on; windows kept for the alpha sweep
  uint32_t seq_len = 0;
  double seconds = 0;
};

struct QuantizeResult {
  std::string input, output;
  std::string scheme, granularity, format;
  std::vector<TensorReport> tensors;  // quantized tensors, in input order
  std::string method = "rtn";
  std::optional<CalibrationRunReport> calibration_run;
  std::optional<double> smoothquant_alpha;
  std::vector<AlphaTrial> alpha_sweep;  // --smoothquant auto: every alpha tried, in order
  std::vector<SmoothReport> smoothquant;
  // What SmoothQuant's mapping leaves unsmoothed in this model and why (quant/smooth_mapping.h), one line each.
  std::vector<std::string> smoothquant_unsmoothed;
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
// With method kGptq or a SmoothQuant alpha, the model first runs over the calibration tokens once (quant/calibrated.h);
// those need a model directory, the compressed-tensors format and an int scheme (GPTQ) or any compressed-tensors scheme
// (SmoothQuant), else kInvalidArgument. The smoothed norms are written in place of the originals.
Result<QuantizeResult> Quantize(const QuantizeRequest& options, ProgressSink* progress,
                                const RenderQuantizeOutput& render = {});

// The alphas --smoothquant auto tries.
std::span<const double> SmoothQuantAlphas();

}  // namespace lmkit::quant
