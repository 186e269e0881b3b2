#include "layout_flags.h"

#include "model_args.h"

namespace lmkit::cli {

namespace {
const char* const kLayoutFlagNames[] = {"--tp",
                                        "--pp",
                                        "--vpp",
                                        "--cp",
                                        "--ep",
                                        "--etp",
                                        "--dp",
                                        "--sequence-parallel",
                                        "--micro-batch",
                                        "--global-batch",
                                        "--distributed-optimizer",
                                        "--per-stage",
                                        "--convention",
                                        "--search",
                                        "--inter-node-gb-s",
                                        "--no-overlap",
                                        "--gpus-per-node",
                                        "--top"};
}  // namespace

void AddLayoutFlags(CLI::App& sub, LayoutFlags* f, bool search) {
  auto& l = f->req.layout;
  const char* g = "training layout (Megatron-style; any of these switches to the per-stage model)";
  sub.add_option("--tp", l.tp, "tensor-parallel degree (default: 1)")->group(g);
  sub.add_option("--pp", l.pp, "pipeline stages (default: 1)")->group(g);
  sub.add_option("--vpp", l.vpp, "virtual stages per pipeline rank: interleaved 1F1B (default: 1)")->group(g);
  sub.add_option("--cp", l.cp, "context-parallel degree (splits the sequence) (default: 1)")->group(g);
  sub.add_option("--ep", l.ep, "expert-parallel degree (MoE) (default: 1)")->group(g);
  sub.add_option("--etp", l.etp, "expert tensor-parallel degree (default: --tp)")->group(g);
  sub.add_option("--dp", l.dp, "data-parallel degree (default: --gpus / (tp x pp x cp), else 1)")->group(g);
  sub.add_flag("--sequence-parallel", l.sequence_parallel, "sequence parallelism (norms, dropout split by TP)")
      ->group(g);
  sub.add_option("--micro-batch", l.micro_batch, "sequences per micro-batch (default: --batch, else 1)")->group(g);
  sub.add_option("--global-batch", l.global_batch, "sequences per step over all ranks (default: micro-batch x dp)")
      ->group(g);
  sub.add_flag("--distributed-optimizer", f->distributed_optimizer,
               "the distributed optimizer of Megatron (= --zero 1)")
      ->group(g);
  sub.add_flag("--per-stage", f->req.per_stage, "report every pipeline stage, not only the most loaded")->group(g);
  sub.add_option("--convention", f->convention,
                 "memory headline: " + EnumChoices(accounting::MemoryConventionNames()) +
                     " (megatron: Megatron-LM's theoretical_memory_usage.py) (default: lmkit)")
      ->group(g);
  sub.add_option("--inter-node-gb-s", f->req.inter_node_gb_s, "GB/s per GPU between nodes, per direction (default: 50)")
      ->group(g);
  sub.add_flag("--no-overlap", f->no_overlap, "DP gradient sync does not overlap compute")->group(g);
  sub.add_option("--gpus-per-node", l.gpus_per_node, "GPUs per node (which collectives leave it) (default: 8)")
      ->group(g);
  if (search) {
    sub.add_flag("--search", f->req.search,
                 "list the layouts of --gpus GPUs that fit, fastest first (needs --gpu, --global-batch)")
        ->group(g);
    sub.add_option("--top", f->req.top, "with --search: layouts listed (default: 10)")->group(g);
  }
}

bool AnyLayoutFlag(const CLI::App& sub) {
  for (const char* name : kLayoutFlagNames)
    if (sub.get_option_no_throw(name) != nullptr && sub.count(name) > 0) return true;
  return false;
}

Status FinishLayoutFlags(const CLI::App& sub, LayoutFlags* f, std::optional<int> zero) {
  if (sub.count("--micro-batch") == 0) f->req.layout.micro_batch = 0;  // the command's --batch (the core's rule)
  LMKIT_ASSIGN_OR_RETURN(f->req.convention,
                         ParseEnum(accounting::MemoryConventionNames(), f->convention, "convention"));
  f->req.overlap = !f->no_overlap;
  if (f->distributed_optimizer && zero && *zero != 1)
    return Status::InvalidArgument(Field("distributed_optimizer") + " is ZeRO-1; it contradicts " + Field("zero") +
                                   " " + std::to_string(*zero));
  f->req.layout.zero = f->distributed_optimizer ? 1 : zero.value_or(0);
  return Status::Ok();
}

}  // namespace lmkit::cli
