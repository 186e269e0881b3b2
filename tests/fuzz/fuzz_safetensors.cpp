// libFuzzer target: SafetensorsFile::Parse on arbitrary bytes must never crash, read out of bounds or hang; when it
// accepts an input, every tensor view lies inside the input, the views tile the data buffer, and re-encoding the
// header (lmkit's writer) yields a file that parses to the same tensors.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "lmkit/io/dtype.h"
#include "lmkit/io/safetensors.h"

using namespace lmkit::io;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = SafetensorsFile::Parse({data, size}, "fuzz");
  if (!f.ok()) {
    if (f.status().message().empty() || f.status().message().find('\n') != std::string::npos) std::abort();
    return 0;
  }
  uint64_t pos = 0;
  std::vector<TensorSpec> specs;
  for (const TensorInfo& t : f->tensors()) {
    auto bytes = f->Data(t);
    if (bytes.data() < data || bytes.data() + bytes.size() > data + size) std::abort();
    if (t.begin != pos || t.num_elements() * DTypeSize(t.dtype) != t.num_bytes()) std::abort();
    pos = t.end;
    // Touch the data through the converters, as inspect --stats would.
    float sink[8];
    ConvertToF32(t.dtype, bytes.data(), sink, std::min<uint64_t>(8, t.num_elements()));
    specs.push_back({t.name, t.dtype, t.shape});
  }
  if (f->data_offset() + pos != size) std::abort();
  auto header = EncodeSafetensorsHeader(specs, f->metadata());
  if (!header.ok()) return 0;  // e.g. a name that is valid JSON but not valid for lmkit's writer (invalid UTF-8)
  std::string img = *header;
  img.append(reinterpret_cast<const char*>(data) + f->data_offset(), pos);
  auto g = SafetensorsFile::Parse({reinterpret_cast<const uint8_t*>(img.data()), img.size()}, "re-encoded");
  if (!g.ok() || g->tensors().size() != f->tensors().size() || g->header_bytes() % 8 != 0) std::abort();
  for (size_t i = 0; i < g->tensors().size(); ++i) {
    const auto &a = f->tensors()[i], &b = g->tensors()[i];
    if (a.name != b.name || a.dtype != b.dtype || a.shape != b.shape || a.begin != b.begin) std::abort();
  }
  return 0;
}
