#include "lmkit/bpe/pretokenize/unicode9_normalization.h"

#include <algorithm>

namespace lmkit::bpe {

bool IsLaterNormalizing(uint32_t cp) {
  if (cp < kLaterNormalizing[0].first) return false;
  const CodePointRun* end = kLaterNormalizing + kLaterNormalizingCount;
  const CodePointRun* it =
      std::upper_bound(kLaterNormalizing, end, cp, [](uint32_t c, const CodePointRun& r) { return c < r.first; });
  return it != kLaterNormalizing && cp <= (it - 1)->last;
}

}  // namespace lmkit::bpe
