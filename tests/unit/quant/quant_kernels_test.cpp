// CUDA kernels against their CPU references, bit for bit. Without a CUDA build or a device these WARN and return
// (scripts/gpu-check.sh runs them on a machine with a GPU). The hidden "[.cuda-bench]" case prints kernel bandwidth.
#include "lmkit/cuda/quant_kernels.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "lmkit/cuda/device.h"
#include "lmkit/io/dtype.h"
#include "lmkit/quant/histogram.h"
#include "lmkit/quant/quantizer.h"

using namespace lmkit;

namespace {

bool DeviceOrWarn() {
  if (!cuda::CudaBuildEnabled()) {
    WARN("built without CUDA: kernel test skipped");
    return false;
  }
  auto devs = cuda::ListCudaDevices();
  if (devs.devices.empty()) {
    WARN("no CUDA device (" + devs.why_none + "): kernel test skipped");
    return false;
  }
  return true;
}

cuda::ElemType ToElem(io::DType t) {
  return t == io::DType::kF32 ? cuda::ElemType::kF32 : t == io::DType::kF16 ? cuda::ElemType::kF16 : cuda::ElemType::kBF16;
}

}  // namespace

TEST_CASE("cuda: the stub or the device agree with the build", "[quant][cuda]") {
  int8_t c = 0;
  float s = 0, x = 1.0f;
  Status st = cuda::QuantizePerChannelHost(&x, cuda::ElemType::kF32, 1, 1, quant::Int8Convention::kHalfStep,
                                           cuda::ElemType::kF32, &c, &s);
  if (!cuda::CudaBuildEnabled() || cuda::ListCudaDevices().devices.empty()) {
    CHECK(st.code() == ErrorCode::kUnsupported);
  } else {
    REQUIRE(st.ok());
    CHECK(c == 127);
    CHECK(s == 1.0f / 127.5f);
  }
}

TEST_CASE("cuda: per-channel quantize kernel equals the CPU reference bit for bit", "[quant][cuda]") {
  if (!DeviceOrWarn()) return;
  std::mt19937 rng(5);
  std::student_t_distribution<float> td(3.0f);
  // Shapes hit every kernel: for 2-byte types with cols % 8 == 0 the register kernel with 1, 2, 4 and 8 16-byte
  // pieces per thread (rows of up to 2048, 4096, 8192, 16384 elements; 1000 and 2056 leave threads without a piece),
  // the two-read kernel beyond (24576); the scalar kernel for cols % 8 != 0 and for F32.
  for (auto [rows, cols] : {std::pair<uint64_t, uint64_t>{67, 4096}, {33, 1000}, {5, 7}, {4, 2056}, {3, 8192},
                            {3, 16384}, {3, 24576}}) {
    std::vector<float> x(rows * cols);
    for (float& v : x) v = td(rng) * 0.02f;
    for (uint64_t c = 0; c < cols; ++c) x[2 * cols + c] = 0.0f;  // zero row
    x[0] = 127.5f * 0.001953125f;                                // exact tie material (power-of-two scale)
    for (io::DType dt : {io::DType::kF32, io::DType::kF16, io::DType::kBF16}) {
      for (auto conv : {quant::Int8Convention::kHalfStep, quant::Int8Convention::kSymmetric127}) {
        std::vector<uint8_t> raw(x.size() * io::DTypeSize(dt));
        if (dt == io::DType::kF32)
          std::memcpy(raw.data(), x.data(), raw.size());
        else
          REQUIRE(io::ConvertFromF32(dt, x.data(), raw.data(), x.size()).ok());
        std::vector<int8_t> ref_codes(x.size()), gpu_codes(x.size());
        std::vector<float> ref_scales(rows), gpu_scales(rows);
        REQUIRE(quant::QuantizeMatrix(raw.data(), dt, rows, cols, {quant::Granularity{}, conv, dt}, nullptr,
                                      ref_codes.data(), ref_scales.data(), nullptr)
                    .ok());
        Status st = cuda::QuantizePerChannelHost(raw.data(), ToElem(dt), rows, cols, conv, ToElem(dt),
                                                 gpu_codes.data(), gpu_scales.data());
        REQUIRE(st.ok());
        CHECK(std::memcmp(ref_scales.data(), gpu_scales.data(), rows * sizeof(float)) == 0);
        CHECK(ref_codes == gpu_codes);
      }
    }
  }
}

TEST_CASE("cuda: histogram kernel equals the CPU AbsHistogram", "[quant][cuda]") {
  if (!DeviceOrWarn()) return;
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> x(1 << 20);
  for (float& v : x) v = nd(rng);
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  // Ranges: the sample max (counts spread over the bins), and 100x it (every count in the first ~21 bins: the warp
  // kernel's lanes share bins in nearly every match).
  for (float range : {amax, 100 * amax}) {
    quant::AbsHistogram ref(2048, range);
    ref.Add(x.data(), x.size());
    for (auto kernel : {cuda::HistogramKernel::kShared, cuda::HistogramKernel::kWarpAggregated}) {
      std::vector<uint64_t> counts(2048, 0);
      REQUIRE(cuda::AbsHistogramHost(x.data(), x.size(), range, 2048, counts.data(), kernel).ok());
      CHECK(counts == ref.counts());
    }
  }
  // A length that leaves a tail after the 16-byte loads and after the warp kernel's whole-warp steps, and values
  // above amax and NaN (skipped).
  x[10] = 2 * amax;
  x[11] = std::numeric_limits<float>::quiet_NaN();
  x[x.size() / 2] = -std::numeric_limits<float>::infinity();
  for (uint64_t n : {x.size() - 3, x.size() - 4 * 37 - 1, uint64_t{1000}, uint64_t{5}}) {
    quant::AbsHistogram ref2(2048, amax);
    ref2.Add(x.data(), n);
    for (auto kernel : {cuda::HistogramKernel::kShared, cuda::HistogramKernel::kWarpAggregated}) {
      std::vector<uint64_t> counts2(2048, 0);
      REQUIRE(cuda::AbsHistogramHost(x.data(), n, amax, 2048, counts2.data(), kernel).ok());
      CHECK(counts2 == ref2.counts());
    }
  }
}

TEST_CASE("cuda: the benchmark entry points run on small sizes and account their bytes", "[quant][cuda]") {
  if (!DeviceOrWarn()) return;
  for (bool two_reads : {false, true}) {
    auto t = cuda::BenchQuantizePerChannel(8, 4096, 2, two_reads);
    REQUIRE(t.ok());
    CHECK(t->bytes == 8 * 4096 * 3 + 8 * 4);  // bf16 in, int8 codes and fp32 scales out
    CHECK(t->seconds > 0);
    CHECK(t->gb_per_s == Approx(t->bytes / t->seconds / 1e9));
  }
  for (auto data : {cuda::BenchData::kUniform, cuda::BenchData::kLaplace, cuda::BenchData::kOutlierRange}) {
    for (auto kernel : {cuda::HistogramKernel::kShared, cuda::HistogramKernel::kWarpAggregated}) {
      auto t = cuda::BenchAbsHistogram(uint64_t{1} << 14, 2048, 2, data, kernel);
      REQUIRE(t.ok());
      CHECK(t->bytes == 4 << 14);
      CHECK(t->seconds > 0);
    }
  }
}

TEST_CASE("cuda: kernel bandwidth", "[.cuda-bench]") {
  if (!DeviceOrWarn()) return;
  auto devs = cuda::ListCudaDevices();
  // The device's own peak (memory clock x bus width; H200: 4.9 TB/s against the datasheet's 4.8). A driver that
  // does not report it would make every percentage meaningless: stop instead.
  const double peak = devs.devices[0].memory_bandwidth_gbs;
  std::printf("device %s: peak %.0f GB/s (memory clock x bus width)\n", devs.devices[0].name.c_str(), peak);
  REQUIRE(peak > 0);
  // Row lengths of real linear layers (4096: 7B-class hidden size; 8192: 70B-class; 28672: a 70B MLP's down_proj
  // input, too long for registers), each with the kernel picked and with the two-read kernel.
  for (auto [rows, cols] : {std::pair<uint64_t, uint64_t>{4096, 4096}, {28672, 8192}, {131072, 8192}, {8192, 28672}}) {
    for (bool two_reads : {false, true}) {
      auto t = cuda::BenchQuantizePerChannel(rows, cols, 20, two_reads);
      REQUIRE(t.ok());
      std::printf("quantize bf16 %llux%llu (%s): %.3f ms, %.1f GB/s, %.0f%% of %.0f GB/s\n",
                  static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols),
                  two_reads ? "two reads" : "picked", t->seconds * 1e3, t->gb_per_s, 100 * t->gb_per_s / peak, peak);
    }
  }
  for (auto data : {cuda::BenchData::kUniform, cuda::BenchData::kLaplace, cuda::BenchData::kOutlierRange}) {
    for (uint64_t n : {uint64_t{1} << 24, uint64_t{1} << 28}) {
      for (auto kernel : {cuda::HistogramKernel::kShared, cuda::HistogramKernel::kWarpAggregated}) {
        auto t = cuda::BenchAbsHistogram(n, 2048, 20, data, kernel);
        REQUIRE(t.ok());
        std::printf("histogram %llu fp32 (%s, %s): %.3f ms, %.1f GB/s, %.0f%% of %.0f GB/s\n",
                    static_cast<unsigned long long>(n),
                    data == cuda::BenchData::kUniform   ? "uniform"
                    : data == cuda::BenchData::kLaplace ? "laplace"
                                                        : "laplace, amax 60x its max",
                    kernel == cuda::HistogramKernel::kShared ? "shared atomics" : "warp-aggregated", t->seconds * 1e3,
                    t->gb_per_s, 100 * t->gb_per_s / peak, peak);
      }
    }
  }
}
