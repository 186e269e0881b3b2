// The one name-table helper: lookups by name and by value, aliases parsed but never printed, the choice lists of help
// texts, and parse errors naming the field.
#include "lmkit/common/name_table.h"

#include <array>
#include <catch2/catch.hpp>
#include <string_view>

using namespace lmkit;

namespace {

enum class Colour { kRed, kGreen, kBlue, kPink };

// An info table: the value is one member among others.
struct ColourInfo {
  Colour colour;
  std::string_view name;
  int hue;
};
constexpr ColourInfo kColours[] = {
    {Colour::kRed, "red", 0}, {Colour::kGreen, "green", 120}, {Colour::kBlue, "blue", 240}};

// A plain table with aliases after the names they stand for.
constexpr std::array<EnumName<Colour>, 5> kPlain = {{{Colour::kRed, "red"},
                                                     {Colour::kGreen, "green"},
                                                     {Colour::kBlue, "blue"},
                                                     {Colour::kRed, "scarlet"},
                                                     {Colour::kBlue, "azure"}}};
std::span<const EnumName<Colour>> Plain() { return kPlain; }

}  // namespace

TEST_CASE("name table: lookups by name and by value", "[common][name_table]") {
  REQUIRE(FindByName(kColours, "green") != nullptr);
  CHECK(FindByName(kColours, "green")->hue == 120);
  CHECK(FindByName(kColours, "Green") == nullptr);
  CHECK(FindByValue(kColours, &ColourInfo::colour, Colour::kBlue)->hue == 240);
  CHECK(FindByValue(kColours, &ColourInfo::colour, Colour::kPink) == nullptr);
  CHECK(EntryOf(kColours, &ColourInfo::colour, Colour::kBlue).name == "blue");
  CHECK(EntryOf(kColours, &ColourInfo::colour, Colour::kPink).name == "red");  // incomplete table: the first entry
  CHECK(NameOf(kColours, &ColourInfo::colour, Colour::kPink, "none") == "none");
}

TEST_CASE("name table: aliases parse to their value but are never printed or listed", "[common][name_table]") {
  CHECK(FindEnum(Plain(), "scarlet") == Colour::kRed);
  CHECK(FindEnum(Plain(), "azure") == Colour::kBlue);
  CHECK_FALSE(FindEnum(Plain(), "pink").has_value());
  CHECK(EnumNameOf(Plain(), Colour::kRed) == "red");
  CHECK(EnumNameOf(Plain(), Colour::kBlue) == "blue");
  CHECK(EnumNameOf(Plain(), Colour::kPink).empty());
  CHECK(EnumChoices(Plain()) == "red, green or blue");
  CHECK(EnumChoices(Plain(), " and ") == "red, green and blue");
  CHECK(EnumChoices(Plain(), ", ") == "red, green, blue");
}

TEST_CASE("name table: lists with any separator", "[common][name_table]") {
  CHECK(NameList(kColours, &ColourInfo::colour) == "red, green or blue");
  CHECK(NameList(kColours, &ColourInfo::colour, " | ", " | ") == "red | green | blue");
  CHECK(NameList(std::span(kColours, 1), &ColourInfo::colour) == "red");
  CHECK(NameList(std::span(kColours, 2), &ColourInfo::colour) == "red or green");
  CHECK(NameList(std::span(kColours, 0), &ColourInfo::colour).empty());
}

TEST_CASE("name table: parse errors name the field, list the choices and quote the name", "[common][name_table]") {
  CHECK(*ParseName(kColours, &ColourInfo::colour, "blue", "colour") == Colour::kBlue);
  CHECK(*ParseEnum(Plain(), "scarlet", "colour") == Colour::kRed);

  auto got = ParseEnum(Plain(), "pink", "colour");
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == ErrorCode::kInvalidArgument);
  CHECK(got.status().message() == Field("colour") + " must be red, green or blue (got 'pink')");

  auto no = ParseName(kColours, &ColourInfo::colour, "Green", "colour", UnknownName::kNot);
  REQUIRE_FALSE(no.ok());
  CHECK(no.status().message() == Field("colour") + " must be red, green or blue, not 'Green'");
}
