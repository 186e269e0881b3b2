// "Did you mean ...?" for names the user typed: commands, presets, GPUs.
#pragma once

#include <string>
#include <vector>

namespace lmkit {

// The first candidate that `name` is a prefix of ("quant" -> "quantize"), else the candidate at the smallest edit
// distance (Levenshtein, byte-wise) when that distance is at most 3 and at most half of name's length, else "". Ties
// go to the earlier candidate.
std::string NearestName(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace lmkit
