// A decoder-only causal LM of the families config.h lists (Llama 3.x, Mistral, Qwen2/2.5, Qwen3, Gemma 2/3, Phi-3,
// OLMo 2, Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek V2/V3: RMSNorms placed as the family does, RoPE of every rope_type in
// Hugging Face's rotate-half order or DeepSeek's interleaved pairs, grouped-query or multi-head latent attention with
// per-layer sliding windows and soft-capping, gated MLPs or routed experts, tied or untied head) loaded from a Hugging
// Face checkpoint, with a multithreaded fp32 CPU forward pass and a KV cache. The class keeps its historical name.
//
// Loading contract: LlamaModel::Load(PATH) opens PATH with io::OpenCheckpoint (a model directory: config.json plus
// model.safetensors, or shards listed by model.safetensors.index.json under its strict rules; or a .safetensors file
// whose directory holds config.json). Weights may be
// F32, F16 or BF16 (the 16-bit ones, embeddings included, stay 16-bit in memory: widened inside the GEMM and on
// lookup), or compressed-tensors "int-quantized" as `lmkit quantize` and llm-compressor
// write them (`m.weight` I8 + `m.weight_scale`, `m.input_scale` for static activations). With quantization_config's
// input_activations null (w8a16) the int8 weights are dequantized to fp32; with int8 input_activations (w8a8) the
// Linear runs real int8 x int8 products with int32 accumulation, activations quantized per tensor from input_scale
// (static) or per token (dynamic). Every tensor's shape is checked against config.json. Errors, one line each, naming
// the file: kInvalidInput for a missing tensor ("missing tensor 'model.norm.weight'"), a shape that disagrees with
// config.json, an unexpected dtype, a NaN or infinite value ("tensor 'x': non-finite value at [2, 5]"), or a tensor
// the config does not account for (e.g. a layer beyond num_hidden_layers: a config/weights mismatch); kUnsupported
// for model types and quantization formats this pass does not run (weights other than symmetric 8-bit int codes);
// kNotFound/kIo from opening files. The loaded model owns its copies (the files are closed; each tensor's mapped pages
// are dropped once copied, so peak memory is the loaded model plus one tensor).
//
// Forward contract: Forward runs `tokens` at positions cache.length() ... cache.length() + n - 1, appends their keys
// and values to `cache`, and writes logits: [n, vocab] rows when `all_logits`, else only the last position's [vocab].
// Errors: kInvalidInput for a token id >= vocab_size ("token id 600 at position 3 is >= vocab_size 512") or when the
// cache would overflow its capacity. `observer` (may be null) sees the input of every Linear in LinearNames() order
// (for calibration; a routed expert sees only the rows routed to it, and is not called when none is, unless the
// observer asks for RouteAllExperts). A model is immutable: Forward may run concurrently with separate caches and
// pools. Output is the same for any pool size.
//
// Parts (layer-by-layer work, e.g. sequential GPTQ): Load(PATH, parts) reads only the embeddings, the decoder layers
// [first_layer, first_layer + layer_count) and/or the final norm and head that `parts` names, each checked as above;
// tensors of the other parts are neither read nor checked (no "not part of the model" error). `parts.replace` gives
// fp32 values read instead of the file's tensors of those names (a Linear given there loads as fp32). Embed and
// ForwardLayer run the pieces of Forward: the same code, the same bytes. Forward needs every part.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/model/config.h"
#include "lmkit/model/linear.h"
#include "lmkit/model/rope.h"

namespace lmkit::model {

// How the Linear layers were loaded.
// A checkpoint with several config groups (a routed-experts group beside the dense layers') reports the dense layers'.
enum class WeightMode : uint8_t { kFloat, kW8A16, kW8A8Static, kW8A8Dynamic, kFp8Static, kFp8Dynamic, kW4A16 };
// float | w8a16 | w8a8-static | w8a8-dynamic | fp8-static | fp8-dynamic | w4a16
const char* WeightModeName(WeightMode m);

class KvCache {
 public:
  KvCache() = default;
  KvCache(const LlamaConfig& c, uint32_t capacity) : KvCache(c, capacity, c.layers) {}
  // With `layers` slots (a model holding that many decoder layers).
  KvCache(const LlamaConfig& c, uint32_t capacity, uint32_t layers);
  uint32_t length() const { return length_; }
  uint32_t capacity() const { return capacity_; }
  void Clear() { length_ = 0; }

 private:
  friend class LlamaModel;
  uint32_t capacity_ = 0, length_ = 0, k_dim_ = 0, v_dim_ = 0;
  // [layers][capacity][kv_heads * head_dim] and [...][kv_heads * v_head_dim]; MLA keeps each head's expanded key and
  // value (not the latent), so that attention is the same code for every family.
  std::vector<float> k_, v_;
};

// Receives the input rows of each Linear (index into LinearNames()) during Forward; called from the calling thread.
class ActivationObserver {
 public:
  virtual ~ActivationObserver() = default;
  virtual Status Observe(size_t linear, const float* x, uint64_t rows, uint64_t cols) = 0;
  // Calibration only: every routed expert runs on (and is observed with) every token; the layer's output still
  // weighs only the top-k experts, so the logits are unchanged (llm-compressor's moe_calibrate_all_experts).
  virtual bool RouteAllExperts() const { return false; }
};

namespace detail {
struct RopeTable;
}

// Which parts of a checkpoint LlamaModel::Load reads.
struct ModelParts {
  bool embeddings = true;
  uint32_t first_layer = 0;
  uint32_t layer_count = UINT32_MAX;  // clipped to num_hidden_layers
  bool head = true;                   // the final norm and lm_head
  // Tensor name -> fp32 values of its shape (as the file would hold them, before gemma's 1 + w), used instead of the
  // file's; may be null.
  const std::map<std::string, std::vector<float>>* replace = nullptr;
};

class LlamaModel {
 public:
  static Result<LlamaModel> Load(const std::string& path) { return Load(path, ModelParts{}); }
  static Result<LlamaModel> Load(const std::string& path, const ModelParts& parts);

  const LlamaConfig& config() const { return config_; }
  WeightMode mode() const { return mode_; }
  const std::string& path() const { return path_; }
  // Module names of the quantizable Linear layers in forward order. Per layer: q, k, v (or phi3's one qkv_proj; or
  // MLA's q_a_proj, q_b_proj (or q_proj), kv_a_proj_with_mqa, kv_b_proj), o;
  // then a dense MLP's gate, up (or gate_up_proj), down, or a MoE block's router (mlp.gate), each routed expert's
  // gate, up, down, and the shared expert's gate, up, down and shared_expert_gate. Llama-like dense layers give 7.
  std::vector<std::string> LinearNames() const;
  // For each entry of LinearNames(), the index of the first Linear that reads the same input rows (itself when it is
  // the first): q/k/v share one, gate/up another, a MoE block's router, shared expert and shared gate a third, each
  // expert's gate/up their own (the rows routed to it); MLA's q_a_proj (or q_proj) and kv_a_proj_with_mqa one.
  std::vector<size_t> LinearInputSource() const;

  // The decoder layers loaded: [first_layer(), first_layer() + layer_count()).
  uint32_t first_layer() const { return first_layer_; }
  uint32_t layer_count() const { return static_cast<uint32_t>(layers_.size()); }

  // A cache with one slot per loaded layer.
  KvCache NewCache(uint32_t capacity) const { return KvCache(config_, capacity, layer_count()); }
  Status Forward(std::span<const uint32_t> tokens, KvCache& cache, ThreadPool* pool, float* logits, bool all_logits,
                 ActivationObserver* observer = nullptr) const;
  // x [n, hidden] = the (gemma: scaled) embeddings of `tokens`, the first at position p0 (for errors). Errors:
  // kInvalidInput for an id >= vocab_size; kInvalidArgument when the embeddings are not loaded.
  Status Embed(std::span<const uint32_t> tokens, float* x, uint32_t p0 = 0) const;
  // Runs decoder layer `layer` (loaded) over the n rows of x [n, hidden] in place, at positions cache.length() ...
  // cache.length() + n - 1, writing its keys and values to the layer's slot of `cache`; cache.length() is not
  // advanced (Forward does that after its last layer). `observer` sees this layer's Linears, indexed as in
  // LinearNames(). Errors: kInvalidArgument for a layer not loaded, kInvalidInput for a cache overflow.
  Status ForwardLayer(uint32_t layer, float* x, uint32_t n, KvCache& cache, ThreadPool* pool,
                      ActivationObserver* observer = nullptr) const;

 private:
  struct Mlp {
    Linear gate, up, down;  // fused_gate_up: gate holds gate_up_proj and up is empty
  };
  struct Layer {
    // Empty when the family has no such norm (config.h NormPlacement); gemma's are stored as (1 + w).
    std::vector<float> pre_attn, post_attn, pre_mlp, post_mlp;
    std::vector<float> q_norm, k_norm;
    Linear q, k, v, o;       // fused_qkv: q holds qkv_proj and k, v are empty; MLA: q holds q_proj or q_b_proj
    Linear q_a, kv_a, kv_b;  // MLA: q_a_proj (q_lora_rank > 0), kv_a_proj_with_mqa, kv_b_proj
    std::vector<float> q_a_norm, kv_a_norm;  // MLA: q_a_layernorm, kv_a_layernorm
    Mlp mlp;                                 // dense layers
    Linear router, shared_gate;
    std::vector<float> router_bias;  // deepseek_v3: e_score_correction_bias
    std::vector<Mlp> experts;
    Mlp shared;
    bool moe = false;
  };
  // Every Linear in LinearNames() order with the index of the Linear whose input it shares.
  std::vector<std::pair<const Linear*, size_t>> Linears() const;
  // Appends layer L's Linears to `out` (as Linears()).
  static void AddLinears(const Layer& L, std::vector<std::pair<const Linear*, size_t>>& out);
  // Layer slot `slot` (global index first_layer_ + slot) over x [n, hidden] at positions p0..., `li` its first
  // Linear's index in LinearNames().
  Status RunLayer(size_t slot, float* x, uint32_t n, uint32_t p0, const detail::RopeTable& global,
                  const detail::RopeTable& local, KvCache& cache, ThreadPool* pool, ActivationObserver* observer,
                  size_t li) const;
  // MLA's queries, keys and values of n rows of `x`, rotated by `rope_cos`/`rope_sin` ([n][half], half = rotated
  // dims / 2): q [n, heads * head_dim], k the same, v [n, heads * v_head_dim]. Observes q_a/q/kv_a/kv_b from
  // LinearNames()[li] on.
  Status MlaProject(const Layer& L, const float* x, uint32_t n, uint32_t half, const float* rope_cos,
                    const float* rope_sin, float* q, float* k, float* v, ThreadPool* pool, ActivationObserver* observer,
                    size_t& li) const;
  Status MoeBlock(const Layer& L, const float* x, uint32_t n, float* y, ThreadPool* pool, ActivationObserver* observer,
                  size_t& li) const;
  Status RunMlp(const Mlp& m, const float* x, uint64_t rows, float* y, ThreadPool* pool, ActivationObserver* observer,
                size_t first_linear, bool observe_input) const;
  LlamaConfig config_;
  WeightMode mode_ = WeightMode::kFloat;
  std::string path_;
  Linear embed_;  // [vocab, hidden] as stored (fp32, or bf16/fp16 bits), unpacked; unused when tied (rows of head_)
  std::vector<float> final_norm_;
  Linear head_;  // lm_head (the embedding itself when tied)
  std::vector<Layer> layers_;
  uint32_t first_layer_ = 0;
  bool has_embeddings_ = false, has_head_ = false;
  RopeSchedule rope_, rope_local_;
  float embed_scale_ = 1.0f;  // gemma: sqrt(hidden) in the embeddings' dtype

  friend struct ModelLoader;
};

}  // namespace lmkit::model
