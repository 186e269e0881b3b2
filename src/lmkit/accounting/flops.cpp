#include "lmkit/accounting/flops.h"

#include <algorithm>

namespace lmkit::accounting {
namespace {

// Checked uint64 arithmetic: a count that does not fit is an error rather than a wrapped number.
struct Checked {
  bool overflow = false;
  uint64_t Mul(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) overflow = true;
    return r;
  }
  uint64_t Add(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) overflow = true;
    return r;
  }
  uint64_t Mul(std::initializer_list<int64_t> xs) {
    uint64_t r = 1;
    for (int64_t x : xs) r = Mul(r, static_cast<uint64_t>(x));
    return r;
  }
};

// Twice the number of (query, key) pairs one head scores over a sequence of T tokens: 2·T·min(T, W) when causal
// attention is counted in full, T² (or W² + 2(T−W)W under a window W < T) when halved. Kept doubled so that it stays
// an integer for odd T.
uint64_t PairsTimesTwo(Checked& c, int64_t t, int64_t window, bool half) {
  int64_t keys = window > 0 ? std::min(t, window) : t;
  if (!half) return c.Mul({2, t, keys});
  if (window <= 0 || t <= window) return c.Mul({t, t});
  return c.Add(c.Mul({window, window}), c.Mul({2, t - window, window}));
}

class Builder {
 public:
  Builder(const ModelSpec& m, std::vector<Matmul>& out) : m_(m), out_(out) {}

  // A matmul with a weight (B operand) read once per layer (or `weight_copies` distinct weights per layer).
  void Weight(const std::string& name, const LayerKind* k, Component comp, int64_t mm, int64_t kk, int64_t nn,
              double weight_copies = 1.0) {
    Matmul x;
    x.name = name;
    x.layer_kind = k ? k->name : "head";
    x.component = comp;
    x.m = mm;
    x.k = kk;
    x.n = nn;
    x.count = k ? k->count : 1;
    x.flops = c.Mul({2, mm, kk, nn, x.count});
    x.b_reads = static_cast<double>(x.count) * weight_copies;
    out_.push_back(x);
  }
  // An activation x activation product with explicit FLOPs (scores, attention x V) whose B operand (keys/values) is
  // shared by `b_reads` reads in total.
  void Act(const std::string& name, const LayerKind& k, Component comp, int64_t mm, int64_t kk, int64_t nn,
           int64_t count, uint64_t flops, double b_reads, Operand b) {
    Matmul x;
    x.name = name;
    x.layer_kind = k.name;
    x.component = comp;
    x.m = mm;
    x.k = kk;
    x.n = nn;
    x.count = count;
    x.flops = flops;
    x.b_reads = b_reads;
    x.b = b;
    out_.push_back(x);
  }

  void Ffn(const LayerKind& k, int64_t tokens, int64_t batch_tokens_for_experts) {
    const int64_t d = m_.d_model;
    auto mlp = [&](const std::string& prefix, int64_t mm, int64_t width, double copies) {
      if (m_.ffn == FfnKind::kSwiGlu) {
        Weight(prefix + "w1 (gate)", &k, Component::kFfn, mm, d, width, copies);
        Weight(prefix + "w3 (up)", &k, Component::kFfn, mm, d, width, copies);
        Weight(prefix + "w2 (down)", &k, Component::kFfn, mm, width, d, copies);
      } else {
        Weight(prefix + "fc (up)", &k, Component::kFfn, mm, d, width, copies);
        Weight(prefix + "proj (down)", &k, Component::kFfn, mm, width, d, copies);
      }
    };
    if (!k.moe) {
      mlp("", tokens, m_.d_ff, 1.0);
      return;
    }
    const MoeSpec& e = m_.moe;
    Weight("router", &k, Component::kRouter, tokens, d, e.routed_experts);
    int64_t routed = tokens * e.top_k;
    // Distinct experts whose weights a step touches: all of them once enough tokens are routed.
    double copies = static_cast<double>(std::min<int64_t>(e.routed_experts, batch_tokens_for_experts * e.top_k));
    mlp("experts ", routed, e.expert_d_ff, copies);
    if (e.shared_d_ff > 0) {
      mlp("shared expert ", tokens, e.shared_d_ff, 1.0);
      if (e.shared_gate) Weight("shared expert gate", &k, Component::kFfn, tokens, d, 1);
    }
  }

  Checked c;

 private:
  const ModelSpec& m_;
  std::vector<Matmul>& out_;
};

Status OverflowError() {
  return Status::InvalidInput("", "FLOP count does not fit in 64 bits; use a smaller batch or sequence length");
}

Status CheckOptions(int64_t batch, int64_t seq) {
  if (batch <= 0) return Status::InvalidArgument(Field("batch") + " must be positive");
  if (seq <= 0) return Status::InvalidArgument(Field("seq_len") + " must be positive");
  // Keeps batch x heads x layers and token counts exact in int64 (heads and layers are at most 2^14).
  if (batch > (int64_t{1} << 31) || seq > (int64_t{1} << 31) || batch * seq > (int64_t{1} << 40))
    return Status::InvalidArgument(Field("batch") + " x " + Field("seq_len") +
                                   " is implausibly large (over 2^40 tokens)");
  return Status::Ok();
}

constexpr EnumName<Recompute> kRecomputeNames[] = {{Recompute::kNone, "none"},
                                                   {Recompute::kSelective, "selective"},
                                                   {Recompute::kFull, "full"},
                                                   {Recompute::kDeepSeek, "deepseek"}};

}  // namespace

std::span<const EnumName<Recompute>> RecomputeNames() { return kRecomputeNames; }
const char* RecomputeName(Recompute r) { return EnumNameOf(RecomputeNames(), r).data(); }

const char* ComponentName(Component c) {
  switch (c) {
    case Component::kAttnProj:
      return "attention projections";
    case Component::kAttnScores:
      return "attention scores";
    case Component::kAttnValues:
      return "attention x V";
    case Component::kFfn:
      return "FFN/experts";
    case Component::kRouter:
      return "router";
    case Component::kLmHead:
      return "LM head";
    case Component::kSoftmax:
      return "softmax";
  }
  return "";
}

Result<std::vector<Matmul>> BuildMatmuls(const ModelSpec& m, const FlopsOptions& o) {
  LMKIT_RETURN_IF_ERROR(CheckOptions(o.batch, o.seq_len));
  std::vector<Matmul> out;
  Builder b(m, out);
  Checked& c = b.c;
  const int64_t d = m.d_model, t = o.seq_len, bt = o.batch * o.seq_len, h = m.heads;
  for (const LayerKind& k : m.kinds) {
    uint64_t pairs2 = PairsTimesTwo(c, t, k.window, o.causal_half);
    int64_t keys = k.window > 0 ? std::min(t, k.window) : t;
    int64_t runs = o.batch * h * k.count;  // one score matmul per sequence, head and layer
    int64_t qk_dim = m.head_dim, v_dim = m.head_dim;
    double kv_reads = static_cast<double>(o.batch * m.kv_heads * k.count);
    if (m.mla) {
      const MlaSpec& a = m.mla_spec;
      qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
      v_dim = a.v_head_dim;
      kv_reads = static_cast<double>(runs);
      if (a.q_lora_rank > 0) {
        b.Weight("q_a_proj", &k, Component::kAttnProj, bt, d, a.q_lora_rank);
        b.Weight("q_b_proj", &k, Component::kAttnProj, bt, a.q_lora_rank, h * qk_dim);
      } else {
        b.Weight("q_proj", &k, Component::kAttnProj, bt, d, h * qk_dim);
      }
      b.Weight("kv_a_proj", &k, Component::kAttnProj, bt, d, a.kv_lora_rank + a.qk_rope_head_dim);
      b.Weight("kv_b_proj", &k, Component::kAttnProj, bt, a.kv_lora_rank, h * (a.qk_nope_head_dim + a.v_head_dim));
    } else {
      b.Weight("q_proj", &k, Component::kAttnProj, bt, d, m.q_dim());
      b.Weight("k_proj", &k, Component::kAttnProj, bt, d, m.kv_dim());
      b.Weight("v_proj", &k, Component::kAttnProj, bt, d, m.kv_dim());
    }
    b.Act("scores (QK^T)", k, Component::kAttnScores, t, qk_dim, keys, runs,
          c.Mul(c.Mul(pairs2, static_cast<uint64_t>(qk_dim)), static_cast<uint64_t>(runs)), kv_reads,
          Operand::kActivation);
    if (o.softmax_flops) {
      // Chinchilla App. F: 3 FLOPs per score (exp, sum, divide).
      b.Act("softmax", k, Component::kSoftmax, t, 0, keys, runs,
            c.Mul(c.Mul(pairs2, 3), static_cast<uint64_t>(runs)) / 2, 0.0, Operand::kActivation);
    }
    b.Act("attention x V", k, Component::kAttnValues, t, keys, v_dim, runs,
          c.Mul(c.Mul(pairs2, static_cast<uint64_t>(v_dim)), static_cast<uint64_t>(runs)), kv_reads,
          Operand::kActivation);
    b.Weight("o_proj", &k, Component::kAttnProj, bt, h * v_dim, d);
    b.Ffn(k, bt, bt);
  }
  if (o.lm_head) b.Weight("lm_head", nullptr, Component::kLmHead, bt, d, m.vocab);
  if (c.overflow) return OverflowError();
  return out;
}

Result<std::vector<Matmul>> BuildDecodeMatmuls(const ModelSpec& m, int64_t batch, int64_t context) {
  LMKIT_RETURN_IF_ERROR(CheckOptions(batch, context));
  std::vector<Matmul> out;
  Builder b(m, out);
  Checked& c = b.c;
  const int64_t d = m.d_model, h = m.heads;
  for (const LayerKind& k : m.kinds) {
    int64_t keys = k.window > 0 ? std::min(context, k.window) : context;
    if (m.mla) {
      // Weight-absorbed MLA: queries are mapped into the latent space, attention runs over the cached latents.
      const MlaSpec& a = m.mla_spec;
      int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim, lat = a.kv_lora_rank;
      if (a.q_lora_rank > 0) {
        b.Weight("q_a_proj", &k, Component::kAttnProj, batch, d, a.q_lora_rank);
        b.Weight("q_b_proj", &k, Component::kAttnProj, batch, a.q_lora_rank, h * qk);
      } else {
        b.Weight("q_proj", &k, Component::kAttnProj, batch, d, h * qk);
      }
      b.Weight("kv_a_proj", &k, Component::kAttnProj, batch, d, lat + a.qk_rope_head_dim);
      int64_t per_head = k.count * h;
      b.Act("q absorb (W_UK)", k, Component::kAttnProj, batch, a.qk_nope_head_dim, lat, per_head,
            c.Mul({2, batch, a.qk_nope_head_dim, lat, per_head}), static_cast<double>(per_head), Operand::kWeight);
      int64_t runs = batch * k.count;
      b.Act("scores (latent)", k, Component::kAttnScores, h, lat + a.qk_rope_head_dim, keys, runs,
            c.Mul({2, h, lat + a.qk_rope_head_dim, keys, runs}), static_cast<double>(runs), Operand::kKvCache);
      b.Act("attention x latent", k, Component::kAttnValues, h, keys, lat, runs, c.Mul({2, h, keys, lat, runs}),
            static_cast<double>(runs), Operand::kKvCache);
      b.Act("v absorb (W_UV)", k, Component::kAttnProj, batch, lat, a.v_head_dim, per_head,
            c.Mul({2, batch, lat, a.v_head_dim, per_head}), static_cast<double>(per_head), Operand::kWeight);
      b.Weight("o_proj", &k, Component::kAttnProj, batch, h * a.v_head_dim, d);
    } else {
      b.Weight("q_proj", &k, Component::kAttnProj, batch, d, m.q_dim());
      b.Weight("k_proj", &k, Component::kAttnProj, batch, d, m.kv_dim());
      b.Weight("v_proj", &k, Component::kAttnProj, batch, d, m.kv_dim());
      // The query heads of one GQA group share their cached keys/values: one (g x hd)·(hd x keys) product per group.
      int64_t g = h / m.kv_heads, runs = batch * m.kv_heads * k.count;
      b.Act("scores (QK^T)", k, Component::kAttnScores, g, m.head_dim, keys, runs,
            c.Mul({2, g, m.head_dim, keys, runs}), static_cast<double>(runs), Operand::kKvCache);
      b.Act("attention x V", k, Component::kAttnValues, g, keys, m.head_dim, runs,
            c.Mul({2, g, keys, m.head_dim, runs}), static_cast<double>(runs), Operand::kKvCache);
      b.Weight("o_proj", &k, Component::kAttnProj, batch, m.q_dim(), d);
    }
    b.Ffn(k, batch, batch);
  }
  b.Weight("lm_head", nullptr, Component::kLmHead, batch, d, m.vocab);
  if (c.overflow) return OverflowError();
  return out;
}

Result<FlopsReport> ComputeFlops(const ModelSpec& m, const FlopsOptions& o) {
  FlopsReport r;
  r.options = o;
  LMKIT_ASSIGN_OR_RETURN(r.matmuls, BuildMatmuls(m, o));
  Checked c;
  for (const auto& x : r.matmuls) {
    auto i = static_cast<int>(x.component);
    r.component[i] = c.Add(r.component[i], x.flops);
    r.forward = c.Add(r.forward, x.flops);
  }
  r.backward = c.Mul(r.forward, 2);
  // Megatron and HF gradient checkpointing checkpoint the decoder layers only: full recomputation runs every layer's
  // forward again but not the LM head. Selective recomputation (Korthikanti et al. 2022, sec. 5) recomputes the
  // attention core: QKᵀ, softmax and attention × V.
  const auto comp = [&](Component x) { return r.component[static_cast<int>(x)]; };
  if (o.recompute == Recompute::kFull) r.recompute = r.forward - comp(Component::kLmHead);
  if (o.recompute == Recompute::kSelective || o.recompute == Recompute::kDeepSeek)
    r.recompute = c.Add(c.Add(comp(Component::kAttnScores), comp(Component::kAttnValues)), comp(Component::kSoftmax));
  // DeepSeek-V3 also runs MLA's up-projections again (norms and the SwiGLU product are elementwise: no matmul FLOPs).
  if (o.recompute == Recompute::kDeepSeek)
    for (const auto& x : r.matmuls)
      if (x.name == "q_b_proj" || x.name == "kv_b_proj") r.recompute = c.Add(r.recompute, x.flops);
  r.model = c.Add(r.forward, r.backward);
  r.training = c.Add(r.model, r.recompute);
  if (c.overflow) return OverflowError();
  r.tokens = static_cast<uint64_t>(o.batch) * static_cast<uint64_t>(o.seq_len);
  r.params = CountParameters(m);
  double tokens = static_cast<double>(r.tokens);
  r.six_nd = 6.0 * static_cast<double>(r.params.active) * tokens;
  // Kaplan's N: non-embedding parameters, counted per token (active) for MoE models.
  r.six_nd_non_embedding = 6.0 * static_cast<double>(r.params.active - r.params.embedding - r.params.lm_head) * tokens;
  r.palm = TrainingFlopsPerTokenPalm(m, o.seq_len) * tokens;
  return r;
}

int64_t PalmParameters(const ModelSpec& m) {
  const ParameterCounts p = CountParameters(m);
  // A tied token table is the LM head's weight, which a matmul does read.
  const int64_t unread = m.tied ? m.learned_positions * m.d_model : p.embedding;
  return p.active - unread;
}

double TrainingFlopsPerTokenPalm(const ModelSpec& m, int64_t seq_len) {
  double n = static_cast<double>(PalmParameters(m));
  double qk = static_cast<double>(m.head_dim), v = static_cast<double>(m.mla ? m.mla_spec.v_head_dim : m.head_dim);
  // 12·L·H·Q·T = 6·L·H·T·(Q_k + Q_v): forward 2·T·Q per score and per value, times 3 for forward + backward.
  return 6.0 * n +
         6.0 * static_cast<double>(m.layers) * static_cast<double>(m.heads) * static_cast<double>(seq_len) * (qk + v);
}

Result<double> TrainingFlopsPerTokenExact(const ModelSpec& m, int64_t seq_len) {
  FlopsOptions o;
  o.seq_len = seq_len;
  LMKIT_ASSIGN_OR_RETURN(FlopsReport r, ComputeFlops(m, o));
  return static_cast<double>(r.training) / static_cast<double>(seq_len);
}

}  // namespace lmkit::accounting
