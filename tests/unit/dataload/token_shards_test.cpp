#include "lmkit/dataload/token_shards.h"

#include <catch2/catch.hpp>

#include "support/run_lmkit.h"

using namespace lmkit::dataload;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;

TEST_CASE("token shards: numpy-written .npy headers give dtype, offset and count (through lmkit/io)", "[dataload]") {
  auto u16 = OpenTokenShards({TestData("dataload/tokens_u16.npy")}, lmkit::io::TokenDtype::kAuto, 0);
  REQUIRE(u16.ok());
  CHECK((*u16)[0].npy);
  CHECK((*u16)[0].token_bytes == 2);
  CHECK((*u16)[0].data_offset == 128);  // numpy pads the v1.0 header to a multiple of 64
  CHECK((*u16)[0].tokens == 3000);
  CHECK((*u16)[0].file_bytes == 128 + 6000);
  auto u32 = OpenTokenShards({TestData("dataload/tokens_u32.npy")}, lmkit::io::TokenDtype::kAuto, 100277);
  REQUIRE(u32.ok());
  CHECK((*u32)[0].token_bytes == 4);
  CHECK((*u32)[0].tokens == 3000);
}

TEST_CASE("token shards: wrong dtypes and mixed shards are errors naming the file", "[dataload]") {
  auto i64 = OpenTokenShards({TestData("dataload/tokens_i64.npy")}, lmkit::io::TokenDtype::kAuto, 0);
  REQUIRE_FALSE(i64.ok());
  CHECK(i64.status().subject() == TestData("dataload/tokens_i64.npy"));
  auto clash = OpenTokenShards({TestData("dataload/tokens_u16.npy")}, lmkit::io::TokenDtype::kU32, 0);
  REQUIRE_FALSE(clash.ok());
  // The core names the request field; each front end spells it (the CLI as --dtype).
  CHECK(clash.status().ToString() ==
        TestData("dataload/tokens_u16.npy") + ": holds uint16 tokens (from its .npy header) but dtype is uint32");
  auto mixed = OpenTokenShards({TestData("dataload/tokens_u16.npy"), TestData("dataload/tokens_u32.npy")},
                               lmkit::io::TokenDtype::kAuto, 0);
  REQUIRE_FALSE(mixed.ok());
  CHECK(mixed.status().subject() == TestData("dataload/tokens_u32.npy"));
  auto vocab = OpenTokenShards({TestData("dataload/tokens_u16.npy")}, lmkit::io::TokenDtype::kAuto, 100277);
  REQUIRE_FALSE(vocab.ok());
  CHECK(vocab.status().code() == lmkit::ErrorCode::kInvalidArgument);
  CHECK(vocab.status().ToString() ==
        "vocab_size 100277 does not fit uint16 tokens (" + TestData("dataload/tokens_u16.npy") + "); use dtype uint32");
}

TEST_CASE("token shards: .bin dtype comes from --dtype or the vocab size", "[dataload]") {
  TempDir dir;
  WriteAll(dir.file("t.bin"), std::string(4000, 'x'));
  WriteAll(dir.file("odd.bin"), std::string(4001, 'x'));
  auto a = OpenTokenShards({dir.file("t.bin")}, lmkit::io::TokenDtype::kAuto, 0);
  REQUIRE(a.ok());
  CHECK((*a)[0].token_bytes == 2);
  CHECK((*a)[0].tokens == 2000);
  CHECK((*a)[0].data_offset == 0);
  auto b = OpenTokenShards({dir.file("t.bin")}, lmkit::io::TokenDtype::kAuto, 100277);
  REQUIRE(b.ok());
  CHECK((*b)[0].token_bytes == 4);
  CHECK((*b)[0].tokens == 1000);
  auto odd = OpenTokenShards({dir.file("odd.bin")}, lmkit::io::TokenDtype::kU16, 0);
  REQUIRE_FALSE(odd.ok());
  CHECK(odd.status().message().find("not a multiple of 2") != std::string::npos);
  auto missing = OpenTokenShards({dir.file("nope.bin")}, lmkit::io::TokenDtype::kAuto, 0);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == lmkit::ErrorCode::kNotFound);
}
