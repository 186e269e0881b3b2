// The one UTF-8 decoder and encoder: every scalar value round-trips, and every ill-formed byte is one invalid unit.
#include "lmkit/common/utf8.h"

#include <catch2/catch.hpp>
#include <string>

using namespace lmkit;

TEST_CASE("utf8: every scalar value round-trips through AppendUtf8 and DecodeUtf8At", "[common][utf8]") {
  for (uint32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    AppendUtf8(s, cp);
    const size_t want = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    REQUIRE(s.size() == want);
    const DecodedChar d = DecodeUtf8At(s, 0);
    REQUIRE(d.cp == cp);
    REQUIRE(d.len == want);
  }
}

TEST_CASE("utf8: ill-formed and truncated sequences are one invalid byte each", "[common][utf8]") {
  auto invalid_one = [](std::string_view s, size_t pos = 0) {
    const DecodedChar d = DecodeUtf8At(s, pos);
    return d.cp == kInvalidCodePoint && d.len == 1;
  };
  CHECK(invalid_one("\x80"));              // a lone continuation byte
  CHECK(invalid_one("\xC0\xAF"));          // overlong '/'
  CHECK(invalid_one("\xC1\xBF"));          // overlong
  CHECK(invalid_one("\xE0\x80\xAF"));      // overlong 3-byte
  CHECK(invalid_one("\xF0\x80\x80\xAF"));  // overlong 4-byte
  CHECK(invalid_one("\xED\xA0\x80"));      // a surrogate
  CHECK(invalid_one("\xF4\x90\x80\x80"));  // above U+10FFFF
  CHECK(invalid_one("\xF5\x80\x80\x80"));  // no lead byte above 0xF4
  CHECK(invalid_one("\xF8\x80\x80"));
  CHECK(invalid_one("\xFF"));
  CHECK(invalid_one("\xE2\x82"));  // truncated at the end
  CHECK(
      invalid_one("\xE2\x82"
                  "a"));           // a non-continuation byte inside
  CHECK(invalid_one("a\xC3", 1));  // the last byte of the text, never read past
  CHECK(DecodeUtf8At("a\xC3\xA9", 1).cp == 0xE9);
}
