#include "support/goldens.h"

#include <catch2/catch.hpp>

#include "support/run_lmkit.h"

namespace lmkit::test {

Json ReadGoldenJson(const std::string& path) {
  auto j = ParseJson(ReadAll(path), path);
  INFO(path);
  REQUIRE(j.ok());
  return *j;
}

std::vector<uint32_t> GoldenIds(const Json& list) {
  REQUIRE(list.is_array());
  std::vector<uint32_t> v;
  v.reserve(list.size());
  for (const Json& x : list) {
    REQUIRE(x.is_number_unsigned());
    v.push_back(x.get<uint32_t>());
  }
  return v;
}

}  // namespace lmkit::test
