// The field-list declarations every JSON document is generated from: key order, optionals (null or absent), enums
// through their name tables, nested declared types, vectors, computed and grouped fields, and exact integers.
#include "lmkit/present/json_fields.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lmkit/common/name_table.h"

namespace lmkit::present {
namespace {

enum class Color { kRed, kGreen };
constexpr EnumName<Color> kColorNames[] = {
    {Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kGreen, "g"}};  // "g": an alias, never printed

struct Inner {
  uint32_t id = 0;
  std::string name;
};

struct Outer {
  std::string zeta;  // declared first: the document keeps declaration order, not alphabetical
  uint64_t big = 0;
  double ratio = 0;
  Color color = Color::kRed;
  std::optional<double> maybe;
  std::optional<double> maybe_omitted;
  std::vector<Inner> items;
  std::optional<Inner> nested;
  std::vector<std::vector<uint32_t>> ids;
  double read_s = 0, write_s = 0;
};

}  // namespace

LMKIT_JSON_ENUM(Color, EnumNameOf<Color>(kColorNames, v));
LMKIT_JSON_FIELDS(Inner, Field("id", &T::id), Field("name", &T::name));
LMKIT_JSON_FIELDS(Outer, Field("zeta", &T::zeta), Field("big", &T::big), Field("ratio", &T::ratio),
                  Field("color", &T::color), Field("maybe", &T::maybe), Optional("maybe_omitted", &T::maybe_omitted),
                  Field("items", &T::items), Field("nested", &T::nested), Field("ids", &T::ids),
                  Computed("count", [](const T& o) { return o.items.size(); }),
                  ComputedIf("big_half",
                             [](const T& o) -> std::optional<uint64_t> {
                               if (o.big == 0) return std::nullopt;
                               return o.big / 2;
                             }),
                  Object("seconds", Field("read", &T::read_s), Field("write", &T::write_s)));

TEST_CASE("json fields: a declared type prints its fields in declaration order", "[present][json_fields]") {
  Outer o;
  o.zeta = "z";
  o.big = 18446744073709551615ULL;  // exact past 2^53
  o.ratio = 0.1;
  o.color = Color::kGreen;
  o.items = {{1, "a"}, {2, "b"}};
  o.ids = {{1, 2}, {}};
  o.read_s = 1.5;
  o.write_s = 0.25;
  const Json j = ToJson(o);
  CHECK(DumpJson(j, -1) ==
        R"({"zeta":"z","big":18446744073709551615,"ratio":0.1,"color":"green","maybe":null,)"
        R"("items":[{"id":1,"name":"a"},{"id":2,"name":"b"}],"nested":null,"ids":[[1,2],[]],"count":2,)"
        R"("big_half":9223372036854775807,"seconds":{"read":1.5,"write":0.25}})");
}

TEST_CASE("json fields: optionals present print their value, an empty ComputedIf is left out",
          "[present][json_fields]") {
  Outer o;
  o.maybe = 2.0;
  o.maybe_omitted = 3.5;
  o.nested = Inner{7, "x"};
  const Json j = ToJson(o);
  CHECK(j["maybe"].get<double>() == 2.0);
  CHECK(j["maybe_omitted"].get<double>() == 3.5);
  CHECK(j["nested"]["id"] == 7);
  CHECK(j["color"] == "red");
  CHECK(j["items"].is_array());
  CHECK(j["items"].empty());
  CHECK_FALSE(j.contains("big_half"));  // big == 0
  // The keys in order, with maybe_omitted present between maybe and items.
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"zeta", "big", "ratio", "color", "maybe", "maybe_omitted", "items", "nested",
                                         "ids", "count", "seconds"});
}

TEST_CASE("json fields: ToJsonValue converts vectors of declared types and plain values", "[present][json_fields]") {
  CHECK(DumpJson(ToJsonValue(std::vector<Inner>{{3, "c"}}), -1) == R"([{"id":3,"name":"c"}])");
  CHECK(DumpJson(ToJsonValue(std::optional<Color>()), -1) == "null");
  CHECK(DumpJson(ToJsonValue(std::optional<Color>(Color::kRed)), -1) == R"("red")");
  CHECK(DumpJson(ToJsonValue(std::vector<bool>{true, false}), -1) == "[true,false]");
  CHECK(DumpJson(ToJsonValue(-3), -1) == "-3");
}

}  // namespace lmkit::present
