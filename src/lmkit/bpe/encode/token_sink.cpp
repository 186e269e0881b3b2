#include "lmkit/bpe/encode/token_sink.h"

#include <algorithm>
#include <iterator>

namespace lmkit::bpe {

Status TokenSink::Write16(const uint16_t* ids, size_t count) {
  uint32_t wide[4096];
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(count - done, std::size(wide));
    std::copy(ids + done, ids + done + n, wide);
    LMKIT_RETURN_IF_ERROR(Write(wide, n));
    done += n;
  }
  return Status::Ok();
}

}  // namespace lmkit::bpe
