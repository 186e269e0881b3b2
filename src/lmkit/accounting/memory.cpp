#include "lmkit/accounting/memory.h"

#include <algorithm>
#include <cmath>

#include "lmkit/accounting/tensor_parallel.h"

namespace lmkit::accounting {
namespace {

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

uint64_t Bytes(int64_t params, double per_param) {
  return static_cast<uint64_t>(std::llround(static_cast<double>(params) * per_param));
}

// Sum of output widths of every weight matrix: int8/fp8 weights carry one fp16 scale per output channel.
int64_t OutputChannels(const ModelSpec& m) {
  int64_t d = m.d_model, ch = 0;
  int64_t ffn_mats = m.ffn == FfnKind::kSwiGlu ? 2 : 1;  // matrices whose output is d_ff wide
  auto mlp = [&](int64_t width) { return ffn_mats * width + d; };
  for (const auto& k : m.kinds) {
    int64_t attn = 0;
    if (m.mla) {
      const MlaSpec& a = m.mla_spec;
      int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
      attn = (a.q_lora_rank > 0 ? a.q_lora_rank : 0) + m.heads * qk + a.kv_lora_rank + a.qk_rope_head_dim +
             m.heads * (a.qk_nope_head_dim + a.v_head_dim) + d;
    } else {
      attn = m.q_dim() + 2 * m.kv_dim() + d;
    }
    int64_t ffn = k.moe ? m.moe.routed_experts * mlp(m.moe.expert_d_ff) +
                              (m.moe.shared_d_ff > 0 ? mlp(m.moe.shared_d_ff) : 0) + m.moe.routed_experts
                        : mlp(m.d_ff);
    ch += k.count * (attn + ffn);
  }
  return ch + (m.tied ? 0 : m.vocab);
}

// Korthikanti et al. 2022, Table 2: bytes of one layer at 16-bit activations (1-byte dropout masks), no parallelism.
double KorthikantiLayer(double s, double b, double h, double a, Recompute r) {
  if (r == Recompute::kFull) return 2.0 * s * b * h;
  if (r == Recompute::kSelective || r == Recompute::kDeepSeek) return 34.0 * s * b * h;
  return s * b * h * (34.0 + 5.0 * a * s / h);
}

Status TooLarge() {
  return Status::InvalidArgument("the memory estimate exceeds 1e18 bytes; use a smaller batch or sequence");
}

constexpr EnumName<Mode> kModeNames[] = {{Mode::kTraining, "training"},
                                         {Mode::kInference, "inference"},
                                         {Mode::kTraining, "train"},
                                         {Mode::kInference, "infer"}};
constexpr EnumName<Optimizer> kOptimizerNames[] = {{Optimizer::kAdamW, "adamw"},
                                                   {Optimizer::kAdamW8bit, "adamw8bit"},
                                                   {Optimizer::kSgd, "sgd"},
                                                   {Optimizer::kAdamW, "adam"},
                                                   {Optimizer::kAdamW8bit, "adam8bit"}};
constexpr EnumName<ActivationModel> kActivationModelNames[] = {{ActivationModel::kKorthikanti, "korthikanti"},
                                                               {ActivationModel::kCs336, "cs336"}};

}  // namespace

std::span<const EnumName<Mode>> ModeNames() { return kModeNames; }
std::span<const EnumName<Optimizer>> OptimizerNames() { return kOptimizerNames; }
std::span<const EnumName<ActivationModel>> ActivationModelNames() { return kActivationModelNames; }
const char* ModeName(Mode m) { return EnumNameOf(ModeNames(), m).data(); }
const char* OptimizerName(Optimizer o) { return EnumNameOf(OptimizerNames(), o).data(); }
const char* ActivationModelName(ActivationModel a) { return EnumNameOf(ActivationModelNames(), a).data(); }

uint64_t InferenceWeightBytes(const ModelSpec& m, Dtype dtype, QuantScope scope) {
  const ParameterCounts p = CountParameters(m);
  const double e = DtypeBytes(dtype);
  if (dtype != Dtype::kInt8 && dtype != Dtype::kFp8) return Bytes(p.total, e);
  if (scope == QuantScope::kAll) return Bytes(p.total, e) + 2ULL * static_cast<uint64_t>(OutputChannels(m));
  // Linear scope: the decoder's Linear matrices at 1 byte with an fp16 scale per output channel; embeddings, LM head,
  // routers, norms and biases at 16 bits.
  return Bytes(p.linear, e) + Bytes(p.total - p.linear, 2.0) + 2ULL * static_cast<uint64_t>(p.linear_out_channels);
}

uint64_t KvCacheBytes(const ModelSpec& m, int64_t tokens, double bytes_per_element) {
  double total = 0;
  for (const auto& k : m.kinds) {
    double cached = static_cast<double>(k.window > 0 ? std::min(tokens, k.window) : tokens);
    double per_token = m.mla ? static_cast<double>(m.mla_spec.kv_lora_rank + m.mla_spec.qk_rope_head_dim)
                             : 2.0 * static_cast<double>(m.kv_heads * m.head_dim);
    total += static_cast<double>(k.count) * per_token * cached * bytes_per_element;
  }
  return static_cast<uint64_t>(std::llround(total));
}

Result<MemoryReport> EstimateMemory(const ModelSpec& m, const MemoryOptions& o) {
  if (o.batch <= 0) return Status::InvalidArgument(Field("batch") + " must be positive");
  if (o.seq_len <= 0) return Status::InvalidArgument(Field("seq_len") + " must be positive");
  if (o.gpus <= 0) return Status::InvalidArgument(Field("gpus") + " must be positive");
  if (o.zero < 0 || o.zero > 3) return Status::InvalidArgument(Field("zero") + " must be 0, 1, 2 or 3");
  if (o.batch > (int64_t{1} << 31) || o.seq_len > (int64_t{1} << 31) || o.gpus > (int64_t{1} << 24))
    return Status::InvalidArgument(Field("batch") + ", " + Field("seq_len") + " or " + Field("gpus") +
                                   " is implausibly large");
  MemoryReport r;
  r.options = o;
  r.params = CountParameters(m);
  const double e = DtypeBytes(o.dtype);
  const uint64_t n = static_cast<uint64_t>(o.gpus);
  const int64_t p = r.params.total;

  if (o.mode == Mode::kTraining) {
    if (o.dtype == Dtype::kFp8 || o.dtype == Dtype::kInt8)
      return Status::InvalidArgument("training memory is modelled for fp32, bf16 and fp16 only (got " +
                                     std::string(DtypeName(o.dtype)) + ")");
    bool mixed = o.dtype != Dtype::kFp32 && o.dtype != Dtype::kTf32;
    r.weight_bytes_per_param = e;
    r.grad_bytes_per_param = e;
    switch (o.optimizer) {
      case Optimizer::kAdamW:
        r.optimizer_bytes_per_param = mixed ? 12 : 8;
        break;  // (master +) m + v in fp32
      case Optimizer::kAdamW8bit:
        r.optimizer_bytes_per_param = 2;
        break;  // m, v in 8 bits
      case Optimizer::kSgd:
        r.optimizer_bytes_per_param = 4;
        break;  // fp32 momentum
    }
    r.weights = CeilDiv(Bytes(p, r.weight_bytes_per_param), o.zero >= 3 ? n : 1);
    r.gradients = CeilDiv(Bytes(p, r.grad_bytes_per_param), o.zero >= 2 ? n : 1);
    r.optimizer = CeilDiv(Bytes(p, r.optimizer_bytes_per_param), o.zero >= 1 ? n : 1);

    const double s = static_cast<double>(o.seq_len), h = static_cast<double>(m.d_model),
                 a = static_cast<double>(m.heads), v = static_cast<double>(m.vocab), L = static_cast<double>(m.layers);
    double per_seq = 0;
    if (o.activations == ActivationModel::kCs336) {
      // CS336 adamwAccounting's list, one tensor each, at the training dtype: per layer RMSNorm(s) 2·s·d, QKV 3·s·d,
      // QK^T a·s², softmax a·s², weighted sum s·d, output projection s·d, W1 s·F, SiLU s·F, W2 s·d; then the final
      // RMSNorm s·d, output embedding (logits) s·V and cross-entropy s·V.
      double f = static_cast<double>(m.d_ff);
      double layer = 8.0 * s * h + 2.0 * s * f + 2.0 * a * s * s;
      per_seq = e * (L * layer + s * h + 2.0 * s * v);
      r.activations_counted =
          "CS336 adamwAccounting list: per layer RMSNorm outputs, Q, K, V, QK^T, softmax, weighted sum, output "
          "projection, W1, SiLU, W2; final RMSNorm, logits, cross-entropy; " +
          std::string(DtypeName(o.dtype)) + "; no recomputation";
    } else {
      double scale = e / 2.0;
      double layers = 0;
      for (const auto& k : m.kinds) {
        // A sliding window caps the score matrix at s x window.
        double keys = k.window > 0 ? std::min(s, static_cast<double>(k.window)) : s;
        double layer = o.recompute == Recompute::kNone ? s * h * 34.0 + 5.0 * a * s * keys
                                                       : KorthikantiLayer(s, 1, h, a, o.recompute);
        layers += static_cast<double>(k.count) * layer;
      }
      if (o.recompute == Recompute::kFull) layers += KorthikantiLayer(s, 1, h, a, Recompute::kNone);  // one live layer
      per_seq = scale * layers + scale * 2.0 * s * h + 4.0 * s * v;
      r.activations_counted =
          std::string("Korthikanti et al. 2022 per layer s*b*h*(34 + 5*a*s/h) bytes at 16 bits") +
          (o.recompute == Recompute::kSelective ? ", selective recomputation: 34*s*b*h"
           : o.recompute == Recompute::kDeepSeek
               ? ", deepseek recomputation counted as selective here, 34*s*b*h (its FP8 caching is modelled with "
                 "the training-layout flags)"
           : o.recompute == Recompute::kFull ? ", full recomputation: layer inputs 2*s*b*h plus one layer's working set"
                                             : "") +
          "; plus final norm input and fp32 logits 4*s*b*V" +
          (e != 2.0 ? "; scaled to " + std::string(DtypeName(o.dtype)) : std::string());
    }
    if (!(per_seq < 1e18)) return TooLarge();
    r.per_sequence = static_cast<uint64_t>(std::llround(per_seq));
    r.activations = r.per_sequence * static_cast<uint64_t>(o.batch);
    r.kv_cache = 0;  // training recomputes attention over the whole sequence; nothing is cached
  } else {
    // Tensor parallelism: every GPU holds the same slice; the estimate is that slice's, on one GPU.
    LMKIT_ASSIGN_OR_RETURN(const ModelSpec shard, ShardForTensorParallel(m, o.gpus, Field("gpus")));
    const Precision prec{o.dtype, o.kv_dtype.value_or(AutoKvDtype(o.dtype)), o.quant_scope};
    r.kv_dtype = prec.kv_dtype;
    r.kv_heads_per_gpu = shard.kv_heads;
    r.weight_bytes_per_param = e;
    r.weights = InferenceWeightBytes(shard, o.dtype, o.quant_scope);
    const double kv_e = prec.KvBytes();
    r.kv_bytes_per_token = KvCacheBytes(m, 1, kv_e);
    r.kv_bytes_per_token_gpu = KvCacheBytes(shard, 1, kv_e);
    uint64_t kv_seq = KvCacheBytes(shard, o.seq_len, kv_e);
    // Working activations of a prefill of one sequence (fused attention): residual + norm output (2·s·d, whole on
    // every GPU), the widest MLP intermediate (gate and up, 2·s·F, split), and fp32 logits of the last position
    // (vocabulary-parallel).
    double f = static_cast<double>(
        std::max(shard.d_ff, shard.is_moe() ? std::max(shard.moe.expert_d_ff * shard.moe.top_k, shard.moe.shared_d_ff)
                                            : int64_t{0}));
    double s = static_cast<double>(o.seq_len), h = static_cast<double>(m.d_model);
    double act_e = prec.ActivationBytes();
    double act = act_e * s * (2.0 * h + 2.0 * f) + 4.0 * static_cast<double>(shard.vocab);
    if (!(act < 1e18) || !(static_cast<double>(kv_seq) < 1e18)) return TooLarge();
    uint64_t act_seq = static_cast<uint64_t>(std::llround(act));
    r.kv_cache = kv_seq * static_cast<uint64_t>(o.batch);
    r.per_sequence = kv_seq + act_seq;
    r.activations = act_seq * static_cast<uint64_t>(o.batch);
    r.activations_counted =
        "inference prefill working set (fused attention): residual and norm output 2*s*d, MLP gate/up 2*s*d_ff, fp32 "
        "logits of the last position";
    if (o.dtype == Dtype::kFp8 || o.dtype == Dtype::kInt8)
      r.weights_counted =
          o.quant_scope == QuantScope::kLinear
              ? std::string(DtypeName(o.dtype)) +
                    " Linear layers (+ fp16 scale per output channel); embeddings, LM head, routers "
                    "and norms 16-bit"
              : std::string("every weight ") + DtypeName(o.dtype) + " (+ fp16 scale per output channel)";
  }
  if (static_cast<double>(r.per_sequence) * static_cast<double>(o.batch) > 1e18) return TooLarge();
  r.overhead = o.overhead_bytes;
  r.fixed = r.weights + r.gradients + r.optimizer + r.overhead;
  r.total = r.fixed + r.per_sequence * static_cast<uint64_t>(o.batch);
  if (o.capacity_bytes > 0) {
    r.capacity_known = true;
    r.fits = static_cast<double>(r.total) <= o.capacity_bytes;
    double room = o.capacity_bytes - static_cast<double>(r.fixed);
    r.max_batch = room <= 0 || r.per_sequence == 0
                      ? 0
                      : static_cast<int64_t>(std::floor(room / static_cast<double>(r.per_sequence)));
  }
  return r;
}

}  // namespace lmkit::accounting
