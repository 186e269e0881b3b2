// Which loaders serve a checkpoint `lmkit quantize` writes, and what lmkit does about the ones that cannot: the rules
// are read from the loaders' source (docs/quant.md cites the lines) and tests/unit/quant/loader_rules_test.cpp holds
// them to independent transcriptions of those rules, applied to the config lmkit writes.
//
// Policy: a combination vLLM cannot serve is refused (kRefuse) when no loader would run it as the scheme it claims,
// and written with a one-line warning (kWarn) when transformers + compressed-tensors still loads it as that scheme;
// everything lmkit writes by default is something vLLM serves.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/quant/granularity.h"
#include "lmkit/quant/scheme.h"

namespace lmkit::quant {

enum class Loader : uint8_t { kVllm, kTransformers, kLlamaCpp };
std::string_view LoaderName(Loader l);  // "vLLM", "transformers", "llama.cpp"

struct LoaderVerdict {
  Loader loader;
  bool serves = false;
  std::string why;  // one clause: the loader's rule that decides it
};

struct Support {
  enum class Policy : uint8_t { kWrite, kWarn, kRefuse };
  std::array<LoaderVerdict, 3> loaders;  // vLLM, transformers, llama.cpp
  Policy policy = Policy::kWrite;
  std::string message;  // kWarn / kRefuse: one line naming the loader and why (request fields as Field())
};

// What the loaders do with a checkpoint of `scheme` in `format` with weight scales of `granularity` (static
// activation scales when `static_activations`). Pure; no I/O.
Support CheckSupport(QuantScheme scheme, QuantFormat format, const Granularity& granularity, bool static_activations);

// Modules a loader fuses into one layer must share one scheme: vLLM loads q/k/v_proj as qkv_proj and gate/up_proj as
// gate_up_proj, and refuses a checkpoint that quantizes only some of them. Returns a one-line description of the
// first group `quantized` and `kept` split (module names without ".weight"), or nothing.
std::optional<std::string> FindSplitFusedGroup(const std::vector<std::string>& quantized,
                                               const std::vector<std::string>& kept);

}  // namespace lmkit::quant
