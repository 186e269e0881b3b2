// The `lmkit flops` / `lmkit memory` entry points: resolve the model, compute, sweep, and render the result as
// an aligned text table, CSV, Markdown or JSON.
//
// Contract: RunFlops / RunMemory take a request (what the CLI parsed) and return a result struct, or a Status naming
// the file or flag at fault. An svg_path needs a sweep and is echoed in the result; the caller draws the chart
// (present/accounting_svg.h). Render* return the full stdout text; *ToJson the document --json prints. Output
// is deterministic (same request, same bytes). Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/memory.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/roofline.h"
#include "lmkit/common/json.h"

namespace lmkit::accounting {

enum class Format { kTable, kJson, kCsv, kMd };
Result<Format> ParseFormat(const std::string& s);

// `--sweep VAR=v1,v2,...` with VAR seq-len, batch or model.
struct Sweep {
  std::string variable;  // "" = no sweep
  std::vector<std::string> values;
};
Result<Sweep> ParseSweep(const std::string& spec);

// Where the model comes from: a config path / preset name, or explicit dimensions.
struct ModelSource {
  std::string model;  // path or preset; empty = `dims`
  Dimensions dims;
  bool has_dims = false;
};
Result<ModelSpec> ResolveModelSource(const ModelSource& src);

struct FlopsRequest {
  ModelSource source;
  FlopsOptions options;
  bool training = false;  // the step is forward + backward (time per step, 6ND); else forward only
  std::string gpu;        // "" = none
  double mfu = 0;         // 0 = no step-time estimate
  Dtype dtype = Dtype::kBf16;
  int64_t steps = 0;  // > 0: total time of this many steps
  Sweep sweep;
  std::string svg_path;
};

struct FlopsSweepPoint {
  std::string label;
  FlopsReport report;
  std::optional<StepTime> step;  // with --gpu and --mfu
};

struct FlopsResult {
  ModelSpec model;
  FlopsReport report;
  bool training = false;
  std::optional<GpuSpec> gpu;
  Dtype dtype = Dtype::kBf16;
  std::optional<StepTime> step;
  int64_t steps = 0;
  std::optional<Roofline> prefill, decode;
  std::string sweep_variable;
  std::vector<FlopsSweepPoint> sweep;
  std::string svg_path;  // written when non-empty
};

Result<FlopsResult> RunFlops(const FlopsRequest& req);
std::string RenderFlops(const FlopsResult& r, Format f);
Json FlopsToJson(const FlopsResult& r);

struct MemoryRequest {
  ModelSource source;
  MemoryOptions options;
  std::string gpu;
  Sweep sweep;
  std::string svg_path;
};

struct MemorySweepPoint {
  std::string label;
  MemoryReport report;
};

struct MemoryResult {
  ModelSpec model;
  MemoryReport report;
  std::optional<GpuSpec> gpu;
  std::string sweep_variable;
  std::vector<MemorySweepPoint> sweep;
  std::string svg_path;
};

Result<MemoryResult> RunMemory(const MemoryRequest& req);
std::string RenderMemory(const MemoryResult& r, Format f);
Json MemoryToJson(const MemoryResult& r);

}  // namespace lmkit::accounting
