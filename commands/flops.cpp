// `lmkit flops`: the matmul inventory, FLOPs, parameters, 6ND, step time and roofline of a transformer step.
#include "command.h"
#include "layout_flags.h"
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
    gradient checkpointing); --recompute selective runs QK^T, softmax and attention x V again (Korthikanti et al.);
    --recompute deepseek also MLA's up-projections (DeepSeek-V3 report, sec. 3.2.3).
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

namespace {
const char* kLayoutStep = R"(
Training step under a layout (any layout flag, --gpus or --zero; implies --training): compute of the slowest
  pipeline stage at the GPU's peak (its matmuls / (tp*cp), recomputation included), the bubble (pp-1)/(vpp*m) of
  it, TP all-reduces (4 per layer and micro-batch, 6 with full recomputation), the CP ring exchange of K and V (as
  far as attention does not hide it), EP all-to-alls (4 per MoE layer), PP sends, and DP gradient reduce-scatter and
  parameter all-gather (overlapped with the last/first micro-batch unless --no-overlap); ring collectives over the
  GPU table's interconnect within a node of --gpus-per-node, --inter-node-gb-s between nodes. --mfu adds the step
  at that end-to-end MFU. --svg draws the step's parts. Needs --gpu.)";

}  // namespace

RunFn SetupFlops(CLI::App& sub, const GlobalOptions& g) {
  struct State {
    ModelArgs args;
    accounting::FlopsRequest req;
    bool no_lm_head = false;
    double mfu = 0;
    int64_t steps = 0;
    std::string recompute = "none", dtype = "bf16", kv_dtype, quant_scope, attention;
    LayoutFlags layout;
    int64_t gpus = 0;
    int zero = 0;
  };
  auto st = std::make_shared<State>();
  st->args.Bind(sub);
  auto& r = st->req;
  sub.add_option("--seq-len,-T", r.options.seq_len, "tokens per sequence (context) (default: 1024)");
  sub.add_option("--batch,-B", r.options.batch, "sequences per step (default: 1)");
  sub.add_flag("--training", r.training, "time a training step (forward + backward) instead of a forward pass");
  sub.add_flag("--causal-half", r.options.causal_half, "halve causal attention scores and attention x V");
  sub.add_flag("--no-lm-head", st->no_lm_head, "do not count the LM head matmul");
  sub.add_flag("--softmax", r.options.softmax_flops, "count softmax as 3 FLOPs per score (Chinchilla)");
  sub.add_flag("--macs", r.options.macs, "show MACs (= FLOPs / 2) in the per-matmul rows");
  sub.add_option("--recompute", st->recompute,
                 "activation recomputation: " + EnumChoices(accounting::RecomputeNames()) + " (default: none)");
  sub.add_option("--gpu", r.gpu,
                 "GPU from data/gpus.json (a100, h100, h200, b200, mi300x ...): roofline and step time");
  sub.add_option("--gpu-spec", r.gpu_spec, "a JSON file describing the GPU (a gpus.json entry), instead of --gpu");
  sub.add_option("--mfu", st->mfu, "model FLOPs utilisation in (0, 1] for the step time (needs --gpu)");
  sub.add_option("--dtype", st->dtype,
                 "with --gpu: dtype of the peak and of the weights: " + EnumChoices(accounting::DtypeNames()) +
                     " (default: bf16)");
  sub.add_option("--kv-dtype", st->kv_dtype,
                 "with --gpu: dtype of the KV cache the decode roofline reads: " +
                     EnumChoices(accounting::DtypeNames()) + " (default: bf16; fp32 for fp32 weights)");
  sub.add_option("--quant-scope", st->quant_scope,
                 "with --gpu and an 8-bit --dtype: the weights it applies to: " +
                     EnumChoices(accounting::QuantScopeNames()) + " (default: linear, the decoder's Linear layers)");
  sub.add_option("--attention", st->attention,
                 "with --gpu: the roofline's attention kernels: " + EnumChoices(accounting::AttentionNames()) +
                     " (default: fused)");
  sub.add_option("--steps", st->steps, "with --gpu and --mfu: total time of this many steps");
  sub.add_option("--gpus", st->gpus, "with a layout flag: total GPUs (DP = gpus / (tp x pp x cp))")
      ->group("training layout (Megatron-style; any of these switches to the per-stage model)");
  sub.add_option("--zero", st->zero, "with a layout flag: ZeRO stage 0-3 (default: 0)")
      ->transform(DecimalInteger())
      ->check(CLI::Range(0, 3))
      ->group("training layout (Megatron-style; any of these switches to the per-stage model)");
  AddLayoutFlags(sub, &st->layout, false);
  sub.footer(std::string(kFlopsConventions) + kLayoutStep);
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
    // Any layout flag, --gpus or --zero asks for a training layout's step (RunFlops answers with it).
    if (AnyLayoutFlag(sub) || sub.count("--gpus") > 0 || sub.count("--zero") > 0) {
      if (Status s = FinishLayoutFlags(sub, &st->layout, IfGiven(sub, "--zero", st->zero)); !s.ok()) return fail(s);
      req.layout = st->layout.req;
      if (sub.count("--gpus") > 0) req.layout->layout.gpus = st->gpus;
    }
    auto res = accounting::RunFlops(req);
    if (!res.ok()) return fail(res.status());
    if (!res->svg_path.empty())
      if (Status w = WriteChart(res->svg_path, present::FlopsSvg(*res)); !w.ok()) return fail(w);
    if (*fmt == present::Format::kJson) {
      PrintJson(present::FlopsJson(*res));
    } else {
      PrintText(AsFlags(present::RenderFlops(*res, *fmt)));
    }
    return kExitOk;
  };
}

}  // namespace lmkit::cli
