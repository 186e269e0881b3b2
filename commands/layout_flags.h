// The training-layout flags `lmkit memory` and `lmkit flops` share (--tp, --pp, --vpp, --cp, --ep, --etp, --dp,
// --sequence-parallel, --micro-batch, --global-batch, --distributed-optimizer, --per-stage, --convention, --search,
// --inter-node-gb-s, --no-overlap, --gpus-per-node, --top), bound to accounting::TrainingRequest.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "lmkit/accounting/run_training.h"

namespace lmkit::cli {

struct LayoutFlags {
  accounting::TrainingRequest req;
  std::string convention = "lmkit";
  bool no_overlap = false;
  bool distributed_optimizer = false;
};

// Adds the flags to `sub` in a "training layout" group; `search` adds --search and --top (memory only).
void AddLayoutFlags(CLI::App& sub, LayoutFlags* flags, bool search);
// True when a flag of the group was given: the command then answers with the layout model.
bool AnyLayoutFlag(const CLI::App& sub);
// Completes flags->req from the group's values (convention, overlap, ZeRO from --distributed-optimizer, micro_batch 0
// when --micro-batch was not given); errors name the field (--convention's value, --distributed-optimizer beside a
// --zero other than 1).
Status FinishLayoutFlags(const CLI::App& sub, LayoutFlags* flags, std::optional<int> zero);

}  // namespace lmkit::cli
