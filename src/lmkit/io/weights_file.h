// What a model file holds when lmkit cannot derive the model from a config: its weight tensors (names, shapes, bytes)
// from a safetensors file or checkpoint directory, an ONNX model's initializers, or a GGUF file's tensor table.
//
// Contract: every reader validates before returning and never reads outside its input; errors are kInvalidInput with
// the file as subject and a one-line message naming the defect (the tensor, the byte offset). Bytes are what the
// tensors take stored (block-quantized GGUF types at their block size, 4-bit ONNX types packed two per byte).
// ONNX: the initializers of the main graph (ModelProto.graph.initializer; external data counted by its dims, subgraphs
// of control-flow nodes not read); GGUF versions 2 and 3. The wire formats: docs/plan.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit::io {

struct WeightTensor {
  std::string name;
  std::string dtype;  // the format's own name: "BF16", "Q4_K", "FLOAT16"
  std::vector<uint64_t> shape;
  uint64_t elements = 0;
  uint64_t bytes = 0;
};

struct WeightsSummary {
  std::string path;
  std::string format;  // "safetensors", "safetensors (sharded)", "onnx", "gguf"
  std::vector<WeightTensor> tensors;
  uint64_t parameters = 0;  // sum of elements
  uint64_t bytes = 0;       // sum of bytes
};

enum class ModelFileKind { kConfig, kWeights, kNeither };
// What `path` (which exists) holds, from its first bytes and name: a config (a directory with config.json, or a file
// starting with '{'), weights (a directory with model.safetensors, its index, or one .gguf / .onnx file; a file with
// the safetensors header, the GGUF magic, or named .onnx / .safetensors / .gguf), or neither. *why explains kNeither.
ModelFileKind ClassifyModelFile(const std::string& path, std::string* why);

// Reads the weights at `path` (any of the above). Errors: the format reader's, kNotFound / kIo from opening.
Result<WeightsSummary> ReadWeights(const std::string& path);

// The tensor table of a GGUF image / the initializers of an ONNX ModelProto image (fuzz entry points).
Result<WeightsSummary> ParseGguf(std::span<const uint8_t> file, const std::string& subject);
Result<WeightsSummary> ParseOnnx(std::span<const uint8_t> file, const std::string& subject);

}  // namespace lmkit::io
