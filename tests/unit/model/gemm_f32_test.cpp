// The fp32 GEMM's kernels held to its definition (gemm_f32.h): bit for bit, over shapes that hit every edge.
#include "lmkit/model/gemm_f32.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "lmkit/common/thread_pool.h"
#include "lmkit/io/dtype.h"
#include "lmkit/model/linear.h"

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

TEST_CASE("gemm f32: the blocked prefill keeps the chains across row and k blocks, on any pool", "[model][gemm]") {
  // Rows around the micro-tile (6) and the packed row block (96), k around the k block (256), outputs with a partial
  // panel; every weight type through its load policy; then Linear::Apply on 1, 2 and 3 threads.
  ThreadPool pool2(2), pool3(3);
  for (uint32_t in : {255u, 257u, 600u})
    for (uint32_t out : {40u, 100u})
      for (size_t rows : {4u, 5u, 95u, 97u, 200u}) {
        const auto wf = Random(size_t{out} * in, in + out);
        const auto x = Random(rows * in, static_cast<uint32_t>(rows) + 7);
        for (WeightType t : {WeightType::kF32, WeightType::kBf16, WeightType::kF16}) {
          INFO("in " << in << " out " << out << " rows " << rows << " type " << static_cast<int>(t));
          std::vector<uint16_t> bits(wf.size());
          std::vector<float> widened = wf;
          if (t == WeightType::kBf16) io::F32ToBf16(wf.data(), bits.data(), wf.size());
          if (t == WeightType::kF16) io::F32ToF16(wf.data(), bits.data(), wf.size());
          for (size_t i = 0; t != WeightType::kF32 && i < bits.size(); ++i)
            widened[i] = t == WeightType::kBf16 ? io::Bf16ToF32(bits[i]) : io::F16ToF32(bits[i]);
          std::vector<float> want(rows * out);
          GemmF32Ref(WeightView{WeightType::kF32, false, widened.data(), out, in}, x.data(), in, rows, 0, out,
                     want.data(), out);
          // Against a double-precision sum: an fp32 chain of `in` terms is within about in * 2^-24 * sum |x w| of it.
          bool close = true;
          for (size_t r = 0; r < rows; ++r)
            for (uint32_t c = 0; c < out; ++c) {
              double sum = 0, mag = 0;
              for (uint32_t k = 0; k < in; ++k) {
                const double p = double{x[r * in + k]} * double{widened[size_t{c} * in + k]};
                sum += p;
                mag += std::fabs(p);
              }
              close = close && std::fabs(want[r * out + c] - sum) <= (in + 2) * 0x1p-24 * mag + 1e-30;
            }
          CHECK(close);

          model::Linear l;
          l.out = out;
          l.in = in;
          if (t == WeightType::kF32) {
            l.weight = wf;
          } else {
            l.kind = t == WeightType::kBf16 ? model::Linear::Kind::kBf16 : model::Linear::Kind::kFp16;
            l.half = bits;
          }
          l.Pack();
          std::vector<float> y1(rows * out, -1.0f), y2(rows * out, -2.0f), y3(rows * out, -3.0f);
          l.Apply(x.data(), rows, y1.data(), nullptr);
          l.Apply(x.data(), rows, y2.data(), &pool2);
          l.Apply(x.data(), rows, y3.data(), &pool3);
          CHECK(SameBits(y1, want));
          CHECK(SameBits(y2, want));
          CHECK(SameBits(y3, want));
          // A column range from panel 1 to mid-panel, straight through GemmF32: only its own columns change.
          const auto packed_f = PackPanels(wf.data(), out, in);
          const auto packed_h = PackPanels(bits.data(), out, in);
          const WeightView pv{
              t, true, t == WeightType::kF32 ? static_cast<const void*>(packed_f.data()) : packed_h.data(), out, in};
          std::vector<float> part(rows * out, -1.0f);
          GemmF32(pv, x.data(), in, rows, 16, out - 3, part.data(), out);
          bool ok = true;
          for (size_t r = 0; r < rows; ++r)
            for (uint32_t c = 0; c < out; ++c) {
              const float e = c >= 16 && c < out - 3 ? want[r * out + c] : -1.0f;
              ok = ok && std::memcmp(&part[r * out + c], &e, sizeof e) == 0;
            }
          CHECK(ok);
        }
      }
}
