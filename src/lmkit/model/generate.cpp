#include "lmkit/model/generate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/model/llama.h"

namespace lmkit::model {
namespace {

uint32_t Pick(const std::vector<float>& z, double temperature, std::mt19937_64& rng) {
  if (temperature == 0) return static_cast<uint32_t>(std::max_element(z.begin(), z.end()) - z.begin());
  const double mx = *std::max_element(z.begin(), z.end());
  std::vector<double> p(z.size());
  double s = 0;
  for (size_t i = 0; i < z.size(); ++i) s += p[i] = std::exp((z[i] - mx) / temperature);
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53 * s;
  double c = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    c += p[i];
    if (u < c) return static_cast<uint32_t>(i);
  }
  return static_cast<uint32_t>(p.size() - 1);
}

}  // namespace

Result<GenerateResult> Generate(const GenerateRequest& o, ProgressSink* progress) {
  const double t0 = MonotonicSeconds();
  if (o.prompt.empty()) return Status::InvalidArgument(Field("prompt") + " must give at least one token id");
  if (o.max_tokens == 0) return Status::InvalidArgument(Field("max_tokens") + " must be at least 1");
  if (!(o.temperature >= 0)) return Status::InvalidArgument(Field("temperature") + " must be >= 0");
  LMKIT_ASSIGN_OR_RETURN(LlamaModel model, LlamaModel::Load(o.model));
  const LlamaConfig& c = model.config();
  const uint64_t len = o.prompt.size() + uint64_t{o.max_tokens};
  if (len > c.max_positions)
    return Status::InvalidArgument(
        fmt::format("prompt + {} = {} exceeds max_position_embeddings {}", Field("max_tokens"), len, c.max_positions));
  for (size_t i = 0; i < o.prompt.size(); ++i)
    if (o.prompt[i] >= c.vocab)
      return Status::InvalidInput(
          o.model, fmt::format("prompt token id {} at position {} is >= vocab_size {}", o.prompt[i], i, c.vocab));
  ThreadPool pool(std::max(1u, o.threads));
  std::mt19937_64 rng(o.seed);
  GenerateResult r;
  r.vocab = c.vocab;
  KvCache cache = model.NewCache(static_cast<uint32_t>(len));
  std::vector<float> z(c.vocab);
  if (progress) progress->Begin("generating", uint64_t{o.samples} * o.max_tokens, "tokens");
  for (uint32_t s = 0; s < o.samples; ++s) {
    std::vector<uint32_t> seq = o.prompt;
    cache.Clear();
    LMKIT_RETURN_IF_ERROR(model.Forward(seq, cache, &pool, z.data(), false));
    for (uint32_t i = 0; i < o.max_tokens; ++i) {
      seq.push_back(Pick(z, o.temperature, rng));
      // The last id is fed too: its logits are the next-position prediction reported as final_logits.
      if (i + 1 < o.max_tokens || s == 0)
        LMKIT_RETURN_IF_ERROR(model.Forward(std::span<const uint32_t>(&seq.back(), 1), cache, &pool, z.data(), false));
      if (progress) progress->Update(uint64_t{s} * o.max_tokens + i + 1);
    }
    if (s == 0) r.final_logits = z;
    r.sequences.push_back(std::move(seq));
  }
  if (progress) progress->Finish();
  r.seconds = MonotonicSeconds() - t0;
  return r;
}

}  // namespace lmkit::model
