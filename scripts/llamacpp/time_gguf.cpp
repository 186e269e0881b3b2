// Times llama.cpp on a GGUF the way bench/model.sh times `lmkit eval` and `lmkit generate`, through llama.cpp's C API
// (token ids in: no tokenizer is involved, so lmkit's GGUFs without one work; llama-perplexity needs one):
//   scoring: the token file cut into windows of SEQ tokens, each a fresh sequence decoded in one batch with every
//     position's logits; mean NLL (log-softmax in double) of every token after the first of a window, as `lmkit eval`;
//   decoding: one token, then DECODE tokens one at a time, greedy (argmax), as `lmkit generate`'s decode loop.
// Prints one JSON line: mean_nll, tokens_scored, eval_seconds and eval_cpu_seconds (the scoring's decode calls, wall
// and process CPU time), decode_tokens, decode_seconds and decode_cpu_seconds (the single-token calls). Built by
// scripts/llamacpp/build.sh.
//
// Usage: time_gguf MODEL.gguf BACKEND_DIR THREADS TOKENS.u32 SEQ DECODE
//   TOKENS.u32: little-endian uint32 token ids, no header.
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llama.h"

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double Cpu() {  // the process's CPU time (all threads): time-slicing by other processes does not count
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: time_gguf MODEL.gguf BACKEND_DIR THREADS TOKENS.u32 SEQ DECODE\n");
    return 2;
  }
  const int threads = std::atoi(argv[3]), seq = std::atoi(argv[5]), n_decode = std::atoi(argv[6]);
  std::vector<llama_token> tokens;
  {
    FILE* f = std::fopen(argv[4], "rb");
    if (!f) {
      std::fprintf(stderr, "time_gguf: cannot open %s\n", argv[4]);
      return 1;
    }
    uint32_t v;
    while (std::fread(&v, 4, 1, f) == 1) tokens.push_back(static_cast<llama_token>(v));
    std::fclose(f);
  }
  ggml_backend_load_all_from_path(argv[2]);
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    std::fprintf(stderr, "time_gguf: llama.cpp could not load %s\n", argv[1]);
    return 1;
  }
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  llama_context_params cp = llama_context_default_params();
  const int ctx_len = seq > n_decode + 1 ? seq : n_decode + 1;
  cp.n_ctx = cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(ctx_len);
  cp.n_threads = cp.n_threads_batch = threads;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  llama_batch batch = llama_batch_init(seq, 0, 1);

  double nll = 0, eval_s = 0, eval_cpu = 0;
  long scored = 0;
  for (size_t w = 0; w + 1 < tokens.size(); w += seq) {
    const int n = static_cast<int>(tokens.size() - w < size_t(seq) ? tokens.size() - w : seq);
    if (n < 2) break;
    llama_memory_clear(llama_get_memory(ctx), true);
    batch.n_tokens = n;
    for (int i = 0; i < n; ++i) {
      batch.token[i] = tokens[w + i];
      batch.pos[i] = i;
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = 1;
    }
    const double t0 = Now(), c0 = Cpu();
    if (llama_decode(ctx, batch) != 0) return 1;
    eval_s += Now() - t0;
    eval_cpu += Cpu() - c0;
    for (int i = 0; i + 1 < n; ++i) {
      const float* z = llama_get_logits_ith(ctx, i);
      double mx = z[0];
      for (int v = 1; v < n_vocab; ++v) mx = z[v] > mx ? z[v] : mx;
      double s = 0;
      for (int v = 0; v < n_vocab; ++v) s += std::exp(z[v] - mx);
      nll += std::log(s) + mx - z[tokens[w + i + 1]];
      ++scored;
    }
  }

  llama_memory_clear(llama_get_memory(ctx), true);
  llama_token cur = tokens.empty() ? 1 : tokens[0];
  double decode_s = 0, decode_cpu = 0;
  for (int step = 0; step <= n_decode; ++step) {
    llama_batch one = llama_batch_get_one(&cur, 1);
    const double t0 = Now(), c0 = Cpu();
    if (llama_decode(ctx, one) != 0) return 1;
    if (step > 0) {  // the first call is the one-token prompt
      decode_s += Now() - t0;
      decode_cpu += Cpu() - c0;
    }
    const float* z = llama_get_logits_ith(ctx, -1);
    int best = 0;
    for (int v = 1; v < n_vocab; ++v)
      if (z[v] > z[best]) best = v;
    cur = best;
  }
  std::printf(
      "{\"mean_nll\": %.9f, \"tokens_scored\": %ld, \"eval_seconds\": %.6f, \"eval_cpu_seconds\": %.6f, "
      "\"decode_tokens\": %d, \"decode_seconds\": %.6f, \"decode_cpu_seconds\": %.6f, \"n_vocab\": %d}\n",
      scored ? nll / scored : 0.0, scored, eval_s, eval_cpu, n_decode, decode_s, decode_cpu, n_vocab);
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
