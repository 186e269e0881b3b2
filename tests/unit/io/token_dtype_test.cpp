// The one token-file dtype: names, parsing, widths and the auto rule shared by bpe encode, dataload and eval.
#include "lmkit/io/token_dtype.h"

#include <catch2/catch.hpp>

using namespace lmkit::io;

TEST_CASE("token_dtype: names and parsing round-trip through the table", "[io][token_dtype]") {
  REQUIRE(TokenDtypeTable().size() == 3);
  for (const auto& e : TokenDtypeTable()) {
    CHECK(TokenDtypeName(e.dtype) == e.name);
    auto p = ParseTokenDtype(e.name);
    REQUIRE(p.ok());
    CHECK(*p == e.dtype);
  }
  CHECK(*ParseTokenDtype("u16") == TokenDtype::kU16);
  CHECK(*ParseTokenDtype("u32") == TokenDtype::kU32);
  auto bad = ParseTokenDtype("int64");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == lmkit::ErrorCode::kInvalidArgument);
  CHECK(bad.status().message() == "unknown dtype 'int64' (expected auto, uint16 or uint32)");
}

TEST_CASE("token_dtype: widths and the auto rule", "[io][token_dtype]") {
  CHECK(TokenDtypeBytes(TokenDtype::kU16) == 2);
  CHECK(TokenDtypeBytes(TokenDtype::kU32) == 4);
  CHECK(TokenDtypeBytes(TokenDtype::kAuto) == 0);
  CHECK(TokenDtypeOfBytes(2) == TokenDtype::kU16);
  CHECK(TokenDtypeOfBytes(4) == TokenDtype::kU32);
  // 65,536 ids (0..65535) still fit uint16; one more does not.
  CHECK(ResolveAuto(TokenDtype::kAuto, 65536) == TokenDtype::kU16);
  CHECK(ResolveAuto(TokenDtype::kAuto, 65537) == TokenDtype::kU32);
  CHECK(ResolveAuto(TokenDtype::kU32, 10) == TokenDtype::kU32);
}
