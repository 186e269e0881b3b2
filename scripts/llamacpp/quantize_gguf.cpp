// llama.cpp's own Q8_0 quantizer (llama_model_quantize), timed: the peer of `lmkit quantize --format gguf-q8_0` in
// bench/gguf.sh and the byte-for-byte reference in scripts/llamacpp-check.sh. Prints the seconds on stdout.
//
// Usage: quantize_gguf IN.gguf OUT.gguf THREADS
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: quantize_gguf IN.gguf OUT.gguf THREADS\n");
    return 2;
  }
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model_quantize_params p = llama_model_quantize_default_params();
  p.nthread = std::atoi(argv[3]);
  p.ftype = LLAMA_FTYPE_MOSTLY_Q8_0;
  const auto t0 = std::chrono::steady_clock::now();
  const uint32_t rc = llama_model_quantize(argv[1], argv[2], &p);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc != 0) {
    std::fprintf(stderr, "quantize_gguf: llama_model_quantize failed (%u)\n", rc);
    return 1;
  }
  std::printf("%.4f\n", s);
  return 0;
}
