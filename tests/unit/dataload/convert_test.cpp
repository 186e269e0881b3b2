#include "lmkit/dataload/convert.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

using namespace lmkit::dataload;

namespace {
template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <typename T>
std::vector<T> As(const std::vector<uint8_t>& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}
}  // namespace

TEST_CASE("convert: y is x shifted by one, widened to int64", "[dataload]") {
  // Two windows of T + 1 = 5 tokens.
  std::vector<uint16_t> win = {10, 11, 12, 13, 14, 65535, 1, 2, 3, 4};
  auto src = Bytes(win);
  std::vector<uint8_t> x(2 * 4 * 8), y(2 * 4 * 8);
  ConvertWindows(src.data(), 2, 2, 4, OutDtype::kInt64, x.data(), y.data(), 0, nullptr);
  CHECK(As<int64_t>(x) == std::vector<int64_t>{10, 11, 12, 13, 65535, 1, 2, 3});
  CHECK(As<int64_t>(y) == std::vector<int64_t>{11, 12, 13, 14, 1, 2, 3, 4});
}

TEST_CASE("convert: uint32 tokens to int32, uint16 kept narrow", "[dataload]") {
  std::vector<uint32_t> win = {100000, 100001, 100002};
  auto src = Bytes(win);
  std::vector<uint8_t> x(2 * 4), y(2 * 4);
  ConvertWindows(src.data(), 4, 1, 2, OutDtype::kInt32, x.data(), y.data(), 0, nullptr);
  CHECK(As<int32_t>(x) == std::vector<int32_t>{100000, 100001});
  CHECK(As<int32_t>(y) == std::vector<int32_t>{100001, 100002});

  std::vector<uint16_t> w16 = {7, 8, 9};
  auto s16 = Bytes(w16);
  std::vector<uint8_t> x16(4), y16(4);
  ConvertWindows(s16.data(), 2, 1, 2, OutDtype::kUint16, x16.data(), y16.data(), 0, nullptr);
  CHECK(As<uint16_t>(x16) == std::vector<uint16_t>{7, 8});
  CHECK(As<uint16_t>(y16) == std::vector<uint16_t>{8, 9});
  CHECK_FALSE(CheckOutDtype(OutDtype::kUint16, 4).ok());
  CHECK(CheckOutDtype(OutDtype::kUint16, 2).ok());
  CHECK(CheckOutDtype(OutDtype::kInt32, 4).ok());
}

TEST_CASE("convert: the vocab check records every id >= V with its offset", "[dataload]") {
  // Row 0 is clean; row 1 has 50257 (== V, out of range) at column 2 and 60000 at column 4.
  std::vector<uint16_t> win = {1, 2, 3, 4, 50256, 5, 6, 50257, 7, 60000};
  auto src = Bytes(win);
  std::vector<uint8_t> x(2 * 4 * 8), y(2 * 4 * 8);
  VocabCheck c;
  ConvertWindows(src.data(), 2, 2, 4, OutDtype::kInt64, x.data(), y.data(), 50257, &c);
  CHECK(c.ids_checked == 10);
  CHECK(c.max_id == 60000);
  CHECK(c.bad == std::vector<uint64_t>{7, 9});  // row 1 starts at offset 5
  CHECK(c.bad_ids == std::vector<uint64_t>{50257, 60000});
  VocabCheck ok;
  ConvertWindows(src.data(), 2, 2, 4, OutDtype::kInt64, x.data(), y.data(), 60001, &ok);
  CHECK(ok.bad.empty());
  CHECK(ok.max_id == 60000);
}
