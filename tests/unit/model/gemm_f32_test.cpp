// The fp32 GEMM's kernels held to its definition (gemm_f32.h): bit for bit, over shapes that hit every edge.
#include "lmkit/model/gemm_f32.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "lmkit/io/dtype.h"

using namespace lmkit;
using namespace lmkit::model::gemm;

namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = d(g);
  return v;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("gemm f32: the kernels equal the scalar FMA chain bit for bit, packed or not", "[model][gemm]") {
  INFO("isa " << GemmF32Isa());
  // in: one k block, several with a ragged last one; out: partial panels; rows: every micro-kernel height.
  for (uint32_t in : {1u, 7u, 256u, 600u})
    for (uint32_t out : {1u, 16u, 37u, 80u})
      for (size_t rows : {1u, 2u, 3u, 5u, 6u, 13u}) {
        const auto w = Random(size_t{out} * in, in * 7 + out);
        const auto x = Random(rows * in, static_cast<uint32_t>(rows));
        const auto packed = PackPanels(w.data(), out, in);
        WeightView u{WeightType::kF32, false, w.data(), out, in}, p{WeightType::kF32, true, packed.data(), out, in};
        std::vector<float> want(rows * out, -1.0f), got(rows * out, -1.0f), got_u(rows * out, -1.0f);
        GemmF32Ref(u, x.data(), in, rows, 0, out, want.data(), out);
        GemmF32(p, x.data(), in, rows, 0, out, got.data(), out);
        GemmF32(u, x.data(), in, rows, 0, out, got_u.data(), out);
        INFO("in " << in << " out " << out << " rows " << rows);
        CHECK(SameBits(got, want));
        CHECK(SameBits(got_u, want));
        // A column range starting at a panel and ending mid-panel writes only its own columns.
        if (out > 16) {
          std::vector<float> part(rows * out, -1.0f);
          GemmF32(p, x.data(), in, rows, 16, out - 1, part.data(), out);
          bool ok = true;
          for (size_t r = 0; r < rows; ++r)
            for (uint32_t c = 0; c < out; ++c) {
              const float e = c >= 16 && c < out - 1 ? want[r * out + c] : -1.0f;
              ok = ok && std::memcmp(&part[r * out + c], &e, sizeof e) == 0;
            }
          CHECK(ok);
        }
      }
}

TEST_CASE("gemm f32: the definition is the FMA chain in k order", "[model][gemm]") {
  // 1 + 2^-24 + 2^-24 ... : a chain in order keeps each tiny term lost (ties to even) while a tree would keep them.
  const uint32_t in = 3;
  const float w[3] = {1.0f, 1.0f, 1.0f};
  const float x[3] = {1.0f, 0x1p-24f, 0x1p-24f};
  float y = 0;
  GemmF32(WeightView{WeightType::kF32, false, w, 1, in}, x, in, 1, 0, 1, &y, 1);
  CHECK(y == 1.0f);
  const float x2[3] = {0x1p-24f, 0x1p-24f, 1.0f};
  GemmF32(WeightView{WeightType::kF32, false, w, 1, in}, x2, in, 1, 0, 1, &y, 1);
  CHECK(y == 1.0f + 0x1p-23f);
}

TEST_CASE("gemm f32: bf16 and fp16 weights compute as their exact fp32 values", "[model][gemm]") {
  // out 88: 4 panels, 1 panel and a partial one in a row of the decoding kernels (rows 1 to 3 widen in registers).
  const uint32_t out = 88, in = 300;
  auto wf = Random(size_t{out} * in, 3);
  for (size_t i = 0; i < 64; ++i) wf[i * 37] = static_cast<float>(i) * 1e-6f;  // fp16 subnormals
  for (size_t rows : {1u, 2u, 3u, 7u}) {
    const auto x = Random(rows * in, 4);
    for (WeightType t : {WeightType::kBf16, WeightType::kF16}) {
      INFO("rows " << rows << " type " << static_cast<int>(t));
      std::vector<uint16_t> bits(wf.size());
      std::vector<float> widened(wf.size());
      if (t == WeightType::kBf16) {
        io::F32ToBf16(wf.data(), bits.data(), wf.size());
        for (size_t i = 0; i < bits.size(); ++i) widened[i] = io::Bf16ToF32(bits[i]);
      } else {
        io::F32ToF16(wf.data(), bits.data(), wf.size());
        for (size_t i = 0; i < bits.size(); ++i) widened[i] = io::F16ToF32(bits[i]);
      }
      std::vector<float> want(rows * out), got(rows * out), got_u(rows * out);
      GemmF32Ref(WeightView{WeightType::kF32, false, widened.data(), out, in}, x.data(), in, rows, 0, out, want.data(),
                 out);
      const auto packed = PackPanels(bits.data(), out, in);
      GemmF32(WeightView{t, true, packed.data(), out, in}, x.data(), in, rows, 0, out, got.data(), out);
      GemmF32(WeightView{t, false, bits.data(), out, in}, x.data(), in, rows, 0, out, got_u.data(), out);
      CHECK(SameBits(got, want));
      CHECK(SameBits(got_u, want));
    }
  }
}
