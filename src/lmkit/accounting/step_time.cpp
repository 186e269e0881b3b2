#include "lmkit/accounting/step_time.h"

#include <algorithm>
#include <map>

#include "lmkit/accounting/training_memory.h"

namespace lmkit::accounting {
namespace {

// Ring collectives: an all-reduce moves 2(g − 1)/g of the message per GPU, a reduce-scatter or all-gather (g − 1)/g.
double RingShare(int64_t g) { return g <= 1 ? 0 : static_cast<double>(g - 1) / static_cast<double>(g); }

}  // namespace

Result<LayerFlops> ComputeLayerFlops(const ModelSpec& m, int64_t seq_len, bool causal_half) {
  FlopsOptions fo;
  fo.seq_len = seq_len;
  fo.batch = 1;
  fo.causal_half = causal_half;
  LMKIT_ASSIGN_OR_RETURN(std::vector<Matmul> ops, BuildMatmuls(m, fo));
  std::map<std::string, double> layer, core, up;
  std::map<std::string, int64_t> count;
  for (const auto& k : m.kinds) count[k.name] = k.count;
  LayerFlops out;
  out.seq_len = seq_len;
  out.causal_half = causal_half;
  for (const auto& op : ops) {
    const double f = static_cast<double>(op.flops);
    if (op.layer_kind == "head") {
      out.head += f;
      continue;
    }
    const double per = f / static_cast<double>(std::max<int64_t>(1, count[op.layer_kind]));
    layer[op.layer_kind] += per;
    if (op.component == Component::kAttnScores || op.component == Component::kAttnValues) core[op.layer_kind] += per;
    if (op.name == "q_b_proj" || op.name == "kv_b_proj") up[op.layer_kind] += per;
  }
  for (const auto& k : m.kinds)
    for (int64_t i = 0; i < k.count; ++i) {
      out.layer.push_back(layer[k.name]);
      out.attention_core.push_back(core[k.name]);
      out.mla_up.push_back(up[k.name]);
    }
  return out;
}

Result<TrainingStepReport> EstimateTrainingStep(const ModelSpec& m, const GpuSpec& gpu, const TrainingStepOptions& o,
                                                const LayerFlops* flops, const TrainingMemoryReport* memory) {
  if (o.mfu && !(*o.mfu > 0 && *o.mfu <= 1)) return Status::InvalidArgument(Field("mfu") + " must be in (0, 1]");
  if (!(o.inter_node_bytes_per_s > 0))
    return Status::InvalidArgument(Field("inter_node_gb_s") + " must be a positive number");
  LMKIT_ASSIGN_OR_RETURN(ResolvedLayout r, ResolveLayout(m, o.layout, o.seq_len));
  const ParallelLayout& l = r.layout;
  TrainingStepReport rep;
  rep.layout = r;
  rep.options = o;
  rep.peak = gpu.PeakFlops(o.dtype);
  if (!(rep.peak > 0))
    return Status::InvalidArgument(gpu.name + " has no " + DtypeName(o.dtype) + " peak; choose another " +
                                   Field("dtype"));
  rep.intra_node_bytes_per_s =
      gpu.interconnect_bytes_per_s > 0 ? gpu.interconnect_bytes_per_s : o.inter_node_bytes_per_s;
  LayerFlops own;
  if (flops == nullptr || flops->seq_len != o.seq_len || flops->causal_half != o.causal_half) {
    LMKIT_ASSIGN_OR_RETURN(own, ComputeLayerFlops(m, o.seq_len, o.causal_half));
    flops = &own;
  }
  const LayerFlops& pf = *flops;

  const std::vector<LayerSlot> order = LayerOrder(m);
  const int64_t chunks = l.pp * l.vpp;
  const double gb = static_cast<double>(l.global_batch), mb = static_cast<double>(l.micro_batch),
               nmb = static_cast<double>(r.micro_batches);
  double fwd_seq = pf.head;
  for (double f : pf.layer) fwd_seq += f;
  rep.model_flops = 3 * fwd_seq * gb;
  rep.hardware_flops = rep.model_flops;

  // Which link a group of `size` ranks `stride` apart crosses (Megatron's rank order: TP, CP, DP, PP innermost first).
  const int64_t node = l.gpus_per_node;
  auto link = [&](int64_t stride, int64_t size) {
    const bool inter = stride * size > node;
    return std::pair<double, bool>{inter ? o.inter_node_bytes_per_s : rep.intra_node_bytes_per_s, inter};
  };
  const double act_e = DtypeBytes(o.dtype);
  const double tok_mb = static_cast<double>(o.seq_len / l.cp) * mb;  // tokens per micro-batch on a CP rank
  const double sp_div = l.sequence_parallel ? static_cast<double>(l.tp) : 1.0;
  const double h = static_cast<double>(m.d_model);
  const double split = static_cast<double>(l.tp * l.cp);  // TP splits every matmul, CP the sequence

  // Per stage, per micro-batch: compute and the collectives on its critical path.
  struct Stage {
    double compute = 0, tp = 0, cp_exposed = 0, ep = 0, params_bytes = 0, expert_params_bytes = 0, hw = 0;
  };
  std::vector<int64_t> chunk_start(static_cast<size_t>(chunks) + 1, 0);
  for (int64_t c = 0; c < chunks; ++c)
    chunk_start[static_cast<size_t>(c) + 1] =
        chunk_start[static_cast<size_t>(c)] + r.chunk_layers[static_cast<size_t>(c)];
  auto [tp_bw, tp_inter] = link(1, l.tp);
  auto [cp_bw, cp_inter] = link(l.tp, l.cp);
  auto [ep_bw, ep_inter] = link(l.etp, l.ep);
  const double ar_msg = act_e * tok_mb * h;  // one TP all-reduce (or SP all-gather + reduce-scatter pair)
  const int ar_per_layer = 4 + (l.recompute == Recompute::kFull ? 2 : 0);
  const double kv_width = m.mla ? static_cast<double>(m.heads) * (m.mla_spec.qk_nope_head_dim +
                                                                  m.mla_spec.qk_rope_head_dim + m.mla_spec.v_head_dim)
                                : 2.0 * static_cast<double>(m.kv_dim());
  const double cp_msg = act_e * tok_mb * kv_width / static_cast<double>(l.tp);  // K and V of one CP chunk
  double tp_bytes = 0, cp_bytes = 0, ep_bytes = 0;
  std::vector<Stage> stages(static_cast<size_t>(l.pp));
  TrainingMemoryReport own_memory;
  if (memory == nullptr) {
    TrainingMemoryOptions mo;
    mo.layout = l;
    mo.seq_len = o.seq_len;
    mo.dtype = o.dtype;
    LMKIT_ASSIGN_OR_RETURN(own_memory, EstimateTrainingMemory(m, mo));
    memory = &own_memory;
  }
  const TrainingMemoryReport& mem = *memory;
  double extra_recompute = 0;
  for (int64_t st = 0; st < l.pp; ++st) {
    Stage& S = stages[static_cast<size_t>(st)];
    double fwd = 0, attn_core = 0, mla_up = 0, recompute = 0;
    int64_t layers = 0, moe_layers = 0;
    for (int64_t c = st; c < chunks; c += l.pp)
      for (int64_t i = chunk_start[static_cast<size_t>(c)]; i < chunk_start[static_cast<size_t>(c) + 1]; ++i) {
        const LayerSlot& s = order[static_cast<size_t>(i)];
        fwd += pf.layer[static_cast<size_t>(i)];
        attn_core += pf.attention_core[static_cast<size_t>(i)];
        mla_up += pf.mla_up[static_cast<size_t>(i)];
        ++layers;
        moe_layers += s.moe ? 1 : 0;
      }
    if (l.recompute == Recompute::kFull) recompute = fwd;
    if (l.recompute == Recompute::kSelective) recompute = attn_core;
    if (l.recompute == Recompute::kDeepSeek) recompute = attn_core + mla_up;
    if (st == l.pp - 1) fwd += pf.head;
    extra_recompute += recompute * gb;
    S.hw = (3 * fwd + recompute) * mb / split;
    S.compute = S.hw / rep.peak;
    const double tp_s = l.tp > 1 ? layers * ar_per_layer * 2 * RingShare(l.tp) * ar_msg / tp_bw : 0;
    S.tp = tp_s;
    if (st == 0) tp_bytes = layers * ar_per_layer * 2 * RingShare(l.tp) * ar_msg * nmb;
    if (l.cp > 1) {
      const double per_layer = 3 * static_cast<double>(l.cp - 1) * cp_msg / cp_bw;  // forward KV, backward KV + dKV
      const double attn_s = 3 * attn_core * mb / split / rep.peak / std::max<int64_t>(1, layers);
      S.cp_exposed = layers * std::max(0.0, per_layer - attn_s);
      if (st == 0) cp_bytes = layers * 3 * static_cast<double>(l.cp - 1) * cp_msg * nmb;
    }
    if (l.ep > 1 && moe_layers > 0) {
      const double msg = act_e * tok_mb / sp_div * static_cast<double>(m.moe.top_k) * h * RingShare(l.ep);
      S.ep = moe_layers * 4 * msg / ep_bw;
      ep_bytes = std::max(ep_bytes, moe_layers * 4 * msg * nmb);
    }
    const StageMemory& sm = mem.stages[static_cast<size_t>(st)];
    S.params_bytes = static_cast<double>(sm.params - sm.expert_params) * act_e;
    S.expert_params_bytes = static_cast<double>(sm.expert_params) * act_e;
  }
  rep.hardware_flops = rep.model_flops + extra_recompute;
  // The slowest stage paces the pipeline.
  auto per_mb = [&](const Stage& S) { return S.compute + S.tp + S.cp_exposed + S.ep; };
  for (int64_t st = 1; st < l.pp; ++st)
    if (per_mb(stages[static_cast<size_t>(st)]) > per_mb(stages[static_cast<size_t>(rep.slowest_stage)]))
      rep.slowest_stage = st;
  const Stage& S = stages[static_cast<size_t>(rep.slowest_stage)];
  auto [pp_bw, pp_inter] = link(l.tp * l.cp * l.dp, l.pp);
  const double pp_msg = act_e * tok_mb * h / sp_div;
  const double pp_mb = l.pp > 1 ? 2 * static_cast<double>(l.vpp) * pp_msg / pp_bw : 0;  // activation out, gradient in
  const double t_mb = per_mb(S) + pp_mb;
  rep.bubble_fraction = static_cast<double>(l.pp - 1) / (static_cast<double>(l.vpp) * nmb);
  const double bubble = static_cast<double>(l.pp - 1) / static_cast<double>(l.vpp) * t_mb;

  // Data parallelism: gradients reduce-scattered (or all-reduced) and parameters all-gathered over dp·cp ranks; the
  // experts' over their own group. Overlapped with the last micro-batch's backward and the first one's forward.
  auto [dp_bw, dp_inter] = link(l.tp, l.dp * l.cp);
  auto [edp_bw, edp_inter] = link(l.etp * l.ep, r.expert_dp);
  const double dense_share = RingShare(l.dp * l.cp), expert_share = RingShare(r.expert_dp);
  const double sync_s = S.params_bytes * dense_share / dp_bw + S.expert_params_bytes * expert_share / edp_bw;
  double dp_bytes = (S.params_bytes * dense_share + S.expert_params_bytes * expert_share) * 2;
  double dp_exposed = 0;
  if (l.zero >= 3) {
    // Parameters gathered for every micro-batch's forward and backward, gradients reduce-scattered once.
    const double gather = sync_s * 2 * nmb;
    dp_bytes += (S.params_bytes * dense_share + S.expert_params_bytes * expert_share) * 2 * (nmb - 1);
    dp_exposed = o.overlap ? std::max(0.0, sync_s - S.compute / 3) * 2 * nmb + std::max(0.0, sync_s - S.compute * 2 / 3)
                           : gather + sync_s;
  } else {
    dp_exposed =
        o.overlap ? std::max(0.0, sync_s - S.compute * 2 / 3) + std::max(0.0, sync_s - S.compute / 3) : 2 * sync_s;
  }

  auto add = [&](const char* name, double s, double bytes, std::pair<double, bool> lk) {
    rep.parts.push_back({name, s, bytes, lk.first, lk.second});
  };
  rep.parts.push_back({"compute", S.compute * nmb, 0, 0, false});
  rep.parts.push_back({"pipeline bubble", bubble, 0, 0, false});
  add("TP collectives", S.tp * nmb, tp_bytes, {tp_bw, tp_inter});
  add("CP ring exchange", S.cp_exposed * nmb, cp_bytes, {cp_bw, cp_inter});
  add("EP all-to-all", S.ep * nmb, ep_bytes, {ep_bw, ep_inter});
  add("PP send/recv", pp_mb * nmb, pp_msg * 2 * static_cast<double>(l.vpp) * nmb * (l.pp > 1 ? 1 : 0),
      {pp_bw, pp_inter});
  add("DP gradient sync", dp_exposed, dp_bytes, {dp_bw, dp_inter || edp_inter});
  rep.step_s = 0;
  const StepPart* biggest = &rep.parts.front();
  for (const auto& p : rep.parts) {
    rep.step_s += p.seconds;
    if (p.seconds > biggest->seconds) biggest = &p;
  }
  rep.bound = biggest->name;
  const double tokens = gb * static_cast<double>(o.seq_len), world = static_cast<double>(r.world);
  rep.tokens_per_s_per_gpu = tokens / rep.step_s / world;
  rep.mfu = rep.model_flops / (rep.step_s * world * rep.peak);
  if (o.mfu) {
    rep.at_mfu_step_s = rep.model_flops / (world * rep.peak * *o.mfu);
    rep.at_mfu_tokens_per_s_per_gpu = tokens / rep.at_mfu_step_s / world;
  }
  return rep;
}

}  // namespace lmkit::accounting
