#include "lmkit/accounting/tensor_parallel.h"

namespace lmkit::accounting {
namespace {
int64_t SplitUp(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

Result<ModelSpec> ShardForTensorParallel(const ModelSpec& m, int64_t tp, const std::string& field) {
  if (tp <= 1) return m;
  if (m.heads % tp != 0)
    return Status::InvalidArgument(field + " (" + std::to_string(tp) + ") must divide the attention heads (" +
                                   std::to_string(m.heads) + "): tensor parallelism splits whole heads");
  if (!m.mla && (m.kv_heads >= tp ? m.kv_heads % tp != 0 : tp % m.kv_heads != 0))
    return Status::InvalidArgument(field + " (" + std::to_string(tp) + ") does not spread the " +
                                   std::to_string(m.kv_heads) +
                                   " key/value heads evenly: they must divide among the GPUs, or the GPUs among them");
  ModelSpec s = m;
  s.heads = m.heads / tp;
  // MLA caches one latent per token that every GPU holds whole; its heads split like any other.
  s.kv_heads = m.mla ? s.heads : m.kv_heads >= tp ? m.kv_heads / tp : 1;
  s.d_ff = SplitUp(m.d_ff, tp);
  s.moe.expert_d_ff = SplitUp(m.moe.expert_d_ff, tp);
  s.moe.shared_d_ff = SplitUp(m.moe.shared_d_ff, tp);
  s.vocab = SplitUp(m.vocab, tp);
  return s;
}

AllReduceCost TensorParallelAllReduce(const ModelSpec& m, int64_t tp, int64_t tokens, double act_bytes,
                                      double link_bytes_per_s, double latency_s) {
  AllReduceCost c;
  if (tp <= 1) return c;
  c.count = m.layers * (m.parallel_block ? 1 : 2) + 1;
  c.bytes_each = static_cast<double>(tokens) * static_cast<double>(m.d_model) * act_bytes;
  const double t = static_cast<double>(tp);
  const double per_call = link_bytes_per_s > 0 ? 2.0 * (t - 1.0) / t * c.bytes_each / link_bytes_per_s : 0.0;
  c.seconds = static_cast<double>(c.count) * (per_call + latency_s);
  return c;
}

}  // namespace lmkit::accounting
