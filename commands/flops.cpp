// `lmkit flops`: the matmul inventory, FLOPs, parameters, 6ND, step time and roofline of a transformer step.
#include "commands.h"
#include "lmkit/common/atomic_file.h"
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
  Backward = 2 x forward; --recompute full adds one more forward. 6*N*D uses N = active parameters.
  MoE: each token runs top_k routed experts (plus shared ones); the router is its own component.
Default step: batch 1 x seq-len 1024, bf16 peaks. See docs/accounting.md for every formula and its source.)";
}  // namespace

RunFn SetupFlops(CLI::App& sub, const GlobalOptions& g) {
  struct State {
    ModelArgs args;
    accounting::FlopsRequest req;
    bool no_lm_head = false;
    std::string recompute = "none", dtype = "bf16";
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
  sub.add_option("--recompute", st->recompute, "activation recomputation: none, selective or full [none]");
  sub.add_option("--gpu", r.gpu, "GPU from data/gpus.json (a100, h100, h200, l4, 4090 ...): roofline and step time");
  sub.add_option("--mfu", r.mfu, "model FLOPs utilisation in (0, 1] for the step time (needs --gpu)");
  sub.add_option("--dtype", st->dtype,
                 "with --gpu: dtype of the peak and of the roofline's bytes: fp32, tf32, bf16, fp16, fp8, int8 [bf16]");
  sub.add_option("--steps", r.steps, "with --gpu and --mfu: total time of this many steps");
  sub.footer(kFlopsConventions);
  return [st, &g, &sub]() -> int {
    auto& a = st->args;
    auto& req = st->req;
    auto src = a.Source(AnyDimFlag(sub));
    if (!src.ok()) return ReportError("flops", src.status());
    req.source = *src;
    req.options.lm_head = !st->no_lm_head;
    auto rc = accounting::ParseRecompute(st->recompute);
    if (!rc.ok()) return ReportError("flops", rc.status());
    req.options.recompute = *rc;
    auto dt = accounting::ParseDtype(st->dtype);
    if (!dt.ok()) return ReportError("flops", dt.status());
    // FLOP counts do not depend on the dtype; without a GPU it would be accepted and change nothing (as --mfu).
    if (sub.get_option("--dtype")->count() > 0 && req.gpu.empty())
      return UsageError("flops", "--dtype needs --gpu (it picks the GPU's peak and the roofline's bytes)");
    req.dtype = *dt;
    auto fmt = accounting::ParseFormat(g.json ? "json" : a.format);
    if (!fmt.ok()) return ReportError("flops", fmt.status());
    auto sw = accounting::ParseSweep(a.sweep);
    if (!sw.ok()) return ReportError("flops", sw.status());
    req.sweep = *sw;
    req.svg_path = a.svg;
    if (Status st_svg = CheckOutputIsNotAnInput(a.InputFiles(*sw), req.svg_path, "--svg"); !st_svg.ok())
      return ReportError("flops", st_svg);
    auto res = accounting::RunFlops(req);
    if (!res.ok()) return ReportError("flops", res.status());
    if (!res->svg_path.empty())
      if (Status s = WriteFileAtomically(res->svg_path, present::FlopsSweepSvg(*res)); !s.ok())
        return ReportError("flops", s);
    if (*fmt == accounting::Format::kJson) {
      PrintJson(accounting::FlopsToJson(*res));
    } else {
      PrintText(accounting::RenderFlops(*res, *fmt));
    }
    return kExitOk;
  };
}

}  // namespace lmkit::cli
