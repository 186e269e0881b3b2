// The id formats' names, defaults by extension, the dtype a tokenizer needs, and the text format's byte quoting.
#include "lmkit/bpe/files/id_format.h"

#include <catch2/catch.hpp>
#include <string>

using namespace lmkit::bpe;
using lmkit::ErrorCode;

namespace {

// All 256 bytes as tokens, then one more token with id `top` (so id_limit() is top + 1).
Tokenizer WithTopId(uint32_t top) {
  Tokenizer t;
  for (int b = 0; b < 256; ++b)
    REQUIRE(t.AddToken(std::string(1, static_cast<char>(b)), static_cast<uint32_t>(b)).ok());
  REQUIRE(t.AddToken("top", top).ok());
  REQUIRE(t.Finish().ok());
  return t;
}

}  // namespace

TEST_CASE("id format: names round trip, the extension picks the format", "[bpe][id_format]") {
  for (const auto& e : kIdFormatNames) {
    auto f = IdFormatFromName(e.name);
    REQUIRE(f.ok());
    CHECK(*f == e.format);
    CHECK(IdFormatName(e.format) == e.name);
  }
  CHECK(IdFormatFromName("csv").status().code() == ErrorCode::kInvalidArgument);
  CHECK(IdFormatFromPath("out/ids.npy") == IdFormat::kNpy);
  CHECK(IdFormatFromPath("ids.json") == IdFormat::kJson);
  CHECK(IdFormatFromPath("ids.txt") == IdFormat::kText);
  CHECK(IdFormatFromPath("ids.bin") == IdFormat::kBin);
  CHECK(IdFormatFromPath("ids") == IdFormat::kBin);
  CHECK(IdFormatFromPath("npy") == IdFormat::kBin);  // a name, not an extension
}

TEST_CASE("id format: dtype names and the dtype a tokenizer needs", "[bpe][id_format]") {
  CHECK(*IdDtypeFromName("u16") == IdDtype::kU16);
  CHECK(*IdDtypeFromName("uint32") == IdDtype::kU32);
  CHECK(*IdDtypeFromName("auto") == IdDtype::kAuto);
  CHECK(IdDtypeName(IdDtype::kU16) == "uint16");  // the first spelling is the name
  CHECK(IdDtypeFromName("int16").status().code() == ErrorCode::kInvalidArgument);

  const Tokenizer fits = WithTopId(65535);  // id_limit 65,536: every id fits 16 bits
  CHECK(*ResolveDtype(IdDtype::kAuto, fits) == IdDtype::kU16);
  CHECK(*ResolveDtype(IdDtype::kU32, fits) == IdDtype::kU32);
  const Tokenizer wide = WithTopId(65536);
  CHECK(*ResolveDtype(IdDtype::kAuto, wide) == IdDtype::kU32);
  auto bad = ResolveDtype(IdDtype::kU16, wide);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == ErrorCode::kInvalidArgument);
  CHECK(bad.status().message().find(lmkit::Field("dtype")) == 0);
  CHECK(bad.status().message().find("65536") != std::string::npos);
}

TEST_CASE("id format: QuoteTokenBytes escapes what is not printable or not UTF-8", "[bpe][id_format]") {
  CHECK(QuoteTokenBytes("hello") == "\"hello\"");
  CHECK(QuoteTokenBytes("") == "\"\"");
  CHECK(QuoteTokenBytes("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(QuoteTokenBytes("\n\r\t") == "\"\\n\\r\\t\"");
  CHECK(QuoteTokenBytes(std::string("\x00\x1f\x7f", 3)) == "\"\\u0000\\u001f\\u007f\"");
  CHECK(QuoteTokenBytes("\xc3\xa9t\xc3\xa9") == "\"\xc3\xa9t\xc3\xa9\"");  // é: valid UTF-8 kept
  CHECK(QuoteTokenBytes("\xf0\x9f\x98\x80") == "\"\xf0\x9f\x98\x80\"");    // U+1F600 kept
  CHECK(QuoteTokenBytes("\xc3") == "\"\\xc3\"");                           // a cut sequence (BPE pieces)
  CHECK(QuoteTokenBytes("\xff\x80") == "\"\\xff\\x80\"");                  // never valid
  CHECK(QuoteTokenBytes("\xc0\xaf") == "\"\\xc0\\xaf\"");                  // overlong '/'
  CHECK(QuoteTokenBytes("\xed\xa0\x80") == "\"\\xed\\xa0\\x80\"");         // a surrogate
  CHECK(QuoteTokenBytes("\xf8\x80\x80") == "\"\\xf8\\x80\\x80\"");         // no lead byte above 0xf4
}
