// CUDA kernels against their CPU references, bit for bit. Without a CUDA build or a device these report as skipped;
// scripts/gpu-check.sh runs them on a machine with a GPU, and lmkit_cuda_emu_tests (tests/emu) runs this same file
// on a CPU emulator of CUDA in every build without CUDA. The hidden "[.cuda-bench]" case prints kernel bandwidth.
#include "lmkit/cuda/quant_kernels.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "lmkit/cuda/device.h"
#include "lmkit/io/dtype.h"
#include "lmkit/quant/abs_histogram.h"
#include "lmkit/quant/quantizer.h"
#include "support/skip.h"

using namespace lmkit;

namespace {

// Why this build or machine cannot run the kernels ("" when it can).
std::string NoDevice() {
  if (!cuda::CudaBuildEnabled()) return "built without CUDA";
  auto devs = cuda::ListCudaDevices();
  if (devs.devices.empty()) return "no CUDA device (" + devs.why_none + ")";
  return "";
}

cuda::ElemType ToElem(io::DType t) {
  return t == io::DType::kF32   ? cuda::ElemType::kF32
         : t == io::DType::kF16 ? cuda::ElemType::kF16
                                : cuda::ElemType::kBF16;
}

// The kernel and the CPU reference on the same raw rows (`raw` may be misaligned on purpose): the same status, and
// when both succeed the same codes and stored scales, bit for bit.
void CheckQuantizeAgrees(const uint8_t* raw, io::DType dt, uint64_t rows, uint64_t cols, formats::Int8Convention conv,
                         io::DType scale_dt) {
  CAPTURE(io::DTypeName(dt), io::DTypeName(scale_dt), rows, cols, static_cast<int>(conv),
          reinterpret_cast<uintptr_t>(raw) % 16);
  std::vector<int8_t> ref_codes(rows * cols), gpu_codes(rows * cols);
  std::vector<float> ref_scales(rows), gpu_scales(rows);
  const Status ref = quant::QuantizeMatrix(raw, dt, rows, cols, {quant::Granularity{}, conv, scale_dt}, nullptr,
                                           ref_codes.data(), ref_scales.data(), nullptr);
  const Status gpu = cuda::QuantizePerChannelHost(raw, ToElem(dt), rows, cols, conv, ToElem(scale_dt), gpu_codes.data(),
                                                  gpu_scales.data());
  REQUIRE(gpu.code() == ref.code());
  CHECK(gpu.ToString() == ref.ToString());
  if (!ref.ok()) return;
  CHECK(std::memcmp(ref_scales.data(), gpu_scales.data(), rows * sizeof(float)) == 0);
  CHECK(ref_codes == gpu_codes);
}

std::vector<uint8_t> ToRaw(const std::vector<float>& x, io::DType dt, size_t front_pad = 0) {
  std::vector<uint8_t> raw(front_pad + x.size() * io::DTypeSize(dt));
  if (dt == io::DType::kF32)
    std::memcpy(raw.data() + front_pad, x.data(), x.size() * 4);
  else
    REQUIRE(io::ConvertFromF32(dt, x.data(), raw.data() + front_pad, x.size()).ok());
  return raw;
}

}  // namespace

TEST_CASE("cuda: the stub or the device agree with the build", "[quant][cuda]") {
  int8_t c = 0;
  float s = 0, x = 1.0f;
  Status st = cuda::QuantizePerChannelHost(&x, cuda::ElemType::kF32, 1, 1, formats::Int8Convention::kHalfStep,
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
  if (const std::string why = NoDevice(); !why.empty()) LMKIT_SKIP(why << ": kernel test");
  std::mt19937 rng(5);
  std::student_t_distribution<float> td(3.0f);
  // Shapes hit every kernel: for 2-byte types with cols % 8 == 0 the register kernel with 1, 2, 4 and 8 16-byte
  // pieces per thread, both full (rows of 2048 / 4096 / 8192 / 16384 elements) and partly filled (1000, 2056, 4104,
  // 8200: threads without a piece, zero padding), the two-read kernel beyond (24576, and 16392 with a partial last
  // step); the scalar kernel for cols % 8 != 0 (7, 1001) and for F32.
  for (auto [rows, cols] : {std::pair<uint64_t, uint64_t>{67, 4096},
                            {33, 1000},
                            {5, 7},
                            {4, 2056},
                            {3, 8192},
                            {3, 16384},
                            {3, 24576},
                            {4, 2048},
                            {4, 4104},
                            {4, 8200},
                            {4, 16392},
                            {5, 1001}}) {
    std::vector<float> x(rows * cols);
    for (float& v : x) v = td(rng) * 0.02f;
    for (uint64_t c = 0; c < cols; ++c) {
      x[2 * cols + c] = 0.0f;                  // zero row
      x[1 * cols + c] *= 1e-37f;               // subnormal fp32 / bf16 magnitudes: a subnormal scale, coded by division
      if (rows > 3) x[3 * cols + c] *= 3e-6f;  // F16 subnormals (|x| ~ 6e-8): the F16 scale rounds up to a subnormal
    }
    x[0] = 127.5f * 0.001953125f;  // exact tie material (power-of-two scale)
    for (io::DType dt : {io::DType::kF32, io::DType::kF16, io::DType::kBF16}) {
      const std::vector<uint8_t> raw = ToRaw(x, dt);
      for (auto conv : {formats::Int8Convention::kHalfStep, formats::Int8Convention::kSymmetric127})
        for (io::DType scale_dt : {io::DType::kF32, io::DType::kF16, io::DType::kBF16})
          CheckQuantizeAgrees(raw.data(), dt, rows, cols, conv, scale_dt);
    }
  }
}

TEST_CASE("cuda: quantize kernels on misaligned input, non-finite values and out-of-range shapes", "[quant][cuda]") {
  if (const std::string why = NoDevice(); !why.empty()) LMKIT_SKIP(why << ": kernel test");
  std::mt19937 rng(6);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  // A 2-byte input 2 bytes past a 16-byte boundary cannot take the 16-byte loads: the scalar kernel codes it (the
  // device copy keeps the host data's offset).
  for (auto [rows, cols] : {std::pair<uint64_t, uint64_t>{33, 1000}, {3, 24576}}) {
    std::vector<float> x(rows * cols);
    for (float& v : x) v = nd(rng);
    for (io::DType dt : {io::DType::kF16, io::DType::kBF16}) {
      const std::vector<uint8_t> raw = ToRaw(x, dt, 18);
      CheckQuantizeAgrees(raw.data() + 18, dt, rows, cols, formats::Int8Convention::kHalfStep, dt);
    }
  }
  // NaN and inf fail the call with the CPU's error, which names the first of them in row-major order: [2, 5] here,
  // ahead of an inf later in the same row (another thread's) and a -inf in a later row.
  for (auto [rows, cols] : {std::pair<uint64_t, uint64_t>{4, 4096}, {4, 1000}, {4, 24576}, {4, 7}}) {
    std::vector<float> x(rows * cols);
    for (float& v : x) v = nd(rng);
    x[2 * cols + 5] = std::numeric_limits<float>::quiet_NaN();
    x[2 * cols + cols - 1] = std::numeric_limits<float>::infinity();
    x[3 * cols + 1] = -std::numeric_limits<float>::infinity();
    for (io::DType dt : {io::DType::kF32, io::DType::kF16, io::DType::kBF16}) {
      const std::vector<uint8_t> raw = ToRaw(x, dt);
      CheckQuantizeAgrees(raw.data(), dt, rows, cols, formats::Int8Convention::kSymmetric127, io::DType::kF32);
      std::vector<int8_t> codes(rows * cols);
      std::vector<float> scales(rows);
      const Status st =
          cuda::QuantizePerChannelHost(raw.data(), ToElem(dt), rows, cols, formats::Int8Convention::kHalfStep,
                                       ToElem(dt), codes.data(), scales.data());
      CHECK(st.code() == ErrorCode::kInvalidInput);
      CHECK_THAT(st.ToString(), Catch::Contains("non-finite value at [2, 5]"));
    }
  }
  // One non-finite value alone, at the start, the middle and the end of a row: each kernel's index of it (the register
  // kernels' later pieces, the two-read kernel's second pass, the scalar loop) must be the CPU's.
  for (auto [rows, cols] : {std::pair<uint64_t, uint64_t>{3, 4096}, {3, 16384}, {3, 24576}, {3, 1001}}) {
    for (uint64_t col : {uint64_t{0}, cols / 2 + 3, cols - 1}) {
      std::vector<float> x(rows * cols);
      for (float& v : x) v = nd(rng);
      x[1 * cols + col] = std::numeric_limits<float>::infinity();
      for (io::DType dt : {io::DType::kF32, io::DType::kBF16}) {
        const std::vector<uint8_t> raw = ToRaw(x, dt);
        CheckQuantizeAgrees(raw.data(), dt, rows, cols, formats::Int8Convention::kHalfStep, dt);
      }
    }
  }
  // More rows than a grid has blocks: refused before anything is allocated for them (no input is read: 0 columns).
  const Status st =
      cuda::QuantizePerChannelHost(nullptr, cuda::ElemType::kF32, uint64_t{1} << 31, 0,
                                   formats::Int8Convention::kHalfStep, cuda::ElemType::kF32, nullptr, nullptr);
  CHECK(st.code() == ErrorCode::kUnsupported);
}

TEST_CASE("cuda: histogram kernel equals the CPU AbsHistogram", "[quant][cuda]") {
  if (const std::string why = NoDevice(); !why.empty()) LMKIT_SKIP(why << ": kernel test");
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

TEST_CASE("cuda: histogram kernel at every alignment, bin count and range corner", "[quant][cuda]") {
  if (const std::string why = NoDevice(); !why.empty()) LMKIT_SKIP(why << ": kernel test");
  std::mt19937 rng(10);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> buf((1 << 16) + 4);
  for (float& v : buf) v = nd(rng);
  float amax = 0;
  for (float v : buf) amax = std::max(amax, std::fabs(v));
  const auto agree = [](const float* x, uint64_t n, float range, uint32_t bins, uint64_t start) {
    CAPTURE(reinterpret_cast<uintptr_t>(x) % 16, n, range, bins, start);
    quant::AbsHistogram ref(bins, range);
    ref.Add(x, n);
    for (auto kernel : {cuda::HistogramKernel::kShared, cuda::HistogramKernel::kWarpAggregated}) {
      std::vector<uint64_t> counts(bins, start);  // the kernel adds to what is there
      REQUIRE(cuda::AbsHistogramHost(x, n, range, bins, counts.data(), kernel).ok());
      for (uint64_t& c : counts) c -= start;
      CHECK(counts == ref.counts());
    }
  };
  // 0-3 floats past a 16-byte boundary: the scalar head, then the float4 loop; lengths that leave every tail.
  for (size_t offset = 0; offset < 4; ++offset)
    for (uint64_t n :
         {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{5}, uint64_t{1000}, uint64_t{1} << 16})
      agree(buf.data() + offset, n, amax, 2048, offset * 1000);
  // Bin counts from 1 to the 48 KiB limit of shared counters.
  for (uint32_t bins : {1u, 7u, 12288u}) agree(buf.data() + 1, 4099, amax, bins, 0);
  // amax = 0: only zeros (either sign) count, all in bin 0.
  std::vector<float> zeros = {0.0f, -0.0f, 1.0f, 0.0f, -2.0f, -0.0f, 0.0f};
  agree(zeros.data(), zeros.size(), 0.0f, 16, 0);
  std::vector<uint64_t> counts(12289, 0);
  CHECK(cuda::AbsHistogramHost(buf.data(), 100, amax, 12289, counts.data()).code() == ErrorCode::kUnsupported);
  CHECK(cuda::AbsHistogramHost(buf.data(), 100, amax, 0, counts.data()).code() == ErrorCode::kUnsupported);
}

TEST_CASE("cuda: the launchers run on a stream of the caller's and give the default stream's results",
          "[quant][cuda]") {
  auto stream = cuda::OwnedStream::Create();
  if (const std::string why = NoDevice(); !why.empty()) {
    CHECK(stream.status().code() == ErrorCode::kUnsupported);
    LMKIT_SKIP(why << ": stream test");
  }
  REQUIRE(stream.ok());
  REQUIRE(stream->get() != nullptr);
  std::mt19937 rng(12);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const uint64_t rows = 9, cols = 1000;
  std::vector<float> x(rows * cols);
  for (float& v : x) v = nd(rng);
  std::vector<int8_t> c0(rows * cols), c1(rows * cols);
  std::vector<float> s0(rows), s1(rows);
  const auto conv = formats::Int8Convention::kHalfStep;
  REQUIRE(cuda::QuantizePerChannelHost(x.data(), cuda::ElemType::kF32, rows, cols, conv, cuda::ElemType::kF32,
                                       c0.data(), s0.data())
              .ok());
  REQUIRE(cuda::QuantizePerChannelHost(x.data(), cuda::ElemType::kF32, rows, cols, conv, cuda::ElemType::kF32,
                                       c1.data(), s1.data(), stream->get())
              .ok());
  CHECK(c0 == c1);
  CHECK(s0 == s1);
  std::vector<uint64_t> h0(256, 0), h1(256, 0);
  REQUIRE(cuda::AbsHistogramHost(x.data(), x.size(), 4.0f, 256, h0.data()).ok());
  REQUIRE(
      cuda::AbsHistogramHost(x.data(), x.size(), 4.0f, 256, h1.data(), cuda::HistogramKernel::kShared, stream->get())
          .ok());
  CHECK(h0 == h1);
  // Moving hands the stream over; the moved-from object owns nothing.
  cuda::OwnedStream moved = std::move(*stream);
  CHECK(moved.get() != nullptr);
  CHECK(stream->get() == nullptr);
}

TEST_CASE("cuda: the benchmark entry points run on small sizes and account their bytes", "[quant][cuda]") {
  if (const std::string why = NoDevice(); !why.empty()) LMKIT_SKIP(why << ": kernel test");
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
  if (const std::string why = NoDevice(); !why.empty()) LMKIT_SKIP(why << ": kernel test");
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
