#include "lmkit/accounting/parallel_layout.h"

#include <algorithm>

namespace lmkit::accounting {
namespace {

std::string Num(int64_t v) { return std::to_string(v); }

Status LayoutErr(const std::string& msg) { return Status::InvalidArgument(msg); }

}  // namespace

int64_t ResolvedLayout::StageLayers(int64_t stage) const {
  int64_t n = 0;
  for (size_t c = static_cast<size_t>(stage); c < chunk_layers.size(); c += static_cast<size_t>(layout.pp))
    n += chunk_layers[c];
  return n;
}

Result<ResolvedLayout> ResolveLayout(const ModelSpec& m, const ParallelLayout& in, int64_t seq_len) {
  ParallelLayout l = in;
  constexpr int64_t kMax = int64_t{1} << 24;
  const std::pair<const char*, int64_t> degrees[] = {{"tp", l.tp},
                                                     {"pp", l.pp},
                                                     {"vpp", l.vpp},
                                                     {"cp", l.cp},
                                                     {"ep", l.ep},
                                                     {"micro_batch", l.micro_batch},
                                                     {"gpus_per_node", l.gpus_per_node}};
  for (const auto& [name, v] : degrees)
    if (v < 1 || v > kMax) return LayoutErr(Field(name) + " must be from 1 to " + Num(kMax) + " (got " + Num(v) + ")");
  const std::pair<const char*, int64_t> optional[] = {
      {"etp", l.etp}, {"dp", l.dp}, {"gpus", l.gpus}, {"global_batch", l.global_batch}};
  for (const auto& [name, v] : optional)
    if (v < 0 || v > (int64_t{1} << 40)) return LayoutErr(Field(name) + " must be positive (got " + Num(v) + ")");
  if (l.zero < 0 || l.zero > 3) return LayoutErr(Field("zero") + " must be 0, 1, 2 or 3");
  if (seq_len <= 0) return LayoutErr(Field("seq_len") + " must be positive");
  if (l.etp == 0) l.etp = l.tp;

  const int64_t model_ranks = l.tp * l.pp * l.cp;
  if (l.gpus > 0) {
    if (l.gpus % model_ranks != 0)
      return LayoutErr(Field("gpus") + " (" + Num(l.gpus) + ") is not a multiple of " + Field("tp") + " x " +
                       Field("pp") + " x " + Field("cp") + " (" + Num(model_ranks) + ")");
    if (l.dp > 0 && l.dp * model_ranks != l.gpus)
      return LayoutErr(Field("dp") + " (" + Num(l.dp) + ") disagrees with " + Field("gpus") + " (" + Num(l.gpus) +
                       ") / (" + Field("tp") + " x " + Field("pp") + " x " + Field("cp") + " = " + Num(model_ranks) +
                       ") = " + Num(l.gpus / model_ranks));
    l.dp = l.gpus / model_ranks;
  } else {
    if (l.dp == 0) l.dp = 1;
    l.gpus = l.dp * model_ranks;
  }

  if (m.heads % l.tp != 0)
    return LayoutErr("the " + Num(m.heads) + " attention heads do not divide by " + Field("tp") + " " + Num(l.tp));
  if (!m.mla && m.kv_heads % l.tp != 0)
    return LayoutErr("the " + Num(m.kv_heads) + " KV heads do not divide by " + Field("tp") + " " + Num(l.tp));
  const bool has_dense = std::any_of(m.kinds.begin(), m.kinds.end(), [](const LayerKind& k) { return !k.moe; });
  if (has_dense && m.d_ff % l.tp != 0)
    return LayoutErr("the MLP width " + Num(m.d_ff) + " does not divide by " + Field("tp") + " " + Num(l.tp));
  if (m.is_moe()) {
    if (m.moe.routed_experts % l.ep != 0)
      return LayoutErr("the " + Num(m.moe.routed_experts) + " experts do not divide by " + Field("ep") + " " +
                       Num(l.ep));
    if (m.moe.expert_d_ff % l.etp != 0)
      return LayoutErr("the expert width " + Num(m.moe.expert_d_ff) + " does not divide by " + Field("etp") + " " +
                       Num(l.etp));
    if ((l.tp * l.cp * l.dp) % (l.etp * l.ep) != 0)
      return LayoutErr(Field("etp") + " x " + Field("ep") + " (" + Num(l.etp * l.ep) + ") does not divide " +
                       Field("tp") + " x " + Field("cp") + " x " + Field("dp") + " (" + Num(l.tp * l.cp * l.dp) + ")");
  } else if (l.ep > 1) {
    return LayoutErr(Field("ep") + " " + Num(l.ep) + " needs a mixture-of-experts model");
  }
  if (l.cp > 1 && seq_len % (2 * l.cp) != 0)
    return LayoutErr(Field("seq_len") + " " + Num(seq_len) + " does not divide into 2 x " + Field("cp") + " (" +
                     Num(2 * l.cp) + ") chunks (load-balanced causal context parallelism)");
  if (l.sequence_parallel && (seq_len / l.cp) % l.tp != 0)
    return LayoutErr(Field("seq_len") + " per CP rank (" + Num(seq_len / l.cp) + ") does not divide by " + Field("tp") +
                     " " + Num(l.tp) + " (sequence parallelism)");
  const int64_t chunks = l.pp * l.vpp;
  if (m.layers < chunks)
    return LayoutErr("the " + Num(m.layers) + " layers are fewer than " + Field("pp") + " x " + Field("vpp") + " (" +
                     Num(chunks) + ") model chunks");
  if (l.vpp > 1 && l.pp == 1) return LayoutErr(Field("vpp") + " > 1 needs " + Field("pp") + " > 1");

  const int64_t per_step = l.micro_batch * l.dp;
  if (l.global_batch == 0) l.global_batch = per_step;
  if (l.global_batch % per_step != 0)
    return LayoutErr(Field("global_batch") + " (" + Num(l.global_batch) + ") is not a multiple of " +
                     Field("micro_batch") + " x " + Field("dp") + " (" + Num(per_step) + ")");
  ResolvedLayout r;
  r.micro_batches = l.global_batch / per_step;
  if (l.vpp > 1 && r.micro_batches % l.pp != 0)
    return LayoutErr("the interleaved schedule needs micro-batches per step (" + Num(r.micro_batches) + " = " +
                     Field("global_batch") + " / (" + Field("micro_batch") + " x " + Field("dp") +
                     ")) to be a multiple of " + Field("pp") + " " + Num(l.pp));

  r.layout = l;
  r.world = l.gpus;
  r.expert_dp = (l.tp * l.cp * l.dp) / (l.etp * l.ep);
  r.seq_len = seq_len;
  // Even split; the chunks one layer short sit at the ends (the embedding and the LM head share those stages).
  const int64_t base = m.layers / chunks, extra = m.layers % chunks;
  r.chunk_layers.assign(static_cast<size_t>(chunks), base + 1);
  int64_t short_chunks = extra == 0 ? 0 : chunks - extra;
  if (extra == 0) std::fill(r.chunk_layers.begin(), r.chunk_layers.end(), base);
  for (int64_t i = 0; i < short_chunks; ++i) {
    int64_t c = i % 2 == 0 ? i / 2 : chunks - 1 - i / 2;
    r.chunk_layers[static_cast<size_t>(c)] = base;
  }
  return r;
}

std::string DescribeLayout(const ResolvedLayout& r) {
  const ParallelLayout& l = r.layout;
  std::string s = "TP " + Num(l.tp) + " x PP " + Num(l.pp) + (l.vpp > 1 ? " (VPP " + Num(l.vpp) + ")" : "") + " x CP " +
                  Num(l.cp) + " x DP " + Num(l.dp);
  if (l.ep > 1) s += ", EP " + Num(l.ep) + (l.etp != l.tp ? " (ETP " + Num(l.etp) + ")" : "");
  if (l.sequence_parallel && l.tp > 1) s += ", SP";
  s += ", mb " + Num(l.micro_batch) + " x " + Num(r.micro_batches);
  if (l.zero > 0) s += ", ZeRO-" + Num(l.zero);
  s += std::string(", recompute ") + RecomputeName(l.recompute);
  return s;
}

}  // namespace lmkit::accounting
