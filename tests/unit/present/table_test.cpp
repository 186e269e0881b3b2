// The report tables in their three text forms, and the format names the commands parse.
#include "lmkit/present/table.h"

#include <catch2/catch.hpp>

using namespace lmkit::present;

TEST_CASE("present table: aligned text, RFC 4180 CSV, Markdown", "[present]") {
  Table t;
  t.title = "T";
  t.header = {"name", "n"};
  t.numeric = {false, true};
  t.Add({"a", "1"});
  t.Add({"b,\"c\"", "22"});
  CHECK(RenderTable(t, Format::kTable) == "T\n  name    n\n  -----  --\n  a       1\n  b,\"c\"  22\n");
  CHECK(RenderTable(t, Format::kCsv) == "# T\nname,n\na,1\n\"b,\"\"c\"\"\",22\n");
  CHECK(RenderTable(t, Format::kMd) == "### T\n\n| name | n |\n|---|---:|\n| a | 1 |\n| b,\"c\" | 22 |\n");
  CHECK(TextLine("x", Format::kCsv) == "# x\n");
  CHECK(TextLine("x", Format::kMd, true) == "x  \n");
  CHECK(BlockGap(Format::kCsv).empty());
}

TEST_CASE("present table: format names parse and list from one table", "[present]") {
  CHECK(lmkit::EnumChoices(FormatNames()) == "table, json, csv or md");
  CHECK(*lmkit::ParseEnum(FormatNames(), "markdown", "format") == Format::kMd);
  auto bad = lmkit::ParseEnum(FormatNames(), "xml", "format");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().ToString() == "format must be table, json, csv or md (got 'xml')");
}
