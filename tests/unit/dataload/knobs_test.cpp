// The knob tables: one name per value, used both ways; sweep axes parse and apply through them.
#include "lmkit/dataload/knobs.h"

#include <catch2/catch.hpp>

using namespace lmkit::dataload;

TEST_CASE("knobs: every table round-trips names and values", "[dataload][knobs]") {
  for (const auto& e : AccessValues()) CHECK(lmkit::FindEnum(AccessValues(), e.name) == e.value);
  for (const auto& e : AdviceValues()) CHECK(lmkit::FindEnum(AdviceValues(), e.name) == e.value);
  for (const auto& e : CacheModeValues()) CHECK(std::string(CacheModeName(e.value)) == e.name);
  for (const auto& e : OutDtypeValues()) CHECK(std::string(OutDtypeName(e.value)) == e.name);
  CHECK(lmkit::EnumChoices(CacheModeValues()) == "as-is, warm, cold or cold-each");
  CHECK_FALSE(lmkit::FindEnum(AccessValues(), "fast").has_value());
  CHECK(SweepKnobs().size() == 9);
}

TEST_CASE("knobs: sweep axes reject unknown knobs and values, naming the field", "[dataload][knobs]") {
  CHECK_FALSE(ParseSweepAxis("threads").ok());
  CHECK_FALSE(ParseSweepAxis("threads=1,,2").ok());
  CHECK_FALSE(ParseSweepAxis("threads=0").ok());
  CHECK_FALSE(ParseSweepAxis("access=mmap,fast").ok());
  auto colour = ParseSweepAxis("colour=red");
  REQUIRE_FALSE(colour.ok());
  CHECK(colour.status().ToString() ==
        "sweep: unknown knob 'colour' (knobs: threads, prefetch, access, advice, cache, batch-size, context-length, "
        "out-dtype, memory)");
  auto b = ParseSweepAxis("b=8,16");
  REQUIRE(b.ok());
  CHECK(b->name == "batch-size");
  CHECK(b->values == std::vector<std::string>{"8", "16"});
  LoaderConfig c;
  REQUIRE(ApplyAxisValue("cache", "cold-each", &c).ok());
  REQUIRE(ApplyAxisValue("memory", "pageable", &c).ok());
  REQUIRE(ApplyAxisValue("context-length", "256", &c).ok());
  CHECK(c.cache == CacheMode::kColdEach);
  CHECK_FALSE(c.pinned);
  CHECK(ConfigValue(c, "context-length") == "context-length=256");
  CHECK(ConfigValue(c, "memory") == "memory=pageable");
}
