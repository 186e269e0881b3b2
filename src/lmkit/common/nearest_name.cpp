#include "lmkit/common/nearest_name.h"

#include <algorithm>

namespace lmkit {

namespace {
size_t NameEditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string NearestName(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = 4;
  for (const auto& c : candidates) {
    if (!name.empty() && c.rfind(name, 0) == 0) return c;
    size_t d = NameEditDistance(name, c);
    // At most half of what was typed may be wrong: "zzz" is 3 edits from "l4" too, which is no suggestion.
    if (d < best_d && 2 * d <= name.size()) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace lmkit
