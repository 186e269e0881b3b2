#include "lmkit/quant/granularity.h"

#include <charconv>

namespace lmkit::quant {

std::vector<uint64_t> Granularity::ScaleShape(uint64_t rows, uint64_t cols) const {
  switch (kind) {
    case Kind::kChannel:
      return {rows, 1};
    case Kind::kTensor:
      return {1};
    case Kind::kGroup:
      return {rows, group_size ? cols / group_size : 0};
  }
  return {};
}

uint64_t Granularity::ScaleCount(uint64_t rows, uint64_t cols) const {
  uint64_t n = 1;
  for (uint64_t d : ScaleShape(rows, cols)) n *= d;
  return n;
}

std::string_view GranularityChoices() { return "channel, tensor or group:N (N >= 1)"; }

Result<Granularity> ParseGranularity(std::string_view text) {
  Granularity g;
  if (text == "channel") return g;
  if (text == "tensor") {
    g.kind = Granularity::Kind::kTensor;
    return g;
  }
  if (text.substr(0, 6) == "group:") {
    std::string_view num = text.substr(6);
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (ec == std::errc() && p == num.data() + num.size() && n >= 1) {
      g.kind = Granularity::Kind::kGroup;
      g.group_size = n;
      return g;
    }
  }
  return Status::InvalidArgument(Field("granularity") + " must be " + std::string(GranularityChoices()) + ", not '" +
                                 std::string(text) + "'");
}

std::string GranularityName(const Granularity& g) {
  return g.kind == Granularity::Kind::kGroup ? "group:" + std::to_string(g.group_size) : StrategyName(g);
}

const char* StrategyName(const Granularity& g) {
  switch (g.kind) {
    case Granularity::Kind::kChannel:
      return "channel";
    case Granularity::Kind::kTensor:
      return "tensor";
    case Granularity::Kind::kGroup:
      return "group";
  }
  return "";
}

}  // namespace lmkit::quant
