// Granularity: the --granularity spellings, the scale tensor's shape for each, and compressed-tensors' strategy.
#include "lmkit/quant/granularity.h"

#include <catch2/catch.hpp>

using namespace lmkit::quant;

TEST_CASE("granularity: names parse and print back, anything else names the field", "[quant][granularity]") {
  for (const char* name : {"channel", "tensor", "group:1", "group:32", "group:128"}) {
    auto g = ParseGranularity(name);
    REQUIRE(g.ok());
    CHECK(GranularityName(*g) == name);
  }
  CHECK(ParseGranularity("group:128")->group_size == 128);
  for (const char* bad :
       {"group:0", "group:", "group:-4", "group:12x", "row", "Channel", "", "group:99999999999999999999"}) {
    INFO(bad);
    auto g = ParseGranularity(bad);
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().code() == lmkit::ErrorCode::kInvalidArgument);
    CHECK(g.status().message() ==
          lmkit::Field("granularity") + " must be channel, tensor or group:N (N >= 1), not '" + bad + "'");
  }
}

TEST_CASE("granularity: scale shapes and counts of a rows x cols weight", "[quant][granularity]") {
  const Granularity channel = *ParseGranularity("channel");
  const Granularity tensor = *ParseGranularity("tensor");
  const Granularity group = *ParseGranularity("group:128");
  CHECK(channel.ScaleShape(4096, 11008) == std::vector<uint64_t>{4096, 1});
  CHECK(channel.ScaleCount(4096, 11008) == 4096);
  CHECK(tensor.ScaleShape(4096, 11008) == std::vector<uint64_t>{1});
  CHECK(tensor.ScaleCount(4096, 11008) == 1);
  CHECK(group.ScaleShape(4096, 11008) == std::vector<uint64_t>{4096, 86});  // 11,008 / 128
  CHECK(group.ScaleCount(4096, 11008) == 4096 * 86);
  CHECK(std::string(StrategyName(channel)) == "channel");
  CHECK(std::string(StrategyName(tensor)) == "tensor");
  CHECK(std::string(StrategyName(group)) == "group");  // the size lives in group_size, not the strategy
  CHECK(channel == Granularity{});                     // the default
  CHECK_FALSE(group == *ParseGranularity("group:64"));
}
