// The in-memory side of bench/quant.sh: lmkit's quantization and calibration code timed on data already in memory,
// the same footing as the PyTorch side (bench/quant_torch.py times only the math on loaded tensors). Built on demand
// (`ninja -C build lmkit_bench_quant`), never in CI.
//   quantize CKPT THREADS    every 2-D tensor of a safetensors file is copied into memory (not timed), then
//                            QuantizeMatrix (per-channel, scales in the tensor's dtype, with the report's error
//                            metrics) runs over all of them into preallocated, touched code buffers. Prints the best of
//                            3 runs: wall seconds, parameters, bytes read + written.
//   calibrate NPY THREADS [FLAVOR [PLACE]]
//                            a float32 .npy of shape [batches, n] is copied into memory (not timed), then the entropy
//                            calibration (2048 bins; FLAVOR nvidia, the default: two passes, the second recounting
//                            what the first counted under a smaller running max; ort: one pass, histogram grown batch
//                            by batch) streams its rows through StreamingCalibrator. PLACE max-first / max-last swaps
//                            the sample of largest |x| with the first / last one (the counts, hence the result, do not
//                            change; the nvidia flavour's second pass then has nothing / everything to recount).
//                            Prints the best of 3 runs: wall seconds, samples, amax; on stderr, each new best's split
//                            (each pass over the samples, threshold search).
//   dtypes TENSORS THREADS   the same per-channel quantization of TENSORS generated [4096, 4096] weights (normal,
//                            sigma 0.02) stored as F32, F16 and BF16: one line per dtype with the best of 3 runs'
//                            wall seconds and parameters per second (the inputs are read natively, no detour).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lmkit/common/thread_pool.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/npy.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/quant/calibrate.h"
#include "lmkit/quant/quantizer.h"

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "quant_inmem: %s\n", what.c_str());
  std::exit(1);
}

int Quantize(const std::string& path, unsigned threads) {
  auto file = lmkit::io::SafetensorsFile::Open(path);
  if (!file.ok()) Fail(file.status().ToString());
  struct Matrix {
    lmkit::io::DType dtype;
    uint64_t rows, cols;
    std::vector<uint8_t> bytes;
    std::vector<int8_t> codes;
    std::vector<float> scales;
  };
  std::vector<Matrix> ms;
  for (const auto& t : file->tensors()) {
    if (t.shape.size() != 2) continue;
    auto data = file->Data(t);
    ms.push_back({t.dtype, t.shape[0], t.shape[1], std::vector<uint8_t>(data.begin(), data.end()),
                  std::vector<int8_t>(t.shape[0] * t.shape[1], 1), std::vector<float>(t.shape[0], 1.0f)});
  }
  lmkit::ThreadPool pool(threads);
  double best = 1e30, traffic = 0;
  uint64_t params = 0;
  for (int rep = 0; rep < 3; ++rep) {
    traffic = 0;
    params = 0;
    const double t0 = Now();
    for (Matrix& m : ms) {
      lmkit::quant::QuantizeMatrixOptions o;
      o.scale_dtype = m.dtype;
      lmkit::quant::ErrorStats st;
      auto s = lmkit::quant::QuantizeMatrix(m.bytes.data(), m.dtype, m.rows, m.cols, o, &pool, m.codes.data(),
                                            m.scales.data(), &st);
      if (!s.ok()) Fail(s.ToString());
      params += m.rows * m.cols;
      traffic += static_cast<double>(m.bytes.size() + m.codes.size() + m.rows * lmkit::io::DTypeSize(m.dtype));
    }
    best = std::min(best, Now() - t0);
  }
  std::printf("%.4f %llu %.0f\n", best, static_cast<unsigned long long>(params), traffic);
  return 0;
}

int Calibrate(const std::string& path, unsigned threads, const std::string& flavor, const std::string& place) {
  auto npy = lmkit::io::NpyFile::Open(path);
  if (!npy.ok()) Fail(npy.status().ToString());
  if (npy->dtype() != lmkit::io::DType::kF32 || npy->shape().size() != 2) Fail(path + ": want a 2-D float32 array");
  const uint64_t batches = npy->shape()[0], n = npy->shape()[1];
  std::vector<float> x(batches * n);
  std::memcpy(x.data(), npy->data().data(), x.size() * sizeof(float));
  if (!place.empty()) {
    if (place != "max-first" && place != "max-last") Fail("PLACE must be max-first or max-last");
    const auto top = std::max_element(x.begin(), x.end(), [](float a, float b) { return std::fabs(a) < std::fabs(b); });
    std::iter_swap(top, place == "max-first" ? x.begin() : x.end() - 1);
  }
  double best = 1e30, amax = 0;
  for (int rep = 0; rep < 3; ++rep) {
    lmkit::quant::CalibrateRequest o;
    o.method = lmkit::quant::CalibMethod::kEntropy;
    auto f = lmkit::quant::ParseCalibFlavor(flavor);
    if (!f.ok()) Fail(f.status().ToString());
    o.flavor = *f;
    o.threads = threads;
    const double t0 = Now();
    auto c = lmkit::quant::StreamingCalibrator::Create(o, {"x"}, path);
    if (!c.ok()) Fail(c.status().ToString());
    std::vector<double> marks = {t0};
    for (int p = 0; p < c->passes(); ++p) {
      if (auto s = c->BeginPass(p); !s.ok()) Fail(s.ToString());
      for (uint64_t b = 0; b < batches; ++b)
        if (auto s = c->Add(0, x.data() + b * n, n); !s.ok()) Fail(s.ToString());
      marks.push_back(Now());
    }
    auto table = c->Finish();
    if (!table.ok()) Fail(table.status().ToString());
    const double t1 = Now();
    if (t1 - t0 < best) {  // where the time goes, on stderr: each pass over the samples, then the threshold search
      std::string split;
      for (size_t p = 1; p < marks.size(); ++p)
        split += " pass " + std::to_string(p - 1) + " " + std::to_string(marks[p] - marks[p - 1]) + " s,";
      std::fprintf(stderr, "calibrate:%s search %.4f s\n", split.c_str(), t1 - marks.back());
    }
    best = std::min(best, t1 - t0);
    amax = table->tensors.at(0).amax;
  }
  std::printf("%.4f %llu %.6f\n", best, static_cast<unsigned long long>(x.size()), amax);
  return 0;
}

int Dtypes(int tensors, unsigned threads) {
  const uint64_t rows = 4096, cols = 4096, n = rows * cols;
  std::vector<float> src(n);
  uint64_t state = 1;
  for (float& v : src) {  // Box-Muller on a 64-bit LCG: reproducible without <random>'s unspecified distributions
    auto u = [&] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return (static_cast<double>(state >> 11) + 0.5) / 9007199254740992.0;
    };
    v = static_cast<float>(0.02 * std::sqrt(-2.0 * std::log(u())) * std::cos(6.283185307179586 * u()));
  }
  lmkit::ThreadPool pool(threads);
  for (lmkit::io::DType d : {lmkit::io::DType::kF32, lmkit::io::DType::kF16, lmkit::io::DType::kBF16}) {
    const size_t es = lmkit::io::DTypeSize(d);
    std::vector<uint8_t> w(n * es * static_cast<uint64_t>(tensors));
    for (int t = 0; t < tensors; ++t) {
      uint8_t* p = w.data() + t * n * es;
      if (d == lmkit::io::DType::kF32) std::memcpy(p, src.data(), n * 4);
      if (d == lmkit::io::DType::kF16) lmkit::io::F32ToF16(src.data(), p, n);
      if (d == lmkit::io::DType::kBF16) lmkit::io::F32ToBf16(src.data(), p, n);
    }
    std::vector<int8_t> codes(n * static_cast<uint64_t>(tensors), 1);
    std::vector<float> scales(rows);
    lmkit::quant::QuantizeMatrixOptions o;
    o.scale_dtype = d;
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      const double t0 = Now();
      for (int t = 0; t < tensors; ++t) {
        lmkit::quant::ErrorStats st;
        auto s = lmkit::quant::QuantizeMatrix(w.data() + t * n * es, d, rows, cols, o, &pool, codes.data() + t * n,
                                              scales.data(), &st);
        if (!s.ok()) Fail(s.ToString());
      }
      best = std::min(best, Now() - t0);
    }
    std::printf("%s %.4f %.0f\n", std::string(lmkit::io::DTypeName(d)).c_str(), best,
                static_cast<double>(n) * tensors / best);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && !((argc == 5 || argc == 6) && std::string(argv[1]) == "calibrate"))
    Fail("usage: quant_inmem quantize CKPT THREADS | calibrate NPY THREADS [nvidia|ort] | dtypes TENSORS THREADS");
  const std::string mode = argv[1];
  const unsigned threads = static_cast<unsigned>(std::max(1, std::atoi(argv[3])));
  if (mode == "quantize") return Quantize(argv[2], threads);
  if (mode == "calibrate") return Calibrate(argv[2], threads, argc >= 5 ? argv[4] : "nvidia", argc == 6 ? argv[5] : "");
  if (mode == "dtypes") return Dtypes(std::max(1, std::atoi(argv[2])), threads);
  Fail("unknown mode " + mode);
}
