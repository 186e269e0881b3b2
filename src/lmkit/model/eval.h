// `lmkit eval`: mean negative log-likelihood and perplexity of a model over a token file, optionally compared with a
// second checkpoint position by position (KL divergence, top-1 agreement, perplexity delta).
//
// Contract: the token file (.bin/.npy as `lmkit bpe encode` writes them) is cut into consecutive windows of `seq_len`
// tokens (the last window may be shorter; one of a single token is skipped); each window is an independent sequence
// from position 0, and every token after the first of a window is scored given the ones before it. NLL is in nats,
// averaged over scored tokens; perplexity = exp(mean NLL). With `compare`, both models see the same windows and, per
// scored position, KL(P_model || P_compare) = sum_v p_v (log p_v - log q_v) over the full vocabulary (log-softmax in
// double); mean and p99 (nearest rank) of those KLs, the share of positions whose arg-max (lowest index on ties)
// agree, and ppl_delta = ppl(compare) - ppl(model). Errors: kInvalidArgument for seq_len < 2 or above
// max_position_embeddings; kInvalidInput for a token id >= vocab_size (naming the token file and the position), models
// whose vocab sizes differ, fewer than 2 tokens; load errors as LlamaModel::Load. Deterministic for any thread count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lmkit/common/json.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/io/token_dtype.h"

namespace lmkit::model {

struct EvalRequest {
  std::string model;
  std::string compare;  // optional second checkpoint
  std::string tokens;
  io::TokenDtype bin_dtype = io::TokenDtype::kU16;  // for headerless .bin token files
  uint32_t seq_len = 0;                             // 0 = min(max_position_embeddings, 1024)
  uint64_t max_tokens = 0;                          // 0 = the whole file
  unsigned threads = 1;
};

// The second model of `--compare` against the first: its own NLL, and KL(model || compare) per scored token.
struct EvalComparison {
  std::string model, mode;
  double mean_nll = 0, perplexity = 0, ppl_delta = 0;  // ppl_delta: its perplexity less the model's
  double mean_kl = 0, p99_kl = 0, max_kl = 0, top1_agreement = 0;
  // Per position in a window: element t is the KL at the prediction of token t + 1, mean and max over the windows
  // long enough to have it (seq_len - 1 elements, fewer when every window is shorter).
  std::vector<double> kl_mean_by_position, kl_max_by_position;
};

struct EvalResult {
  std::string model, mode;
  uint32_t seq_len = 0;
  uint64_t sequences = 0;
  uint64_t tokens_scored = 0;
  double mean_nll = 0, perplexity = 0;
  std::optional<EvalComparison> compare;  // with options.compare
  double seconds = 0;
};

Result<EvalResult> Evaluate(const EvalRequest& options, ProgressSink* progress);

}  // namespace lmkit::model
