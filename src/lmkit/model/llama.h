// A Llama-family causal LM (RMSNorm, RoPE in Hugging Face's rotate-half order, grouped-query attention, SwiGLU, tied or
// untied head) loaded from a Hugging Face checkpoint, with a multithreaded fp32 CPU forward pass and a KV cache.
//
// Loading contract: LlamaModel::Load(PATH) opens PATH with io::OpenCheckpoint (a model directory: config.json plus
// model.safetensors, or shards listed by model.safetensors.index.json under its strict rules; or a .safetensors file
// whose directory holds config.json). Weights may be
// F32, F16 or BF16 (converted to fp32), or compressed-tensors "int-quantized" as `lmkit quantize` and llm-compressor
// write them (`m.weight` I8 + `m.weight_scale`, `m.input_scale` for static activations). With quantization_config's
// input_activations null (w8a16) the int8 weights are dequantized to fp32; with int8 input_activations (w8a8) the
// Linear runs real int8 x int8 products with int32 accumulation, activations quantized per tensor from input_scale
// (static) or per token (dynamic). Every tensor's shape is checked against config.json. Errors, one line each, naming
// the file: kInvalidInput for a missing tensor ("missing tensor 'model.norm.weight'"), a shape that disagrees with
// config.json, an unexpected dtype, a NaN or infinite value ("tensor 'x': non-finite value at [2, 5]"), or a tensor
// the config does not account for (e.g. a layer beyond num_hidden_layers: a config/weights mismatch); kUnsupported
// for model types and quantization formats this pass does not run (weights other than symmetric 8-bit int codes);
// kNotFound/kIo from opening files. The loaded model owns its fp32/int8 copies (the files are closed).
//
// Forward contract: Forward runs `tokens` at positions cache.length() ... cache.length() + n - 1, appends their keys
// and values to `cache`, and writes logits: [n, vocab] rows when `all_logits`, else only the last position's [vocab].
// Errors: kInvalidInput for a token id >= vocab_size ("token id 600 at position 3 is >= vocab_size 512") or when the
// cache would overflow its capacity. `observer` (may be null) sees the input of every Linear in LinearNames() order
// (for calibration). A model is immutable: Forward may run concurrently with separate caches and pools. Output is the
// same for any pool size.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/model/config.h"
#include "lmkit/model/linear.h"

namespace lmkit::model {

// How the Linear layers were loaded.
enum class WeightMode : uint8_t { kFloat, kW8A16, kW8A8Static, kW8A8Dynamic, kFp8Static, kFp8Dynamic };
// float | w8a16 | w8a8-static | w8a8-dynamic | fp8-static | fp8-dynamic
const char* WeightModeName(WeightMode m);

class KvCache {
 public:
  KvCache() = default;
  KvCache(const LlamaConfig& c, uint32_t capacity);
  uint32_t length() const { return length_; }
  uint32_t capacity() const { return capacity_; }
  void Clear() { length_ = 0; }

 private:
  friend class LlamaModel;
  uint32_t capacity_ = 0, length_ = 0, kv_dim_ = 0;
  std::vector<float> k_, v_;  // [layers][capacity][kv_heads * head_dim]
};

// Receives the input rows of each Linear (index into LinearNames()) during Forward; called from the calling thread.
class ActivationObserver {
 public:
  virtual ~ActivationObserver() = default;
  virtual Status Observe(size_t linear, const float* x, uint64_t rows, uint64_t cols) = 0;
};

class LlamaModel {
 public:
  static Result<LlamaModel> Load(const std::string& path);

  const LlamaConfig& config() const { return config_; }
  WeightMode mode() const { return mode_; }
  const std::string& path() const { return path_; }
  // Module names of the quantizable Linear layers in forward order: per layer q, k, v, o, gate, up, down projections
  // (7 per layer; q/k/v share one input, gate/up another).
  std::vector<std::string> LinearNames() const;

  KvCache NewCache(uint32_t capacity) const { return KvCache(config_, capacity); }
  Status Forward(std::span<const uint32_t> tokens, KvCache& cache, ThreadPool* pool, float* logits, bool all_logits,
                 ActivationObserver* observer = nullptr) const;

 private:
  struct Layer {
    std::vector<float> attn_norm, mlp_norm;
    Linear q, k, v, o, gate, up, down;
  };
  LlamaConfig config_;
  WeightMode mode_ = WeightMode::kFloat;
  std::string path_;
  std::vector<float> embed_;  // [vocab, hidden]
  std::vector<float> final_norm_;
  Linear head_;  // lm_head (a copy of embed_ when tied)
  std::vector<Layer> layers_;
  std::vector<double> inv_freq_;  // RoPE, [head_dim / 2]

  friend struct ModelLoader;
};

}  // namespace lmkit::model
