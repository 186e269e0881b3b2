// The scheme and format tables: every name parses to its entry, what each scheme needs, and errors naming the field.
#include "lmkit/quant/scheme.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

using namespace lmkit::quant;

TEST_CASE("scheme: every scheme and format round trips through its name", "[quant][scheme]") {
  std::set<std::string_view> names;
  for (const SchemeInfo& s : Schemes()) {
    auto p = ParseQuantScheme(s.name);
    REQUIRE(p.ok());
    CHECK(*p == s.scheme);
    CHECK(&InfoOf(s.scheme) == &s);
    names.insert(s.name);
  }
  CHECK(names == std::set<std::string_view>{"w8a16", "w8a8", "fp8", "fp8-static", "w4a16"});
  for (const FormatInfo& f : Formats()) {
    auto p = ParseQuantFormat(f.name);
    REQUIRE(p.ok());
    CHECK(*p == f.format);
    CHECK(InfoOf(f.format).name == f.name);
  }
  auto bad = ParseQuantScheme("int4");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        lmkit::Field("scheme") + " must be w8a16, w8a8, fp8, fp8-static or w4a16, not 'int4'");
  CHECK(ParseQuantFormat("gguf").status().message() ==
        lmkit::Field("format") + " must be compressed-tensors or gguf-q8_0, not 'gguf'");
}

TEST_CASE("scheme: what each scheme stores and needs", "[quant][scheme]") {
  const SchemeInfo& w8a16 = InfoOf(QuantScheme::kW8A16);
  CHECK(w8a16.weights == "int8");
  CHECK(w8a16.ct_format == "pack-quantized");
  CHECK_FALSE(w8a16.activations);
  CHECK_FALSE(w8a16.takes_calibration);
  const SchemeInfo& w8a8 = InfoOf(QuantScheme::kW8A8);
  CHECK(w8a8.activations);
  CHECK(w8a8.takes_calibration);  // optional: static instead of dynamic
  CHECK_FALSE(w8a8.needs_calibration);
  const SchemeInfo& fp8s = InfoOf(QuantScheme::kFp8Static);
  CHECK(fp8s.weights == "fp8_e4m3");
  CHECK(fp8s.needs_calibration);
  CHECK(fp8s.takes_calibration);  // needing implies taking
  CHECK(fp8s.default_granularity == "tensor");
  for (const SchemeInfo& s : Schemes()) CHECK((!s.needs_calibration || s.takes_calibration));
}
