// The committed Unicode class table must equal what PCRE2's Unicode database says (the table is generated from it).
#include "lmkit/bpe/unicode_classes.h"

#include <catch2/catch.hpp>

#include "lmkit/bpe/unicode_classes_gen.h"
#include "support/run_lmkit.h"

using namespace lmkit::bpe;

TEST_CASE("unicode classes: committed table equals PCRE2's classes for every code point", "[bpe][unicode_classes]") {
  auto gen = GenerateCharClasses();
  REQUIRE(gen.ok());
  size_t diffs = 0;
  for (uint32_t cp = 0; cp < 0x110000; ++cp) diffs += (*gen)[cp] != CharClassOf(cp);
  CHECK(diffs == 0);
  CHECK(CharClassOf('a') == kClassLl);
  CHECK(CharClassOf('A') == kClassLu);
  CHECK(CharClassOf(0x1C5) == kClassLt);
  CHECK(CharClassOf(0x2B0) == kClassLm);
  CHECK(CharClassOf(0x4E2D) == kClassLo);
  CHECK(CharClassOf(0x301) == kClassMark);
  CHECK(CharClassOf(0x216B) == kClassNumber);
  CHECK(CharClassOf(0x85) == kClassSpace);  // Unicode White_Space, as tiktoken's \s
  CHECK(CharClassOf(0x3000) == kClassSpace);
  CHECK(CharClassOf(0x200D) == kClassOther);
  CHECK(CharClassOf(0x110000) == kClassOther);
}

TEST_CASE("unicode classes: UTF-8 decoding rule", "[bpe][unicode_classes]") {
  auto d = [](std::string_view s) { return DecodeUtf8At(s, 0); };
  CHECK(d("\xc3\xa9").cp == 0xE9);
  CHECK(d("\xc3\xa9").len == 2);
  CHECK(d("\xf0\x9f\x98\x80").cp == 0x1F600);
  CHECK(d("\xc0\xaf").cp == kInvalidCodePoint);          // overlong
  CHECK(d("\xed\xa0\x80").cp == kInvalidCodePoint);      // surrogate
  CHECK(d("\xf4\x90\x80\x80").cp == kInvalidCodePoint);  // above U+10FFFF
  CHECK(d("\xe2\x82").cp == kInvalidCodePoint);          // truncated
  CHECK(d("\xe2\x82").len == 1);
  CHECK(d("\x80").len == 1);
}

// Hidden (not run by ctest): rewrites the committed table from PCRE2. Run after a PCRE2/Unicode upgrade.
TEST_CASE("unicode classes: regenerate the table", "[.regen_unicode]") {
  auto gen = GenerateCharClasses();
  REQUIRE(gen.ok());
  lmkit::test::WriteAll(lmkit::test::RepoPath("src/lmkit/bpe/unicode_classes_table.cpp"),
                        RenderCharClassTableSource(*gen));
}
