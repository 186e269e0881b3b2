// The name tables' one parsing and listing: "a, b or c", lookups by name and by value, errors naming the field.
#include "lmkit/quant/name_table.h"

#include <catch2/catch.hpp>
#include <string_view>

using namespace lmkit::quant;

namespace {

enum class Colour { kRed, kGreen, kBlue };
struct ColourEntry {
  Colour value;
  std::string_view name;
};
constexpr ColourEntry kColours[] = {{Colour::kRed, "red"}, {Colour::kGreen, "green"}, {Colour::kBlue, "blue"}};

}  // namespace

TEST_CASE("name table: choices are listed with commas and a final or", "[quant][name_table]") {
  CHECK(JoinChoices({}).empty());
  CHECK(JoinChoices({"a"}) == "a");
  CHECK(JoinChoices({"a", "b"}) == "a or b");
  CHECK(JoinChoices({"a", "b", "c"}) == "a, b or c");
  CHECK(ChoicesOf(kColours) == "red, green or blue");
}

TEST_CASE("name table: parse by name, look up by value", "[quant][name_table]") {
  auto g = ParseByName(kColours, &ColourEntry::value, "green", "colour");
  REQUIRE(g.ok());
  CHECK(*g == Colour::kGreen);
  auto bad = ParseByName(kColours, &ColourEntry::value, "Green", "colour");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == lmkit::ErrorCode::kInvalidArgument);
  CHECK(bad.status().message() == lmkit::Field("colour") + " must be red, green or blue, not 'Green'");
  CHECK(EntryOf(kColours, &ColourEntry::value, Colour::kBlue).name == "blue");
}
