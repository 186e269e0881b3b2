// `lmkit memory`: weights, gradients, optimizer state, activations, KV cache and overhead per GPU; fit and max batch.
#include <fmt/format.h>

#include <cmath>

#include "commands.h"
#include "lmkit/common/atomic_file.h"
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
  Inference: weights at --dtype (int8/fp8 add an fp16 scale per output channel), KV cache 2*layers*kv_heads*head_dim
    per token (MLA: kv_lora_rank + rope dim; sliding windows cap it), prefill working set; --gpus splits them.
  Overhead: 1 GiB for the CUDA context and workspaces (--overhead-gib). --batch is per GPU; --gpu gives the capacity
    (datasheet GB) for the fit verdict and the largest batch. See docs/accounting.md.)";
}  // namespace

RunFn SetupMemory(CLI::App& sub, const GlobalOptions& g) {
  struct State {
    ModelArgs args;
    accounting::MemoryRequest req;
    std::string mode = "training", dtype = "bf16", optimizer = "adamw", recompute = "none", activations = "korthikanti";
    double overhead_gib = 1.0;
    double capacity_gb = 0;
  };
  auto st = std::make_shared<State>();
  st->args.Bind(sub);
  auto& o = st->req.options;
  sub.add_option("--mode", st->mode, "training or inference [training]");
  sub.add_option("--dtype", st->dtype, "fp32, bf16, fp16 (training and inference), fp8, int8 (inference) [bf16]");
  sub.add_option("--optimizer", st->optimizer, "adamw, adamw8bit or sgd [adamw]");
  sub.add_option("--recompute", st->recompute, "activation recomputation: none, selective or full [none]");
  sub.add_option("--activations", st->activations, "activation model: korthikanti or cs336 [korthikanti]");
  sub.add_option("--zero", o.zero, "ZeRO stage 0, 1, 2 or 3 [0]")->transform(DecimalInteger())->check(CLI::Range(0, 3));
  sub.add_option("--gpus", o.gpus, "GPUs (data-parallel ranks in training, tensor-parallel split in inference) [1]");
  sub.add_option("--batch,-B", o.batch, "sequences per GPU [1]");
  sub.add_option("--seq-len,-T", o.seq_len, "tokens per sequence (training) or context (inference) [1024]");
  sub.add_option("--gpu", st->req.gpu, "GPU from data/gpus.json: its memory decides 'fits' and the largest batch");
  sub.add_option("--capacity-gb", st->capacity_gb, "memory per GPU in GB (1e9 bytes) instead of --gpu's");
  sub.add_option("--overhead-gib", st->overhead_gib, "fixed allowance for CUDA context and workspaces [1]");
  sub.footer(kMemoryConventions);
  return [st, &g, &sub]() -> int {
    auto& req = st->req;
    auto src = st->args.Source(AnyDimFlag(sub));
    if (!src.ok()) return ReportError("memory", src.status());
    req.source = *src;
    auto& opt = req.options;
    auto mode = accounting::ParseMode(st->mode);
    if (!mode.ok()) return ReportError("memory", mode.status());
    opt.mode = *mode;
    auto dt = accounting::ParseDtype(st->dtype);
    if (!dt.ok()) return ReportError("memory", dt.status());
    opt.dtype = *dt;
    auto op = accounting::ParseOptimizer(st->optimizer);
    if (!op.ok()) return ReportError("memory", op.status());
    opt.optimizer = *op;
    auto rc = accounting::ParseRecompute(st->recompute);
    if (!rc.ok()) return ReportError("memory", rc.status());
    opt.recompute = *rc;
    auto am = accounting::ParseActivationModel(st->activations);
    if (!am.ok()) return ReportError("memory", am.status());
    opt.activations = *am;
    if (opt.mode == accounting::Mode::kInference) {
      // Training-only choices would otherwise be accepted and silently ignored, as if they had been accounted for.
      std::string ignored;
      for (const char* flag : {"--optimizer", "--recompute", "--activations", "--zero"})
        if (sub.get_option(flag)->count() > 0) ignored += std::string(ignored.empty() ? "" : ", ") + flag;
      if (!ignored.empty()) Note(g, "memory", "note: " + ignored + " only apply to --mode training; ignored");
    }
    // NaN passes a plain `< 0` test, and llround of NaN, inf or anything past 2^63 is undefined (it printed an
    // overhead of 9,223,372,036,854,775,808 bytes and a max batch of -2^63). 1e9 GB(GiB) bounds both to the 1e18-byte
    // range the estimate itself is checked against, so every sum and the max batch stay exact.
    constexpr double kMaxGb = 1e9;
    if (!(st->overhead_gib >= 0 && st->overhead_gib <= kMaxGb))
      return UsageError("memory",
                        fmt::format("--overhead-gib must be a number from 0 to 1e9 (got {})", st->overhead_gib));
    opt.overhead_bytes = static_cast<uint64_t>(std::llround(st->overhead_gib * 1073741824.0));
    if (!(st->capacity_gb >= 0 && st->capacity_gb <= kMaxGb))
      return UsageError("memory",
                        fmt::format("--capacity-gb must be a number from 0 to 1e9 (got {})", st->capacity_gb));
    opt.capacity_bytes = st->capacity_gb * 1e9;
    auto fmt = accounting::ParseFormat(g.json ? "json" : st->args.format);
    if (!fmt.ok()) return ReportError("memory", fmt.status());
    auto sw = accounting::ParseSweep(st->args.sweep);
    if (!sw.ok()) return ReportError("memory", sw.status());
    req.sweep = *sw;
    req.svg_path = st->args.svg;
    if (Status st_svg = CheckOutputIsNotAnInput(st->args.InputFiles(*sw), req.svg_path, "--svg"); !st_svg.ok())
      return ReportError("memory", st_svg);
    auto res = accounting::RunMemory(req);
    if (!res.ok()) return ReportError("memory", res.status());
    if (!res->svg_path.empty())
      if (Status s = WriteFileAtomically(res->svg_path, present::MemorySweepSvg(*res)); !s.ok())
        return ReportError("memory", s);
    if (*fmt == accounting::Format::kJson) {
      PrintJson(accounting::MemoryToJson(*res));
    } else {
      PrintText(accounting::RenderMemory(*res, *fmt));
    }
    return kExitOk;
  };
}

}  // namespace lmkit::cli
