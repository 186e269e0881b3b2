// Loads a GGUF with llama.cpp's C API and prints, as one JSON line, the greedy continuation of a prompt (token ids in,
// token ids out: no tokenizer is involved, so a GGUF without one works) and the next-position logits after the whole
// prompt + continuation. Built by scripts/llamacpp/build.sh against llama.cpp from PyPI's llama-cpp-python sdist.
//
// Usage: run_gguf MODEL.gguf BACKEND_DIR N_NEW ID...
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: run_gguf MODEL.gguf BACKEND_DIR N_NEW ID...\n");
    return 2;
  }
  const int n_new = std::atoi(argv[3]);
  std::vector<llama_token> ids;
  for (int i = 4; i < argc; ++i) ids.push_back(static_cast<llama_token>(std::atoi(argv[i])));
  ggml_backend_load_all_from_path(argv[2]);  // backends built as loadable libraries (GGML_BACKEND_DL); else linked in
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    std::fprintf(stderr, "run_gguf: llama.cpp could not load %s\n", argv[1]);
    return 1;
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(ids.size() + n_new + 8);
  cp.n_threads = cp.n_threads_batch = 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  auto argmax = [&](const float* logits) {
    int best = 0;
    for (int i = 1; i < n_vocab; ++i)
      if (logits[i] > logits[best]) best = i;
    return best;
  };
  // Greedy, one token per decode after the prompt.
  llama_context* ctx = llama_init_from_model(model, cp);
  std::vector<llama_token> seq = ids;
  llama_batch batch = llama_batch_get_one(seq.data(), static_cast<int32_t>(seq.size()));
  for (int step = 0; step < n_new; ++step) {
    if (llama_decode(ctx, batch) != 0) return 1;
    seq.push_back(argmax(llama_get_logits_ith(ctx, -1)));
    batch = llama_batch_get_one(&seq.back(), 1);
  }
  llama_free(ctx);
  // The whole sequence in one batch, in a fresh context: its last position's logits.
  ctx = llama_init_from_model(model, cp);
  batch = llama_batch_get_one(seq.data(), static_cast<int32_t>(seq.size()));
  if (llama_decode(ctx, batch) != 0) return 1;
  const float* logits = llama_get_logits_ith(ctx, -1);
  std::printf("{\"n_vocab\": %d, \"tokens\": [", n_vocab);
  for (size_t i = 0; i < seq.size(); ++i) std::printf("%s%d", i ? ", " : "", seq[i]);
  std::printf("], \"final_logits\": [");
  for (int i = 0; i < n_vocab; ++i) std::printf("%s%.9g", i ? ", " : "", logits[i]);
  std::printf("]}\n");
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
