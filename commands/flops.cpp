// `lmkit flops`: the matmul inventory, FLOPs, parameters, 6ND, step time and roofline of a transformer step.
#include "commands.h"
#include "lmkit/accounting/run_flops.h"
#include "lmkit/present/accounting.h"
#include "lmkit/present/accounting_svg.h"
#include "model_args.h"

namespace lmkit::cli {

namespace {
const char* kFlopsConventions = R"(Conventions (defaults; flags change them):
  FLOP = 2 x MAC: (MxK)(KxN) costs 2*M*K*N FLOPs (CS336, Megatron, PyTorch); --macs prints MACs in the rows.
  Causal attention: the full T x T scores and attention x V are counted (CS336, nanoGPT, Chinchilla, PaLM);
    --causal-half halves them (Megatron, FlashAttention, MaxText). Sliding windows cap the keys per query.
  The embedding lookup costs nothing; the LM head (d x V) is counted (--no-lm-head drops it).
  Softmax, norms and elementwise ops are not counted (--softmax adds Chinchilla's 3*heads*T^2 per layer).
  Backward = 2 x forward. --recompute full runs every layer's forward again but not the LM head (Megatron, HF
    gradient checkpointing); --recompute selective runs QK^T, softmax and attention x V again (Korthikanti et al.).
  MFU divides model FLOPs (forward + backward, no recomputation: PaLM, torchtitan); the step time is
    model FLOPs / (peak x --mfu), and HFU (recomputation counted) is reported beside it.
  6*N*D uses N = active parameters; PaLM's 6N + 12*L*H*Q*T excludes the input tables no matmul reads (an untied
    token embedding, a learned position table), as torchtitan and nanoGPT's estimate_mfu do.
  MoE: each token runs top_k routed experts (plus shared ones); the router is its own component.
Roofline (with --gpu): fused attention (FlashAttention-style) unless --attention unfused; --dtype fp8/int8 applies
  to the decoder's Linear layers (llm-compressor/vLLM recipes keep embeddings, LM head and routers 16-bit) unless
  --quant-scope all; activations are 16-bit for 8-bit weights; the KV cache is read at --kv-dtype (default: the
  activations' dtype, as vLLM's kv_cache_dtype auto).
Default step: batch 1 x seq-len 1024, bf16 peaks. See docs/accounting.md for every formula and its source.)";
}  // namespace

RunFn SetupFlops(CLI::App& sub, const GlobalOptions& g) {
  struct State {
    ModelArgs args;
    accounting::FlopsRequest req;
    bool no_lm_head = false;
    double mfu = 0;
    int64_t steps = 0;
    std::string recompute = "none", dtype = "bf16", kv_dtype, quant_scope, attention;
  };
  auto st = std::make_shared<State>();
  st->args.Bind(sub);
  auto& r = st->req;
  sub.add_option("--seq-len,-T", r.options.seq_len, "tokens per sequence (context) [1024]");
  sub.add_option("--batch,-B", r.options.batch, "sequences per step [1]");
  sub.add_flag("--training", r.training, "time a training step (forward + backward) instead of a forward pass");
  sub.add_flag("--causal-half", r.options.causal_half, "halve causal attention scores and attention x V");
  sub.add_flag("--no-lm-head", st->no_lm_head, "do not count the LM head matmul");
  sub.add_flag("--softmax", r.options.softmax_flops, "count softmax as 3 FLOPs per score (Chinchilla)");
  sub.add_flag("--macs", r.options.macs, "show MACs (= FLOPs / 2) in the per-matmul rows");
  sub.add_option("--recompute", st->recompute,
                 "activation recomputation: " + EnumChoices(accounting::RecomputeNames()) + " [none]");
  sub.add_option("--gpu", r.gpu,
                 "GPU from data/gpus.json (a100, h100, h200, b200, mi300x ...): roofline and step time");
  sub.add_option("--gpu-spec", r.gpu_spec, "a JSON file describing the GPU (a gpus.json entry), instead of --gpu");
  sub.add_option("--mfu", st->mfu, "model FLOPs utilisation in (0, 1] for the step time (needs --gpu)");
  sub.add_option(
      "--dtype", st->dtype,
      "with --gpu: dtype of the peak and of the weights: " + EnumChoices(accounting::DtypeNames()) + " [bf16]");
  sub.add_option("--kv-dtype", st->kv_dtype,
                 "with --gpu: dtype of the KV cache the decode roofline reads: " +
                     EnumChoices(accounting::DtypeNames()) + " [bf16; fp32 for fp32 weights]");
  sub.add_option("--quant-scope", st->quant_scope,
                 "with --gpu and an 8-bit --dtype: the weights it applies to: " +
                     EnumChoices(accounting::QuantScopeNames()) + " [linear: the decoder's Linear layers]");
  sub.add_option(
      "--attention", st->attention,
      "with --gpu: the roofline's attention kernels: " + EnumChoices(accounting::AttentionNames()) + " [fused]");
  sub.add_option("--steps", st->steps, "with --gpu and --mfu: total time of this many steps");
  sub.footer(kFlopsConventions);
  return [st, &g, &sub]() -> int {
    auto fail = [](const Status& s) { return ReportError("flops", s, kAccountingFlags); };
    auto& a = st->args;
    auto& req = st->req;
    auto src = a.Source(AnyDimFlag(sub));
    if (!src.ok()) return fail(src.status());
    req.source = *src;
    req.options.lm_head = !st->no_lm_head;
    auto rc = ParseEnum(accounting::RecomputeNames(), st->recompute, "recompute");
    if (!rc.ok()) return fail(rc.status());
    req.options.recompute = *rc;
    for (Status s :
         {ParseGiven(sub, "--dtype", st->dtype, &req.dtype), ParseGiven(sub, "--kv-dtype", st->kv_dtype, &req.kv_dtype),
          ParseGiven(sub, "--quant-scope", st->quant_scope, accounting::QuantScopeNames(), &req.quant_scope),
          ParseGiven(sub, "--attention", st->attention, accounting::AttentionNames(), &req.attention)})
      if (!s.ok()) return fail(s);
    req.mfu = IfGiven(sub, "--mfu", st->mfu);
    req.steps = IfGiven(sub, "--steps", st->steps);
    auto fmt = ParseEnum(present::FormatNames(), g.json ? "json" : a.format, "format");
    if (!fmt.ok()) return fail(fmt.status());
    auto sw = accounting::ParseSweep(a.sweep);
    if (!sw.ok()) return fail(sw.status());
    req.sweep = *sw;
    req.svg_path = a.svg;
    if (Status st_svg = CheckOutputIsNotAnInput(a.InputFiles(*sw), req.svg_path, "--svg"); !st_svg.ok())
      return fail(st_svg);
    auto res = accounting::RunFlops(req);
    if (!res.ok()) return fail(res.status());
    if (!res->svg_path.empty())
      if (Status w = WriteChart(res->svg_path, present::FlopsSweepSvg(*res)); !w.ok()) return fail(w);
    if (*fmt == present::Format::kJson) {
      PrintJson(present::FlopsJson(*res));
    } else {
      PrintText(AsFlags(present::RenderFlops(*res, *fmt)));
    }
    return kExitOk;
  };
}

}  // namespace lmkit::cli
