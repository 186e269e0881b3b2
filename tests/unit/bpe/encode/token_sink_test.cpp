#include "lmkit/bpe/encode/token_sink.h"

#include <catch2/catch.hpp>

using namespace lmkit::bpe;

TEST_CASE("bpe encode: a sink's default Write16 widens every id, in order, across its 4096-id steps", "[bpe][encode]") {
  std::vector<uint16_t> ids(10001);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint16_t>((i * 40503u) & 0xffffu);
  VectorSink sink;
  REQUIRE(sink.Write16(ids.data(), ids.size()).ok());
  REQUIRE(sink.Write16(ids.data(), 0).ok());
  REQUIRE(sink.ids().size() == ids.size());
  for (size_t i = 0; i < ids.size(); ++i) REQUIRE(sink.ids()[i] == ids[i]);
}
