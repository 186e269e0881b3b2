// The blocked attention and the vectorised exp, held to double-precision references and to their own determinism.
#include "lmkit/model/attention.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "lmkit/common/thread_pool.h"

using namespace lmkit;
using namespace lmkit::model;

namespace {

struct AttnCase {
  uint32_t n, p0, heads, kv_heads, hd, vd, window;
  float scale, softcap;
};

// out[t][h] = sum_j softmax_j(cap(q.k_j * scale)) v_j over the keys query t sees, in double.
std::vector<double> AttnReference(const AttnCase& c, const std::vector<float>& q, const std::vector<float>& k,
                                  const std::vector<float>& v) {
  const uint32_t group = c.heads / c.kv_heads, qd = c.heads * c.hd, kvd = c.kv_heads * c.hd;
  const uint32_t vvd = c.kv_heads * c.vd, od = c.heads * c.vd;
  std::vector<double> out(size_t{c.n} * od);
  for (uint32_t t = 0; t < c.n; ++t)
    for (uint32_t h = 0; h < c.heads; ++h) {
      const uint32_t pos = c.p0 + t, kvh = h / group;
      const uint32_t lo = c.window && pos + 1 > c.window ? pos + 1 - c.window : 0;
      std::vector<double> s;
      double mx = -INFINITY;
      for (uint32_t j = lo; j <= pos; ++j) {
        double d = 0;
        for (uint32_t i = 0; i < c.hd; ++i)
          d += double{q[size_t{t} * qd + h * c.hd + i]} * k[size_t{j} * kvd + kvh * c.hd + i];
        d *= c.scale;
        if (c.softcap > 0) d = c.softcap * std::tanh(d / c.softcap);
        s.push_back(d);
        mx = std::max(mx, d);
      }
      double sum = 0;
      for (double& x : s) sum += x = std::exp(x - mx);
      for (uint32_t i = 0; i < c.vd; ++i) {
        double o = 0;
        for (uint32_t j = lo; j <= pos; ++j) o += s[j - lo] * v[size_t{j} * vvd + kvh * c.vd + i];
        out[size_t{t} * od + h * c.vd + i] = o / sum;
      }
    }
  return out;
}

}  // namespace

TEST_CASE("attention: blocked online softmax equals the double reference, same bytes for 1-3 threads and decoding",
          "[model][attention]") {
  const AttnCase cases[] = {
      {37, 0, 6, 2, 20, 12, 0, 0.2236f, 0},      // GQA 6/2, odd lengths, head dims not multiples of 8
      {150, 13, 4, 4, 64, 64, 17, 0.125f, 0},    // sliding window over a cache already holding 13 positions
      {131, 0, 3, 1, 33, 7, 0, 0.9f, 5.0f},      // soft-capped scores, MQA, value dim != key dim (MLA-like)
      {1, 200, 12, 4, 64, 64, 0, 0.125f, 0},     // one decoding step over a long cache
      {70, 0, 8, 8, 48, 48, 64, 0.144f, 50.0f},  // MHA, window, softcap together
  };
  std::mt19937 rng(43);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const AttnCase& c : cases) {
    INFO("n " << c.n << " p0 " << c.p0 << " heads " << c.heads << "/" << c.kv_heads << " window " << c.window
              << " softcap " << c.softcap);
    const uint32_t keys = c.p0 + c.n;
    std::vector<float> q(size_t{c.n} * c.heads * c.hd), k(size_t{keys} * c.kv_heads * c.hd),
        v(size_t{keys} * c.kv_heads * c.vd);
    for (float& x : q) x = 2.0f * u(rng);
    for (float& x : k) x = 2.0f * u(rng);
    for (float& x : v) x = u(rng);
    const std::vector<double> ref = AttnReference(c, q, k, v);
    std::vector<float> o1(ref.size()), o2(ref.size()), o3(ref.size()), os(ref.size());
    auto args = [&](float* out) {
      return AttnArgs{q.data(),   k.data(), v.data(), out,      c.n,     c.p0,     c.heads,
                      c.kv_heads, c.hd,     c.vd,     c.window, c.scale, c.softcap};
    };
    ThreadPool p1(1), p2(2), p3(3);
    Attention(args(o1.data()), &p1);
    Attention(args(o2.data()), &p2);
    Attention(args(o3.data()), &p3);
    detail::AttentionWith(args(os.data()), &p2, false);
    CHECK(std::memcmp(o1.data(), o2.data(), o1.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(o1.data(), o3.data(), o1.size() * sizeof(float)) == 0);
    // The scalar fallback (CPUs without AVX2+FMA) computes the same operations.
    CHECK(std::memcmp(o1.data(), os.data(), o1.size() * sizeof(float)) == 0);
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(o1[i] - ref[i]));
    CHECK(worst < 2e-6);
    // Token by token (as generate decodes with the KV cache): the same bytes as the one call.
    const uint32_t od = c.heads * c.vd;
    std::vector<float> step(od);
    bool same = true;
    for (uint32_t t = 0; t < c.n; ++t) {
      AttnArgs one = args(step.data());
      one.q = q.data() + size_t{t} * c.heads * c.hd;
      one.n = 1;
      one.p0 = c.p0 + t;
      Attention(one, &p2);
      same = same && std::memcmp(step.data(), &o1[size_t{t} * od], od * sizeof(float)) == 0;
    }
    CHECK(same);
  }
}

TEST_CASE("attention: Exp is within 2 ulp of exp, with exact special values, vector = scalar", "[model][attention]") {
  std::vector<float> xs;
  for (float x = -87.0f; x < 88.7f; x += 0.000731f) xs.push_back(x);
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.72f, -87.33f, 0.34657f, -0.34657f}) xs.push_back(x);
  std::vector<float> ys(xs.size());
  Exp(xs.data(), ys.data(), xs.size());
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = std::exp(double{xs[i]});
    const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
    worst = std::max(worst, std::fabs(ys[i] - want) / ulp);
    uint32_t a, b;
    const float s = Exp(xs[i]);
    std::memcpy(&a, &s, 4);
    std::memcpy(&b, &ys[i], 4);
    if (a != b) FAIL("vector and scalar Exp differ at x = " << xs[i]);
  }
  CHECK(worst <= 2.0);
  CHECK(Exp(0.0f) == 1.0f);
  CHECK(Exp(-INFINITY) == 0.0f);
  CHECK(Exp(-200.0f) == 0.0f);
  CHECK(std::isinf(Exp(INFINITY)));
  CHECK(std::isinf(Exp(100.0f)));
  CHECK(std::isnan(Exp(std::numeric_limits<float>::quiet_NaN())));
  const float special[8] = {-INFINITY, INFINITY, std::numeric_limits<float>::quiet_NaN(), 0.0f, -200.0f, 100.0f,
                            1.0f,      -1.0f};
  float out[8];
  Exp(special, out, 8);
  CHECK(out[0] == 0.0f);
  CHECK(std::isinf(out[1]));
  CHECK(std::isnan(out[2]));
  CHECK(out[3] == 1.0f);
  CHECK(out[4] == 0.0f);
  CHECK(std::isinf(out[5]));
  CHECK(out[6] == Exp(1.0f));
  CHECK(out[7] == Exp(-1.0f));
}

TEST_CASE("attention: SiluMul is g / (1 + Exp(-g)) * u, vector lanes and tail alike", "[model][attention]") {
  std::vector<float> g(37), u(37), out(37);
  for (size_t i = 0; i < g.size(); ++i) {
    g[i] = -20.0f + 1.13f * static_cast<float>(i);
    u[i] = 0.5f - 0.03f * static_cast<float>(i);
  }
  SiluMul(g.data(), u.data(), out.data(), g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    CHECK(out[i] == g[i] / (1.0f + Exp(-g[i])) * u[i]);
    const double want = g[i] / (1.0 + std::exp(-double{g[i]})) * u[i];
    CHECK(std::fabs(out[i] - want) <= 1e-6 * std::max(1.0, std::fabs(want)));
  }
}
