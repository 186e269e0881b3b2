#include "lmkit/accounting/training_memory.h"

#include <algorithm>
#include <cmath>

#include "lmkit/accounting/params.h"

namespace lmkit::accounting {
namespace {

using LD = long double;

uint64_t RoundBytes(LD v) { return v <= 0 ? 0 : static_cast<uint64_t>(std::llround(static_cast<double>(v))); }

int64_t MlpParams(const ModelSpec& m, int64_t f) {
  const int64_t mats = m.ffn == FfnKind::kSwiGlu ? 3 : 2, outs = m.ffn == FfnKind::kSwiGlu ? 2 : 1;
  return mats * m.d_model * f + (m.mlp_bias ? outs * f + m.d_model : 0);
}
int64_t NormParams(const ModelSpec& m) {
  return m.norm == NormKind::kLayerNorm && m.norm_bias ? 2 * m.d_model : m.d_model;
}

// Parameters of one decoder layer on one GPU: split by TP (projections, dense and shared MLPs; MLA's down-projections
// and norms replicated, as its up-projections are the column-parallel ones), replicated (norms, router, shared gate)
// and routed experts split E/EP ways, each EP/ETP-wide.
struct LayerParams {
  int64_t shared = 0;  // TP-sharded plus replicated
  int64_t experts = 0;
};
LayerParams LayerParamsPerGpu(const ModelSpec& m, bool moe, const ParallelLayout& l) {
  const int64_t d = m.d_model, t = l.tp;
  int64_t p = 0;
  if (m.mla) {
    const MlaSpec& a = m.mla_spec;
    const int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim, h = m.heads / t;
    p += a.q_lora_rank > 0 ? d * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * h * qk : d * h * qk;
    p += d * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank;
    p += a.kv_lora_rank * h * (a.qk_nope_head_dim + a.v_head_dim) + h * a.v_head_dim * d;
  } else {
    const int64_t q = m.q_dim() / t, kv = m.kv_dim() / t;
    p += d * q + 2 * d * kv + (m.qkv_bias ? q + 2 * kv : 0) + q * d + (m.out_bias ? d : 0);
    if (m.qk_norm == QkNorm::kPerHead) p += 2 * m.head_dim;
    if (m.qk_norm == QkNorm::kFullWidth) p += q + kv;
    if (m.attn_sinks) p += m.heads / t;
  }
  p += m.norms_per_layer * NormParams(m);
  LayerParams lp;
  if (!moe) {
    lp.shared = p + MlpParams(m, m.d_ff / t);
    return lp;
  }
  const MoeSpec& e = m.moe;
  p += e.routed_experts * d + (e.router_bias ? e.routed_experts : 0);
  if (e.shared_d_ff > 0) p += MlpParams(m, e.shared_d_ff / t) + (e.shared_gate ? d : 0);
  lp.shared = p;
  lp.experts = (e.routed_experts / l.ep) * MlpParams(m, e.expert_d_ff / l.etp);
  return lp;
}

// Stored activation bytes of one decoder layer for one micro-batch on one GPU, 16-bit tensors and 1-byte dropout
// masks (Korthikanti et al. 2022 §4, generalised to GQA/MLA widths, SwiGLU and MoE): tensors outside the TP region
// are split by TP only under sequence parallelism; CP splits the sequence; selective recomputation drops the
// attention scores, full keeps the layer input.
struct LayerActivations {
  LD stored = 0;   // kept until the backward pass
  LD working = 0;  // the whole layer's set (what full recomputation rebuilds for one layer at a time)
};
// What one layer keeps under DeepSeek-V3's memory savings (technical report §3.2.3 and §3.3.2), in bytes: the norms'
// inputs (their outputs and the projections' inputs are recomputed), MLA's latents (the up-projections' inputs; Q, K
// and V are recomputed from them) or, without MLA, Q, K and V; the attention output, the input of the Linear after
// attention, in 12-bit E5M6; no attention scores (selective); the fp32 router logits; the tokens dispatched to the
// experts in FP8 (the MoE up-projections' input) and their combined copies in BF16; the SwiGLU inputs (gate and up) in
// FP8, its output recomputed — for the routed experts as the report says, and taken to hold for the shared expert and
// the dense MLPs of the same FP8 framework too.
LD DeepSeekStored(const ModelSpec& m, const LayerSlot& slot, const ResolvedLayout& r) {
  const ParallelLayout& l = r.layout;
  const LD b = static_cast<LD>(l.micro_batch), sl = static_cast<LD>(r.seq_len / l.cp), h = static_cast<LD>(m.d_model),
           t = static_cast<LD>(l.tp);
  const LD rep = l.sequence_parallel ? t : 1;
  const LD tok = sl * b;
  const LD heads = static_cast<LD>(m.heads);
  LD attn = 2 * tok * h / rep;  // norm input
  LD v = static_cast<LD>(m.head_dim);
  if (m.mla) {
    const MlaSpec& a = m.mla_spec;
    attn += 2 * tok * static_cast<LD>(a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim) / rep;
    v = static_cast<LD>(a.v_head_dim);
  } else {
    attn += 2 * tok * static_cast<LD>(m.q_dim() + 2 * m.kv_dim()) / t;
  }
  attn += 1.5L * tok * heads * v / t;  // attention output, E5M6
  LD mlp = 2 * tok * h / rep;          // norm input
  if (!slot.moe) {
    mlp += 1 * tok * 2 * static_cast<LD>(m.d_ff) / t;
  } else {
    const MoeSpec& e = m.moe;
    const LD k = static_cast<LD>(e.top_k);
    mlp += 4 * tok * static_cast<LD>(e.routed_experts) / rep;  // fp32 router logits
    mlp += 1 * tok * k * h / rep + 2 * tok * k * h / rep;      // FP8 dispatch, BF16 combine
    mlp += 1 * tok * k * 2 * static_cast<LD>(e.expert_d_ff) / t;
    if (e.shared_d_ff > 0) mlp += 1 * tok * 2 * static_cast<LD>(e.shared_d_ff) / t;
  }
  return attn + mlp;
}

LayerActivations LayerActivationBytes(const ModelSpec& m, const LayerSlot& slot, const ResolvedLayout& r) {
  const ParallelLayout& l = r.layout;
  const LD b = static_cast<LD>(l.micro_batch), sl = static_cast<LD>(r.seq_len / l.cp), s = static_cast<LD>(r.seq_len),
           h = static_cast<LD>(m.d_model), t = static_cast<LD>(l.tp);
  const LD rep = l.sequence_parallel ? t : 1;  // divisor of the tensors outside the TP region
  const LD tok = sl * b;
  // Dropout masks (1 byte per element) in GPT-era LayerNorm models; the RMSNorm families train without dropout.
  const LD mask = m.norm == NormKind::kLayerNorm ? tok * h / rep : 0;
  LD attn = 2 * tok * h / rep /* norm input */ + 2 * tok * h / rep /* projections' input */ + mask;
  if (m.mla) {
    const MlaSpec& a = m.mla_spec;
    const LD heads = static_cast<LD>(m.heads), qk = static_cast<LD>(a.qk_nope_head_dim + a.qk_rope_head_dim),
             v = static_cast<LD>(a.v_head_dim);
    attn += 2 * tok * static_cast<LD>(a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim) / rep;  // latents
    attn += 2 * tok * heads * (2 * qk + 2 * v) / t;  // Q, K, V, output projection input
  } else {
    const LD q = static_cast<LD>(m.q_dim()), kv = static_cast<LD>(m.kv_dim());
    attn += 2 * tok * (q + kv) / t + 2 * tok * kv / t + 2 * tok * q / t;  // Q, K; V; output projection input
  }
  const LD keys = slot.window > 0 ? std::min(s, static_cast<LD>(slot.window)) : s;
  // Softmax output, its dropout mask and output (Korthikanti's 5·a·s²·b); 2 bytes without attention dropout.
  const LD scores = (m.norm == NormKind::kLayerNorm ? 5 : 2) * static_cast<LD>(m.heads) / t * sl * keys * b;
  const LD mats = m.ffn == FfnKind::kSwiGlu ? 3 : 2;  // gate, up, product / up, activation
  LD mlp = 2 * tok * h / rep /* norm input */ + 2 * tok * h / rep /* MLP input */ + mask;
  if (!slot.moe) {
    mlp += 2 * tok * mats * static_cast<LD>(m.d_ff) / t;
  } else {
    const MoeSpec& e = m.moe;
    const LD k = static_cast<LD>(e.top_k);
    mlp += 4 * tok * static_cast<LD>(e.routed_experts) / rep;  // fp32 router logits
    mlp += 2 * 2 * tok * k * h / rep;                          // dispatched and combined token copies
    mlp += 2 * tok * k * mats * static_cast<LD>(e.expert_d_ff) / t;
    if (e.shared_d_ff > 0) mlp += 2 * tok * mats * static_cast<LD>(e.shared_d_ff) / t;
  }
  LayerActivations a;
  a.working = attn + scores + mlp;
  if (l.recompute == Recompute::kDeepSeek) {
    a.stored = DeepSeekStored(m, slot, r) + 2 * mask;
  } else if (l.recompute == Recompute::kFull) {
    a.stored = 2 * tok * h / rep;
  } else {
    a.stored = attn + mlp + (l.recompute == Recompute::kNone ? scores : 0);
  }
  const LD scale = 1;  // 16-bit activations; fp32 training doubles them (applied by the caller)
  a.stored *= scale;
  a.working *= scale;
  return a;
}

}  // namespace

std::vector<LayerSlot> LayerOrder(const ModelSpec& m) {
  std::vector<LayerSlot> order;
  for (const auto& k : m.kinds)
    for (int64_t i = 0; i < k.count; ++i) order.push_back({k.moe, k.window});
  return order;
}

MegatronMemory MegatronTheoreticalMemory(const ModelSpec& m, const ResolvedLayout& r) {
  const ParallelLayout& l = r.layout;
  MegatronMemory out;
  const int64_t multiple = 128 * l.tp;
  out.padded_vocab = (m.vocab + multiple - 1) / multiple * multiple;
  const LD h = static_cast<LD>(m.d_model), V = static_cast<LD>(out.padded_vocab), t = static_cast<LD>(l.tp),
           p = static_cast<LD>(l.pp);
  const LD norm = m.norm == NormKind::kRmsNorm ? 1 : 2;
  const LD gated = m.ffn == FfnKind::kSwiGlu ? 1.5L : 1.0L;
  int64_t dense_layers = 0, moe_layers = 0;
  for (const auto& k : m.kinds) (k.moe ? moe_layers : dense_layers) += k.count;
  const LD nd = static_cast<LD>(dense_layers), nm = static_cast<LD>(moe_layers);

  LD attn = 0;
  if (m.mla) {
    const MlaSpec& a = m.mla_spec;
    const LD heads = static_cast<LD>(m.heads), nope = static_cast<LD>(a.qk_nope_head_dim),
             rope = static_cast<LD>(a.qk_rope_head_dim), v = static_cast<LD>(a.v_head_dim);
    const LD q = a.q_lora_rank == 0 ? h * heads * (nope + rope)
                                    : static_cast<LD>(a.q_lora_rank) * (h + heads * (nope + rope) + norm);
    attn = q + static_cast<LD>(a.kv_lora_rank) * (h + heads * (nope + v) + norm) + h * rope + heads * v * h;
  } else {
    attn = 2 * h * static_cast<LD>(m.q_dim() + m.kv_dim());  // 2h·h·(1 + groups/heads)·(kv_channels·heads/h)
  }
  const LD ffn = static_cast<LD>(m.d_ff > 0 ? m.d_ff : m.moe.expert_d_ff);
  const LD dense_mlp = 2 * h * ffn * gated;
  const LD shared = 2 * h * static_cast<LD>(m.moe.shared_d_ff) * gated;
  const LD E = static_cast<LD>(m.moe.routed_experts);
  const LD routed = m.is_moe() ? 2 * h * static_cast<LD>(m.moe.expert_d_ff) * E * gated : 0;
  const LD layernorm = 2 * h * norm;
  const LD router = m.is_moe() ? h * E + (m.mlp_bias ? E : 0) : 0;
  const LD gate = m.moe.shared_d_ff > 0 && m.moe.shared_gate ? h : 0;
  const LD embedding = h * V, final_norm = norm * h;

  const LD tp_sharded = (attn + dense_mlp) * nd + (attn + shared) * nm;
  const LD replicated = layernorm * nd + (layernorm + router + gate) * nm + final_norm;
  const LD expert = routed * nm;
  LD tp_part = (tp_sharded / p + embedding) / t;
  const LD rep_part = replicated / p;
  const LD exp_part = expert / p / static_cast<LD>(l.etp * l.ep);
  if (!m.tied && l.pp == 1) tp_part += embedding / t;
  auto bytes_per_param = [&](int64_t dp) { return l.zero >= 1 ? 6 + 12 / static_cast<LD>(dp) : LD{18}; };
  out.params_most_loaded = static_cast<double>(tp_part + rep_part + exp_part);
  out.weight_and_optimizer =
      RoundBytes((tp_part + rep_part) * bytes_per_param(l.dp) + exp_part * bytes_per_param(r.expert_dp));

  // Activations of the first stage (Table 2 of Korthikanti et al.): the whole model's layers are in flight there.
  const LD s = static_cast<LD>(r.seq_len), b = static_cast<LD>(l.micro_batch), L = static_cast<LD>(m.layers);
  const LD mb = static_cast<LD>(r.micro_batches);
  out.sp_selective_path = l.sequence_parallel && l.recompute == Recompute::kSelective;
  LD act = out.sp_selective_path ? s * b * h * (18 + 4 * (ffn / h)) : s * b * h * (10 + 24 / t);
  act *= L;
  act += 8 * s * b * p + s * b * h * p;  // input ids and embedding dropout, pp micro-batches in flight
  if (l.vpp > 1) act *= 1 + (p - 1) / (p * static_cast<LD>(l.vpp));
  if (l.vpp == 1 && l.pp > 1) act *= std::min<LD>(1, mb / p);
  if (out.sp_selective_path) {
    if (l.pp == 1) act += s * b * h * 4 * (1 + V / h);
    act /= t;
  } else {
    if (l.pp == 1) act += (s * b * V / t + s * b * h) * 2;
    act *= 1.05L;
  }
  out.activations = RoundBytes(act);
  return out;
}

Result<TrainingMemoryReport> EstimateTrainingMemory(const ModelSpec& m, const TrainingMemoryOptions& o) {
  if (o.dtype == Dtype::kFp8 || o.dtype == Dtype::kInt8)
    return Status::InvalidArgument("training memory is modelled for fp32, bf16 and fp16 only (got " +
                                   std::string(DtypeName(o.dtype)) + ")");
  LMKIT_ASSIGN_OR_RETURN(ResolvedLayout r, ResolveLayout(m, o.layout, o.seq_len));
  const ParallelLayout& l = r.layout;
  TrainingMemoryReport rep;
  rep.layout = r;
  rep.options = o;
  const bool mixed = o.dtype != Dtype::kFp32 && o.dtype != Dtype::kTf32;
  const double e = DtypeBytes(o.dtype);
  rep.weight_bytes_per_param = e;
  rep.grad_bytes_per_param = e;
  rep.optimizer_bytes_per_param = o.optimizer == Optimizer::kAdamW       ? (mixed ? 12 : 8)
                                  : o.optimizer == Optimizer::kAdamW8bit ? 2
                                                                         : 4;
  const LD act_scale = static_cast<LD>(e) / 2;

  const std::vector<LayerSlot> order = LayerOrder(m);
  const int64_t chunks = l.pp * l.vpp;
  std::vector<int64_t> chunk_start(static_cast<size_t>(chunks) + 1, 0);
  for (int64_t c = 0; c < chunks; ++c)
    chunk_start[static_cast<size_t>(c) + 1] =
        chunk_start[static_cast<size_t>(c)] + r.chunk_layers[static_cast<size_t>(c)];
  const int64_t vocab_shard = (m.vocab + l.tp - 1) / l.tp;
  const uint64_t dense_group = static_cast<uint64_t>(l.dp * l.cp), expert_group = static_cast<uint64_t>(r.expert_dp);
  auto shard = [&](LD bytes, int stage_at_least, uint64_t group) {
    return RoundBytes(l.zero >= stage_at_least ? bytes / static_cast<LD>(group) : bytes);
  };
  const LayerSlot first_dense = [&] {
    for (const auto& s : order)
      if (!s.moe) return s;
    return order.front();
  }();
  rep.activation_bytes_per_layer = RoundBytes(LayerActivationBytes(m, first_dense, r).stored * act_scale);

  // Layers of one kind (dense/MoE, window) are alike: their numbers are computed once per kind.
  struct PerSlot {
    LayerSlot slot;
    LayerParams params;
    LayerActivations acts;
  };
  std::vector<PerSlot> slots;
  auto per_slot = [&](const LayerSlot& s) -> const PerSlot& {
    for (const auto& p : slots)
      if (p.slot.moe == s.moe && p.slot.window == s.window) return p;
    slots.push_back({s, LayerParamsPerGpu(m, s.moe, l), LayerActivationBytes(m, s, r)});
    return slots.back();
  };
  slots.reserve(m.kinds.size());
  for (const auto& s : order) per_slot(s);
  for (int64_t st = 0; st < l.pp; ++st) {
    StageMemory sm;
    sm.stage = st;
    sm.embedding = st == 0;
    sm.lm_head = st == l.pp - 1;
    int64_t shared = 0, experts = 0;
    LD stored = 0, working = 0;
    for (int64_t c = st; c < chunks; c += l.pp) {
      for (int64_t i = chunk_start[static_cast<size_t>(c)]; i < chunk_start[static_cast<size_t>(c) + 1]; ++i) {
        const PerSlot& ps = per_slot(order[static_cast<size_t>(i)]);
        const LayerParams& lp = ps.params;
        shared += lp.shared;
        experts += lp.experts;
        const LayerActivations& a = ps.acts;
        stored += a.stored;
        working = std::max(working, a.working);
        ++sm.layers;
      }
    }
    if (sm.embedding) shared += (vocab_shard + m.learned_positions) * m.d_model;
    if (sm.lm_head) {
      shared += NormParams(m);
      if (!m.tied)
        shared += vocab_shard * m.d_model + (m.lm_head_bias ? vocab_shard : 0);
      else if (l.pp > 1)
        shared += vocab_shard * m.d_model;  // the output layer's copy of the tied embedding
    }
    sm.params = shared + experts;
    sm.expert_params = experts;
    auto part = [&](double per_param, int zero_stage) {
      return shard(static_cast<LD>(shared) * per_param, zero_stage, dense_group) +
             shard(static_cast<LD>(experts) * per_param, zero_stage, expert_group);
    };
    sm.weights = part(rep.weight_bytes_per_param, 3);
    sm.gradients = part(rep.grad_bytes_per_param, 2);
    sm.optimizer = part(rep.optimizer_bytes_per_param, 1);
    // 1F1B: rank s warms up with pp − s − 1 forwards, so pp − s micro-batches are in flight; interleaved (Narayanan et
    // al. 2021, Megatron's schedule): 2·(pp − s − 1) + (vpp − 1)·pp warm-up chunk forwards plus one. Capped by the
    // step's micro-batches.
    const int64_t m_b = r.micro_batches;
    if (l.vpp == 1) {
      sm.in_flight = std::min(l.pp - st, m_b);
      stored *= static_cast<LD>(sm.in_flight);
    } else {
      sm.in_flight = std::min(2 * (l.pp - st - 1) + (l.vpp - 1) * l.pp + 1, m_b * l.vpp);
      stored = stored / static_cast<LD>(l.vpp) * static_cast<LD>(sm.in_flight);
    }
    if (l.recompute == Recompute::kFull) stored += working;  // the layer being recomputed
    sm.activations = RoundBytes(stored * act_scale);
    if (sm.lm_head) {
      const LD tok = static_cast<LD>(r.seq_len / l.cp * l.micro_batch);
      const LD rep_div = l.sequence_parallel ? static_cast<LD>(l.tp) : 1;
      sm.logits = RoundBytes(2 * tok * static_cast<LD>(m.d_model) / rep_div * act_scale +
                             4 * tok * static_cast<LD>(vocab_shard));
    }
    sm.overhead = o.overhead_bytes;
    const LD total =
        static_cast<LD>(sm.weights) + sm.gradients + sm.optimizer + sm.activations + sm.logits + sm.overhead;
    if (!(total < 1e18L))
      return Status::InvalidArgument("the memory estimate exceeds 1e18 bytes; use a smaller micro-batch or sequence");
    sm.total = RoundBytes(total);
    rep.stages.push_back(sm);
  }
  for (size_t i = 1; i < rep.stages.size(); ++i)
    if (rep.stages[i].total > rep.stages[static_cast<size_t>(rep.most_loaded)].total)
      rep.most_loaded = static_cast<int64_t>(i);
  rep.megatron = MegatronTheoreticalMemory(m, r);
  if (o.capacity_bytes > 0) {
    rep.capacity_known = true;
    rep.fits = static_cast<double>(rep.stages[static_cast<size_t>(rep.most_loaded)].total) <= o.capacity_bytes;
  }
  rep.activations_counted =
      std::string("Korthikanti et al. 2022 Table 2 per layer and micro-batch, generalised to the model's widths") +
      (m.norm == NormKind::kLayerNorm ? ", dropout masks" : ", no dropout (RMSNorm family)") +
      (l.sequence_parallel && l.tp > 1 ? ", sequence parallel (all tensors / TP)" : ", TP splits the TP region only") +
      (l.cp > 1 ? ", sequence / CP" : "") +
      (l.recompute == Recompute::kSelective ? ", selective recomputation (no attention scores)"
       : l.recompute == Recompute::kFull    ? ", full recomputation (layer inputs plus one layer's working set)"
       : l.recompute == Recompute::kDeepSeek
           ? ", DeepSeek-V3 recomputation (norm outputs, MLA up-projections, SwiGLU outputs; attention output in "
             "E5M6, MoE dispatch and SwiGLU inputs in FP8; no attention scores)"
           : ", attention scores stored (5·a·s²·b)") +
      (l.vpp > 1 ? "; interleaved 1F1B in-flight chunks" : "; 1F1B in-flight micro-batches") +
      "; last stage: final norm input and fp32 logits of one micro-batch";
  return rep;
}

}  // namespace lmkit::accounting
