// libFuzzer target: the .npy header parser (NpyFile::Parse) on arbitrary bytes must never crash, read out of bounds or
// hang; an accepted input's data view lies inside it with exactly the announced size, and lmkit's own header for the
// same dtype and shape parses back to the same array description.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "lmkit/io/npy.h"

using namespace lmkit::io;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = NpyFile::Parse({data, size}, "fuzz");
  if (!f.ok()) {
    if (f.status().message().empty() || f.status().message().find('\n') != std::string::npos) std::abort();
    return 0;
  }
  const NpyHeader& h = f->header();
  if (f->data().data() != data + h.data_offset || h.data_offset + f->data().size() != size) std::abort();
  if (f->data().size() != h.num_elements() * DTypeSize(h.dtype)) std::abort();
  auto header = EncodeNpyHeader(h.dtype, h.shape);
  if (!header.ok() || header->size() % 64 != 0) std::abort();
  std::string img = *header;
  img.append(reinterpret_cast<const char*>(f->data().data()), f->data().size());
  auto g = ParseNpyHeader({reinterpret_cast<const uint8_t*>(img.data()), img.size()}, "re-encoded");
  if (!g.ok() || g->dtype != h.dtype || g->shape != h.shape) std::abort();
  return 0;
}
