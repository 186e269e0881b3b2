// The int8 GEMM's kernel held to its definition (gemm_i8.h): exact int32 sums, including the extreme codes.
#include "lmkit/model/gemm_i8.h"

#include <catch2/catch.hpp>
#include <random>
#include <vector>

using namespace lmkit::model::gemm;

TEST_CASE("gemm i8: the kernel equals the plain int32 sums, packed or not", "[model][gemm]") {
  std::mt19937 g(5);
  std::uniform_int_distribution<int> code(-128, 127);
  for (uint32_t in : {1u, 2u, 9u, 256u, 1001u})
    for (uint32_t out : {1u, 16u, 33u})
      for (size_t rows : {1u, 4u, 6u, 11u}) {
        std::vector<int8_t> w(size_t{out} * in);
        for (auto& v : w) v = static_cast<int8_t>(code(g));
        const size_t ld = I8RowStride(in);
        std::vector<int16_t> x(rows * ld, 0);
        for (size_t r = 0; r < rows; ++r)
          for (size_t k = 0; k < in; ++k) x[r * ld + k] = static_cast<int16_t>(code(g));
        const auto packed = PackI8Panels(w.data(), out, in);
        std::vector<int32_t> want(rows * out), got(rows * out), got_u(rows * out);
        GemmI8Ref(w.data(), in, x.data(), ld, rows, 0, out, want.data(), out);
        GemmI8(packed.data(), true, out, in, x.data(), ld, rows, 0, out, got.data(), out);
        GemmI8(w.data(), false, out, in, x.data(), ld, rows, 0, out, got_u.data(), out);
        INFO("in " << in << " out " << out << " rows " << rows);
        CHECK(got == want);
        CHECK(got_u == want);
      }
  // The largest sums: -128 * -128 over 1000 codes, and -128 * 127.
  const uint32_t in = 1000;
  std::vector<int8_t> w(2 * in);
  for (uint32_t k = 0; k < in; ++k) {
    w[k] = -128;
    w[in + k] = 127;
  }
  std::vector<int16_t> x(in, -128);
  const auto packed = PackI8Panels(w.data(), 2, in);
  int32_t acc[2];
  GemmI8(packed.data(), true, 2, in, x.data(), in, 1, 0, 2, acc, 2);
  CHECK(acc[0] == 16384 * 1000);
  CHECK(acc[1] == -128 * 127 * 1000);
}
