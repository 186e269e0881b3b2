#include "lmkit/present/inspect_text.h"

#include <catch2/catch.hpp>
#include <string>

using lmkit::present::InspectText;
using lmkit::present::PrintableText;

TEST_CASE("inspect text: control bytes in names are escaped, never printed raw", "[present][inspect]") {
  CHECK(PrintableText("model.norm.weight") == "model.norm.weight");
  CHECK(PrintableText(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(PrintableText("x\x1b[31my\n\x7f") == "x\\x1b[31my\\x0a\\x7f");
  CHECK(PrintableText("back\\slash") == "back\\\\slash");
  CHECK(PrintableText("\xc3\xa9t\xc3\xa9") == "\xc3\xa9t\xc3\xa9");  // UTF-8 stays as it is

  lmkit::io::InspectResult r;
  r.path = "m.safetensors";
  r.format = "safetensors";
  lmkit::io::InspectedTensor t;
  t.name = std::string("evil\0name", 9);
  t.dtype = lmkit::io::DType::kF32;
  t.shape = {2};
  t.elements = 2;
  t.bytes = 8;
  r.tensors.push_back(t);
  r.metadata.emplace_back("k\n", "v\r");
  const std::string text = InspectText(r);
  CHECK(text.find('\0') == std::string::npos);
  CHECK(text.find("evil\\x00name  F32") != std::string::npos);
  CHECK(text.find("metadata    k\\x0a = v\\x0d\n") != std::string::npos);
}
