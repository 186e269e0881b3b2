// `lmkit memory`: weights, gradients, optimizer state, activations, KV cache and overhead per GPU; fit and max batch.
#include "command.h"
#include "layout_flags.h"
#include "lmkit/accounting/run_memory.h"
#include "lmkit/present/accounting.h"
#include "lmkit/present/accounting_svg.h"
#include "model_args.h"

namespace lmkit::cli {

namespace {
const char* kMemoryConventions = R"(Conventions (defaults; flags change them):
  Training bytes/param (weights + grads + optimizer): fp32 AdamW 4+4+8 = 16; bf16/fp16 mixed precision AdamW
    2+2+12 (fp32 master, m, v) = 16; adamw8bit 2+2+2 = 6; sgd (momentum) 2+2+4 = 8.
  ZeRO-1 shards optimizer state, ZeRO-2 also gradients, ZeRO-3 also weights, over --gpus data-parallel ranks.
  Activations: Korthikanti et al. 2022, s*b*h*(34 + 5*a*s/h) bytes per layer at 16 bits; selective recomputation
    drops 5*a*s/h, full keeps 2*s*b*h per layer; plus final norm input and fp32 logits. --activations cs336 counts
    the tensors of CS336's adamwAccounting instead. Training holds no KV cache.
  Inference: weights at --dtype; fp8/int8 apply to the decoder's Linear layers (plus an fp16 scale per output
    channel; embeddings, LM head and routers stay 16-bit, as llm-compressor/vLLM recipes do) unless --quant-scope all.
    KV cache 2*layers*kv_heads*head_dim per token at --kv-dtype (default: the activations' dtype, vLLM's auto; MLA:
    kv_lora_rank + rope dim; sliding windows cap it), prefill working set. --gpus N is tensor parallelism: N must
    divide the heads; weights, MLP and vocabulary split N ways, KV heads too until there are fewer than N (then one
    per GPU, replicated, as vLLM does); norms and routers are replicated.
  Overhead: 1 GiB for the CUDA context and workspaces (--overhead-gib). --batch is per GPU; --gpu gives the capacity
    (datasheet GB) for the fit verdict and the largest batch. See docs/accounting.md.)";
}  // namespace

namespace {
const char* kLayoutConventions = R"(
With a layout flag (--tp, --pp, --vpp, --cp, --ep, --dp, --sequence-parallel, --micro-batch, --global-batch,
  --distributed-optimizer, --per-stage, --convention, --search): --gpus is the total GPU count (DP = gpus / (tp*pp*cp)),
  --batch the micro-batch; memory is per GPU on the most loaded pipeline stage (--per-stage: every stage) under 1F1B
  (interleaved with --vpp), beside Megatron-LM's theoretical_memory_usage.py (--convention megatron leads with it).
  With --gpu the step time follows (see lmkit flops --help). --search lists the layouts of --gpus GPUs that fit
  (needs --gpu and --global-batch). --svg draws the memory by stage.)";

}  // namespace

RunFn SetupMemory(CLI::App& sub, const GlobalOptions& g) {
  struct State {
    ModelArgs args;
    accounting::MemoryRequest req;
    std::string mode = "training", dtype = "bf16", optimizer = "adamw", recompute = "none", activations = "korthikanti";
    std::string kv_dtype, quant_scope;
    int zero = 0;
    int64_t gpus = 1;
    LayoutFlags layout;
  };
  auto st = std::make_shared<State>();
  st->args.Bind(sub);
  auto& o = st->req;
  sub.add_option("--mode", st->mode, EnumChoices(accounting::ModeNames()) + " (default: training)");
  sub.add_option("--dtype", st->dtype,
                 EnumChoices(accounting::DtypeNames(), ", ") + " (fp8/int8 and tf32: inference only) (default: bf16)");
  sub.add_option("--optimizer", st->optimizer, EnumChoices(accounting::OptimizerNames()) + " (default: adamw)");
  sub.add_option("--recompute", st->recompute,
                 "activation recomputation: " + EnumChoices(accounting::RecomputeNames()) + " (default: none)");
  sub.add_option("--activations", st->activations,
                 "activation model: " + EnumChoices(accounting::ActivationModelNames()) + " (default: korthikanti)");
  sub.add_option("--zero", st->zero, "ZeRO stage 0, 1, 2 or 3 (default: 0)")
      ->transform(DecimalInteger())
      ->check(CLI::Range(0, 3));
  sub.add_option("--kv-dtype", st->kv_dtype,
                 "inference: dtype of the KV cache: " + EnumChoices(accounting::DtypeNames()) +
                     " (default: bf16; fp32 for fp32 weights)");
  sub.add_option("--quant-scope", st->quant_scope,
                 "inference with an 8-bit --dtype: the weights it applies to: " +
                     EnumChoices(accounting::QuantScopeNames()) + " (default: linear, the decoder's Linear layers)");
  sub.add_option("--gpus", st->gpus,
                 "GPUs (data-parallel ranks in training, tensor-parallel degree in inference) (default: 1)");
  sub.add_option("--batch,-B", o.batch, "sequences per GPU (default: 1)");
  sub.add_option("--seq-len,-T", o.seq_len, "tokens per sequence (training) or context (inference) (default: 1024)");
  sub.add_option("--gpu", o.gpu, "GPU from data/gpus.json: its memory decides 'fits' and the largest batch");
  sub.add_option("--gpu-spec", o.gpu_spec, "a JSON file describing the GPU (a gpus.json entry), instead of --gpu");
  sub.add_option("--capacity-gb", o.capacity_gb, "memory per GPU in GB (1e9 bytes) instead of --gpu's");
  sub.add_option("--overhead-gib", o.overhead_gib, "fixed allowance for CUDA context and workspaces (default: 1)");
  AddLayoutFlags(sub, &st->layout, true);
  sub.footer(std::string(kMemoryConventions) + kLayoutConventions);
  return [st, &g, &sub]() -> int {
    auto fail = [](const Status& s) { return ReportError("memory", s, kAccountingFlags); };
    auto& req = st->req;
    auto src = st->args.Source(AnyDimFlag(sub));
    if (!src.ok()) return fail(src.status());
    req.source = *src;
    auto mode = ParseEnum(accounting::ModeNames(), st->mode, "mode");
    if (!mode.ok()) return fail(mode.status());
    req.mode = *mode;
    auto dt = accounting::ParseDtype(st->dtype);
    if (!dt.ok()) return fail(dt.status());
    req.dtype = *dt;
    for (Status s :
         {ParseGiven(sub, "--optimizer", st->optimizer, accounting::OptimizerNames(), &req.optimizer),
          ParseGiven(sub, "--recompute", st->recompute, accounting::RecomputeNames(), &req.recompute),
          ParseGiven(sub, "--activations", st->activations, accounting::ActivationModelNames(), &req.activations),
          ParseGiven(sub, "--kv-dtype", st->kv_dtype, &req.kv_dtype),
          ParseGiven(sub, "--quant-scope", st->quant_scope, accounting::QuantScopeNames(), &req.quant_scope)})
      if (!s.ok()) return fail(s);
    req.zero = IfGiven(sub, "--zero", st->zero);
    req.gpus = IfGiven(sub, "--gpus", st->gpus);
    auto fmt = ParseEnum(present::FormatNames(), g.json ? "json" : st->args.format, "format");
    if (!fmt.ok()) return fail(fmt.status());
    auto sw = accounting::ParseSweep(st->args.sweep);
    if (!sw.ok()) return fail(sw.status());
    req.sweep = *sw;
    req.svg_path = st->args.svg;
    // Any layout flag asks for a training layout's memory (RunMemory answers with it).
    if (AnyLayoutFlag(sub)) {
      if (Status s = FinishLayoutFlags(sub, &st->layout, req.zero); !s.ok()) return fail(s);
      req.layout = st->layout.req;
    }
    auto res = accounting::RunMemory(req);
    if (!res.ok()) return fail(res.status());
    if (std::string note = present::MemoryIgnoredNote(*res); !note.empty()) Note(g, "memory", AsFlags(note));
    if (!res->svg_path.empty())
      if (Status w = WriteChart(res->svg_path, present::MemorySvg(*res)); !w.ok()) return fail(w);
    if (*fmt == present::Format::kJson) {
      PrintJson(present::MemoryJson(*res));
    } else {
      PrintText(AsFlags(present::RenderMemory(*res, *fmt)));
    }
    return kExitOk;
  };
}

}  // namespace lmkit::cli
