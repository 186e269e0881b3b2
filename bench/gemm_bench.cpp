// The GEMM side of bench/model.sh: Linear::Apply on the shapes of one Llama layer and its head, timed on data
// already in memory. Built on demand (`cmake --build build --target lmkit_bench_gemm`), never in CI.
//   gemm_bench ROWS THREADS KIND OUT,IN [OUT,IN ...]
// KIND: f32, bf16, fp16, int8 (dynamic per-row activations), or blas: the same fp32 product through a CBLAS library's
// cblas_sgemm (x times W^T, row-major), loaded at run time from $LMKIT_BENCH_CBLAS (default libopenblas.so.0, e.g.
// Debian's libopenblas0-pthread), with its thread count set to THREADS where it exports openblas_set_num_threads.
// Prints one line per shape (best of 3 runs: seconds, GFLOP/s with 2 * rows * out * in flops, by wall time and by
// process CPU time) and a total line.
#include <dlfcn.h>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lmkit/common/thread_pool.h"
#include "lmkit/io/dtype.h"
#include "lmkit/model/gemm_f32.h"
#include "lmkit/model/linear.h"

using namespace lmkit;

namespace {
// CPU time of the whole process (all threads): on a shared machine, time-slicing does not count against it.
double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s ROWS THREADS f32|bf16|fp16|int8|blas OUT,IN [OUT,IN ...]\n", argv[0]);
    return 2;
  }
  const uint64_t rows = std::strtoull(argv[1], nullptr, 10);
  const unsigned threads = static_cast<unsigned>(std::atoi(argv[2]));
  const std::string kind = argv[3];
  ThreadPool pool(threads);
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
  Sgemm sgemm = nullptr;
  std::string blas_name;
  if (kind == "blas") {
    const char* lib = std::getenv("LMKIT_BENCH_CBLAS");
    blas_name = lib && *lib ? lib : "libopenblas.so.0";
    void* h = dlopen(blas_name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::fprintf(stderr, "gemm_bench: cannot load %s: %s\n", blas_name.c_str(), dlerror());
      return 1;
    }
    sgemm = reinterpret_cast<Sgemm>(dlsym(h, "cblas_sgemm"));
    if (!sgemm) {
      std::fprintf(stderr, "gemm_bench: %s has no cblas_sgemm\n", blas_name.c_str());
      return 1;
    }
    if (auto set = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads")))
      set(static_cast<int>(threads));
    if (auto config = reinterpret_cast<const char* (*)()>(dlsym(h, "openblas_get_config")))
      blas_name += std::string(" (") + config() + ")";
  }
  double total_s = 0, total_cpu = 0, total_flop = 0;
  for (int a = 4; a < argc; ++a) {
    unsigned out = 0, in = 0;
    if (std::sscanf(argv[a], "%u,%u", &out, &in) != 2) return 2;
    model::Linear l;
    l.out = out;
    l.in = in;
    std::vector<float> w(size_t{out} * in), x(rows * in), y(rows * out);
    uint32_t s = 12345;
    auto rnd = [&] {
      s = s * 1664525u + 1013904223u;
      return static_cast<float>(static_cast<int32_t>(s >> 8) - (1 << 23)) / static_cast<float>(1 << 23);
    };
    for (float& v : w) v = 0.02f * rnd();
    for (float& v : x) v = rnd();
    if (kind == "bf16" || kind == "fp16") {
      l.kind = kind == "bf16" ? model::Linear::Kind::kBf16 : model::Linear::Kind::kFp16;
      l.half.resize(w.size());
      if (kind == "bf16")
        io::F32ToBf16(w.data(), l.half.data(), w.size());
      else
        io::F32ToF16(w.data(), l.half.data(), w.size());
    } else if (kind == "int8") {
      l.kind = model::Linear::Kind::kInt8Dynamic;
      l.codes.resize(w.size());
      for (size_t i = 0; i < w.size(); ++i) l.codes[i] = static_cast<int8_t>(std::lround(w[i] / 0.02f * 127.0f));
      l.weight_scale.assign(out, 0.02f / 127.0f);
    } else {
      l.weight = w;
    }
    if (!sgemm) l.Pack();
    double best = 1e30, best_cpu = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = CpuSeconds();
      if (sgemm) {
        constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
        const int m = static_cast<int>(rows), n = static_cast<int>(out), k = static_cast<int>(in);
        sgemm(kRowMajor, kNoTrans, kTrans, m, n, k, 1.0f, x.data(), k, w.data(), k, 0.0f, y.data(), n);
      } else {
        l.Apply(x.data(), rows, y.data(), &pool);
      }
      best_cpu = std::min(best_cpu, CpuSeconds() - c0);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double flop = 2.0 * static_cast<double>(rows) * out * in;
    std::printf("%s rows %llu out %u in %u threads %u: %.4f s, %.1f GFLOP/s; %.1f GFLOP per CPU second\n", kind.c_str(),
                static_cast<unsigned long long>(rows), out, in, threads, best, flop / best / 1e9,
                flop / best_cpu / 1e9);
    total_s += best;
    total_cpu += best_cpu;
    total_flop += flop;
  }
  std::printf("%s total (%s): %.4f s, %.1f GFLOP/s; %.1f GFLOP per CPU second\n", kind.c_str(),
              sgemm ? blas_name.c_str() : model::gemm::GemmF32Isa(), total_s, total_flop / total_s / 1e9,
              total_flop / total_cpu / 1e9);
  return 0;
}
