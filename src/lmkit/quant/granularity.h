// How many weights share one scale: per output channel (row), per tensor, or per group of G consecutive weights of a
// row. The names double as the `--granularity` values and, through StrategyName, as compressed-tensors' "strategy".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit::quant {

struct Granularity {
  enum class Kind : uint8_t { kChannel, kTensor, kGroup };
  Kind kind = Kind::kChannel;
  uint64_t group_size = 0;  // kGroup only

  // Shape of the scale tensor for a [rows, cols] weight: [rows, 1], [1] or [rows, cols / group_size].
  std::vector<uint64_t> ScaleShape(uint64_t rows, uint64_t cols) const;
  uint64_t ScaleCount(uint64_t rows, uint64_t cols) const;
  bool operator==(const Granularity&) const = default;
};

// "channel", "tensor", "group:N" (N >= 1). kInvalidArgument naming Field("granularity") on anything else.
Result<Granularity> ParseGranularity(std::string_view text);
// The inverse of ParseGranularity.
std::string GranularityName(const Granularity& g);
// compressed-tensors' "strategy" for the granularity: "channel", "tensor", "group".
const char* StrategyName(const Granularity& g);
// The accepted spellings, for help and messages: "channel, tensor or group:N (N >= 1)".
std::string_view GranularityChoices();

}  // namespace lmkit::quant
