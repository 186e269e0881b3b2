// The request pieces `flops` and `memory` share: where the model comes from, and a sweep over one variable.
#pragma once

#include <string>
#include <vector>

#include "lmkit/accounting/model.h"

namespace lmkit::accounting {

// A config path / preset name, or explicit dimensions.
struct ModelSource {
  std::string model;  // path or preset; empty = `dims`
  Dimensions dims;
  bool has_dims = false;
};
// Errors: both or neither given (kInvalidArgument naming the fields model, layers ...), else ResolveModel's or
// FromDimensions'.
Result<ModelSpec> ResolveModelSource(const ModelSource& src);

// One table over a variable: VAR=v1,v2,... with VAR seq-len, batch or model.
struct Sweep {
  std::string variable;  // "" = no sweep
  std::vector<std::string> values;
};
// Parses "VAR=v1,v2,..." ("" = no sweep); seq-len and batch values must be positive integers. Errors:
// kInvalidArgument naming the field sweep.
Result<Sweep> ParseSweep(const std::string& spec);

// The files a request's model reads, with a model sweep's: a config file, or the config.json of a directory (presets
// are not files here). The inputs a chart must not replace (common/output_check.h).
std::vector<std::string> ModelSourceFiles(const ModelSource& src, const Sweep& sweep);

// A model sweep replaces the request's model: giving both is kInvalidArgument naming the fields sweep and model.
Status CheckSweepSource(const Sweep& sweep, const ModelSource& src);

// Applies one sweep value to copies of a request's sequence length, batch and model.
Status ApplySweepValue(const std::string& variable, const std::string& value, int64_t* seq_len, int64_t* batch,
                       ModelSpec* m);

}  // namespace lmkit::accounting
