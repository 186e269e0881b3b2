#include "lmkit/quant/name_table.h"

namespace lmkit::quant {

std::string JoinChoices(const std::vector<std::string_view>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace lmkit::quant
