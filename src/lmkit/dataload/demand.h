// How fast the training step eats tokens — the demand side of the verdict, per GPU (one loader feeds one GPU).
//
// From a model: tokens/s = MFU × peak FLOP/s ÷ FLOPs per token, with FLOPs per token = 6·N + 12·L·d·T (PaLM appendix B,
// nanoGPT estimate_mfu) from lmkit's accounting tables. Or given directly: --tokens-per-s, or --step-time-ms for one
// B×T batch. Small models run far below nominal MFU (CS336's 17M-parameter baseline ≈ 2% on an H100), so a measured
// tokens/s or step time is the better input when the user has one.
//
// Contract: ResolveDemand reads only the shipped model presets / config.json and GPU table; errors are kInvalidArgument
// (non-positive values, MFU outside (0, 1]) or kNotFound (unknown model or GPU, naming it). Thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "lmkit/common/status.h"

namespace lmkit::dataload {

struct DemandSpec {
  enum class Kind { kNone, kTokensPerSecond, kStepTime, kModel };
  Kind kind = Kind::kNone;
  double tokens_per_s = 0;
  double step_time_s = 0;
  std::string model;
  std::string gpu;
  double mfu = 0;
};

struct Demand {
  bool given = false;
  std::string source;       // "tokens-per-s", "step-time", "model"
  std::string description;  // e.g. "gpt2 on H200 (bf16 989 TFLOP/s) at 40% MFU"
  double tokens_per_s = 0;
  double step_time_s = 0;      // one batch of batch_tokens
  double flops_per_token = 0;  // model only
};

// `batch_tokens` = B×T of the configuration; `context` = T (attention FLOPs depend on it).
Result<Demand> ResolveDemand(const DemandSpec& spec, uint64_t batch_tokens, uint64_t context);

}  // namespace lmkit::dataload
