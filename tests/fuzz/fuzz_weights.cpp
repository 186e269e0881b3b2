// libFuzzer target: the GGUF tensor-table and ONNX initializer readers (weights_file.h) on arbitrary bytes must never
// crash, read out of bounds or hang; an error is one line; an accepted image's totals are the sums of its tensors.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "lmkit/io/weights_file.h"

using namespace lmkit::io;

namespace {

void Check(const lmkit::Result<WeightsSummary>& r) {
  if (!r.ok()) {
    const std::string m = r.status().ToString();
    if (m.empty() || m.find('\n') != std::string::npos) std::abort();
    return;
  }
  uint64_t bytes = 0, params = 0;
  for (const auto& t : r->tensors) bytes += t.bytes, params += t.elements;
  if (bytes != r->bytes || params != r->parameters) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Check(ParseGguf({data, size}, "fuzz.gguf"));
  Check(ParseOnnx({data, size}, "fuzz.onnx"));
  return 0;
}
