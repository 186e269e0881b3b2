// Performance notes: the widening loops are plain indexed copies that GCC vectorises at -O2/-O3 (one load, one
// zero-extend, one store per element); writing x and y from the same loaded row keeps the window in L1. The vocab check
// runs as a separate max/count pass only when asked, so the default path pays nothing for it.
#include "lmkit/dataload/convert.h"

#include <cstring>

namespace lmkit::dataload {
namespace {

template <typename Src, typename Dst>
void Widen(const Src* win, size_t batch, size_t context, Dst* x, Dst* y) {
  for (size_t r = 0; r < batch; ++r) {
    const Src* w = win + r * (context + 1);
    Dst* xr = x + r * context;
    Dst* yr = y + r * context;
    for (size_t t = 0; t < context; ++t) xr[t] = static_cast<Dst>(w[t]);
    for (size_t t = 0; t < context; ++t) yr[t] = static_cast<Dst>(w[t + 1]);
  }
}

template <typename Src, typename Dst>
void Widen(const uint8_t* win, size_t batch, size_t context, uint8_t* x, uint8_t* y) {
  Widen(reinterpret_cast<const Src*>(win), batch, context, reinterpret_cast<Dst*>(x), reinterpret_cast<Dst*>(y));
}

template <typename Src>
void Check(const Src* win, size_t batch, size_t context, uint64_t vocab, VocabCheck* c) {
  const size_t row = context + 1;
  for (size_t r = 0; r < batch; ++r) {
    uint64_t mx = 0;
    uint64_t bad = 0;
    for (size_t t = 0; t < row; ++t) {
      uint64_t v = win[r * row + t];
      mx = v > mx ? v : mx;
      bad += v >= vocab ? 1 : 0;
    }
    if (mx > c->max_id) c->max_id = mx;
    // The positions are collected only for rows that have a bad id: the clean path stays a max/count pass.
    for (size_t t = 0; bad > 0 && t < row; ++t) {
      if (win[r * row + t] >= vocab) {
        c->bad.push_back(r * row + t);
        c->bad_ids.push_back(win[r * row + t]);
      }
    }
    c->ids_checked += row;
  }
}

}  // namespace

unsigned OutDtypeBytes(OutDtype d) { return d == OutDtype::kInt64 ? 8 : d == OutDtype::kInt32 ? 4 : 2; }

Status CheckOutDtype(OutDtype out, unsigned token_bytes) {
  if (out == OutDtype::kUint16 && token_bytes == 4) {
    return Status::InvalidArgument(Field("out_dtype") + " uint16 cannot hold uint32 token ids; use int32 or int64");
  }
  return Status::Ok();
}

void ConvertWindows(const uint8_t* windows, unsigned token_bytes, size_t batch, size_t context, OutDtype out,
                    uint8_t* x, uint8_t* y, uint64_t vocab_size, VocabCheck* check) {
  if (token_bytes == 2) {
    switch (out) {
      case OutDtype::kInt64:
        Widen<uint16_t, int64_t>(windows, batch, context, x, y);
        break;
      case OutDtype::kInt32:
        Widen<uint16_t, int32_t>(windows, batch, context, x, y);
        break;
      case OutDtype::kUint16:
        Widen<uint16_t, uint16_t>(windows, batch, context, x, y);
        break;
    }
    if (vocab_size > 0 && check != nullptr)
      Check(reinterpret_cast<const uint16_t*>(windows), batch, context, vocab_size, check);
  } else {
    switch (out) {
      case OutDtype::kInt64:
        Widen<uint32_t, int64_t>(windows, batch, context, x, y);
        break;
      case OutDtype::kInt32:
        Widen<uint32_t, int32_t>(windows, batch, context, x, y);
        break;
      case OutDtype::kUint16:
        Widen<uint32_t, uint16_t>(windows, batch, context, x, y);
        break;
    }
    if (vocab_size > 0 && check != nullptr)
      Check(reinterpret_cast<const uint32_t*>(windows), batch, context, vocab_size, check);
  }
}

}  // namespace lmkit::dataload
