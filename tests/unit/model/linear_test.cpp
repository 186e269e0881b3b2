// One Linear layer in its int8, fp8 and float forms, held to the definitions in linear.h.
#include "lmkit/model/linear.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "lmkit/common/thread_pool.h"
#include "lmkit/formats/fp8.h"
#include "lmkit/io/dtype.h"

using namespace lmkit;
using namespace lmkit::model;

TEST_CASE("linear: int8 kernels equal their definition", "[model][linear]") {
  Linear l;
  l.out = 3;
  l.in = 5;
  l.codes = {1, -2, 3, 127, -128, 0, 0, 0, 0, 0, 5, 5, 5, 5, 5};
  l.weight_scale = {0.5f, 1.0f, 0.25f};
  l.bias = {0.0f, 1.0f, 0.0f};
  const float x[10] = {1.0f, -0.5f, 0.25f, 2.0f, 0.0f, 0.01f, 0.02f, 0.03f, 0.04f, -0.05f};
  float y[6];
  for (auto kind : {Linear::Kind::kInt8Static, Linear::Kind::kInt8Dynamic}) {
    l.kind = kind;
    l.input_scale = 2.0f / 127.5f;
    ThreadPool pool(2);
    l.Apply(x, 2, y, &pool);
    for (int r = 0; r < 2; ++r) {
      float s = l.input_scale;
      if (kind == Linear::Kind::kInt8Dynamic) {
        float amax = 0;
        for (int i = 0; i < 5; ++i) amax = std::max(amax, std::fabs(x[r * 5 + i]));
        s = amax / 127.5f;
      }
      for (int o = 0; o < 3; ++o) {
        int32_t acc = 0;
        for (int i = 0; i < 5; ++i) {
          const float q = std::fmin(std::fmax(std::nearbyint(x[r * 5 + i] * (1.0f / s)), -128.0f), 127.0f);
          acc += static_cast<int32_t>(q) * l.codes[o * 5 + i];
        }
        CHECK(y[r * 3 + o] == static_cast<float>(acc) * (s * l.weight_scale[o]) + l.bias[o]);
      }
    }
  }
  // Static: row 0 codes are 64, -32, 16, 127 (2.0 saturates at 127.5 -> 128 -> 127), 0.
  l.kind = Linear::Kind::kInt8Static;
  l.Apply(x, 1, y, nullptr);
  CHECK(y[0] == static_cast<float>(64 * 1 + -32 * -2 + 16 * 3 + 127 * 127) * ((2.0f / 127.5f) * 0.5f));
}

TEST_CASE("linear: float y = x W^T + b, the same on any pool", "[model][linear]") {
  Linear l;
  l.out = 2;
  l.in = 3;
  l.weight = {1, 2, 3, -1, 0, 0.5f};
  l.bias = {10, 0};
  const float x[6] = {1, 1, 1, 2, -1, 4};
  // Row 0: 1+2+3+10 = 16, -1+0+0.5 = -0.5; row 1: 2-2+12+10 = 22, -2+0+2 = 0.
  const float want[4] = {16, -0.5f, 22, 0};
  float y[4];
  l.Apply(x, 2, y, nullptr);
  for (int i = 0; i < 4; ++i) CHECK(y[i] == want[i]);
  ThreadPool pool(3);
  float y3[4];
  l.Apply(x, 2, y3, &pool);
  for (int i = 0; i < 4; ++i) CHECK(y3[i] == want[i]);
  // Dot over lengths that are not a multiple of any vector width: 1 + 2 + ... + n.
  std::vector<float> ones(37, 1.0f), ramp(37);
  for (int i = 0; i < 37; ++i) ramp[i] = static_cast<float>(i + 1);
  CHECK(Dot(ones.data(), ramp.data(), 37) == 703.0f);
  CHECK(Dot(ones.data(), ramp.data(), 0) == 0.0f);
}

TEST_CASE("linear: fp8 activations are rounded through E4M3 at the static or per-row scale", "[model][linear]") {
  Linear l;
  l.out = 1;
  l.in = 2;
  l.weight = {0, 1};  // y = the second activation, after rounding
  float y[2];
  // Dynamic: row {448, 17} has scale 448 / 448 = 1; 17 lies halfway between the E4M3 values 16 and 18 and rounds to
  // the even mantissa, 16. A zero row stays zero.
  l.kind = Linear::Kind::kFp8Dynamic;
  const float x[4] = {448, 17, 0, 0};
  l.Apply(x, 2, y, nullptr);
  CHECK(y[0] == 16.0f);
  CHECK(y[1] == 0.0f);
  // Static at scale 2: 17 / 2 = 8.5, halfway between 8 and 9, rounds to 8, times 2.
  l.kind = Linear::Kind::kFp8Static;
  l.input_scale = 2;
  const float xs[2] = {0, 17};
  l.Apply(xs, 1, y, nullptr);
  CHECK(y[0] == 16.0f);
  // 19 / 2 = 9.5 rounds to the even 10 (mantissa 010), not 9.
  const float x19[2] = {0, 19};
  l.Apply(x19, 1, y, nullptr);
  CHECK(y[0] == 20.0f);
}

TEST_CASE("linear: Pack keeps every kind's results, bf16/fp16 equal float on the widened weights", "[model][linear]") {
  const uint32_t out = 50, in = 70;
  const uint64_t rows = 9;
  std::vector<float> w(size_t{out} * in), x(rows * in), b(out);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * static_cast<float>(i));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.11f * static_cast<float>(i));
  for (uint32_t i = 0; i < out; ++i) b[i] = 0.01f * static_cast<float>(i);
  ThreadPool pool(3);
  auto check = [&](Linear l) {
    std::vector<float> y1(rows * out), y2(rows * out), y3(rows * out);
    l.Apply(x.data(), rows, y1.data(), nullptr);
    const size_t before = l.WeightBytes();
    l.Pack();
    CHECK(l.packed());
    CHECK(l.WeightBytes() >= before);  // panels pad `out` to 16 and `in` to even (int8)
    CHECK(l.WeightBytes() < before * 2);
    l.Apply(x.data(), rows, y2.data(), nullptr);
    l.Apply(x.data(), rows, y3.data(), &pool);
    CHECK(y1 == y2);
    CHECK(y1 == y3);
    return y1;
  };
  Linear f;
  f.out = out;
  f.in = in;
  f.bias = b;
  Linear h = f;
  // bf16 of w, and the float layer on exactly those values.
  h.kind = Linear::Kind::kBf16;
  h.half.resize(w.size());
  io::F32ToBf16(w.data(), h.half.data(), w.size());
  f.weight.resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) f.weight[i] = io::Bf16ToF32(h.half[i]);
  const auto yf = check(f);
  CHECK(check(h) == yf);
  h.kind = Linear::Kind::kFp16;
  io::F32ToF16(w.data(), h.half.data(), w.size());
  for (size_t i = 0; i < w.size(); ++i) f.weight[i] = io::F16ToF32(h.half[i]);
  CHECK(check(h) == check(f));
  // PackHalf reads the checkpoint's bytes in place, at any alignment.
  std::vector<unsigned char> raw(h.half.size() * 2 + 1);
  std::memcpy(raw.data() + 1, h.half.data(), h.half.size() * 2);
  Linear hp;
  hp.out = out;
  hp.in = in;
  hp.bias = b;
  hp.PackHalf(Linear::Kind::kFp16, raw.data() + 1);
  CHECK(hp.kind == Linear::Kind::kFp16);
  std::vector<float> yh(rows * out), yp(rows * out);
  h.Apply(x.data(), rows, yh.data(), nullptr);
  hp.Apply(x.data(), rows, yp.data(), &pool);
  CHECK(yh == yp);
  // A bf16 layer keeps 2 bytes per weight (plus panel padding: 64 rows for 50).
  h.Pack();
  CHECK(h.WeightBytes() == size_t{64} * in * 2);
  // int8: packed codes give the same exact sums.
  Linear q;
  q.out = out;
  q.in = in;
  q.kind = Linear::Kind::kInt8Dynamic;
  q.codes.resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) q.codes[i] = static_cast<int8_t>(std::lround(w[i] * 127.0f));
  q.weight_scale.assign(out, 1.0f / 127.0f);
  check(q);
}

TEST_CASE("linear: the vector E4M3 rounding of activations equals the scalar definition bit for bit",
          "[model][linear]") {
  // Every E4M3 value and the midpoints around it, both signs, plus saturation, NaN, infinities and zeros, at scales
  // that put them on the subnormal grid, at the normal boundary and past 448.
  std::vector<float> x;
  for (int b = 0; b < 256; ++b) {
    const float v = formats::E4M3ToF32(static_cast<uint8_t>(b));
    x.push_back(v);
    x.push_back(std::nextafter(v, 1e9f));
    x.push_back(std::nextafter(v, -1e9f));
    x.push_back(v * 1.0625f);  // a midpoint for normal values
  }
  for (float v : {0.0f, -0.0f, 448.0f, 464.0f, 465.0f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN, 0x1p-10f, 0x1p-9f,
                  0x1.8p-9f, 0x1.8p-8f, 0x1.fp-7f, 0x1p-6f})
    x.push_back(v);
  for (float s : {1.0f, 0.37f, 3.0f, 1e-3f, 0.0f}) {
    std::vector<float> got(x.size());
    RoundThroughE4M3(x.data(), static_cast<uint32_t>(x.size()), s, got.data());
    size_t bad = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = s > 0 ? formats::E4M3ToF32(formats::E4M3FromF32(x[i] / s)) * s : 0.0f;
      bad += std::memcmp(&want, &got[i], sizeof want) != 0;
    }
    INFO("scale " << s);
    CHECK(bad == 0);
  }
}
