#include "lmkit/bpe/files/byte_unicode.h"

#include <catch2/catch.hpp>
#include <set>

using namespace lmkit::bpe;

TEST_CASE("byte_unicode: GPT-2's table", "[bpe][byte_unicode]") {
  CHECK(ByteToCodePoint(' ') == 0x120);   // 'Ġ'
  CHECK(ByteToCodePoint('\n') == 0x10A);  // 'Ċ'
  CHECK(ByteToCodePoint(0) == 0x100);
  CHECK(ByteToCodePoint('!') == '!');
  CHECK(ByteToCodePoint(0xAD) == 0x143);  // the last unprintable byte gets the last code point
  CHECK(ByteToCodePoint(0xFF) == 0xFF);
  std::set<uint32_t> seen;
  for (int b = 0; b < 256; ++b) {
    seen.insert(ByteToCodePoint(static_cast<uint8_t>(b)));
    CHECK(CodePointToByte(ByteToCodePoint(static_cast<uint8_t>(b))) == b);
  }
  CHECK(seen.size() == 256);
  CHECK(CodePointToByte(0x144) == -1);
  CHECK(CodePointToByte(0x7F) == -1);
}

TEST_CASE("byte_unicode: printable form round trip", "[bpe][byte_unicode]") {
  CHECK(BytesToPrintable(" the") == "\xc4\xa0the");  // "Ġthe"
  CHECK(BytesToPrintable("\n\n") == "\xc4\x8a\xc4\x8a");
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  auto back = PrintableToBytes(BytesToPrintable(all));
  REQUIRE(back.ok());
  CHECK(*back == all);
  CHECK_FALSE(PrintableToBytes(" raw space").ok());  // U+0020 is not in the printable form
  CHECK_FALSE(PrintableToBytes("\xff").ok());
}
