#include "lmkit/dist/wire.h"

namespace lmkit::dist {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

bool GetVarint(const char** p, const char* end, uint64_t* v) {
  uint64_t x = 0;
  const char* q = *p;
  for (int shift = 0; shift < 70 && q < end; shift += 7) {
    const auto c = static_cast<unsigned char>(*q++);
    x |= uint64_t{c & 0x7Fu} << shift;
    if ((c & 0x80) == 0) {
      *p = q;
      *v = x;
      return true;
    }
  }
  return false;
}

}  // namespace lmkit::dist
