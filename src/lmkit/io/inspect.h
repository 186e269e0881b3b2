// `lmkit inspect`: what a tensor file or model directory holds, optionally with per-tensor value statistics.
//
// Contract: InspectTensors opens `path`, which is a .safetensors file, a .npy file, or a directory holding
// model.safetensors (or shards listed by model.safetensors.index.json) and optionally config.json; every file is fully
// validated (safetensors.h, npy.h) and its errors are returned unchanged (subject = that file). Tensor data is read
// through the memory map, never copied whole. With `stats`, every tensor's values are converted to double in fixed
// chunks of kStatsChunkElements, chunks are processed in parallel on `threads` threads, and each tensor's chunk
// partials are merged in chunk order, so the numbers are identical for every thread count. Statistics cover the finite
// values (NaN and +-inf are counted separately); std is the population standard deviation (numpy's default, ddof=0).
// Progress (bytes scanned) goes to `progress` when it is non-null.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lmkit/common/json.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/safetensors.h"

namespace lmkit::io {

inline constexpr uint64_t kStatsChunkElements = 1 << 20;

struct InspectRequest {
  std::string path;
  bool stats = false;
  unsigned threads = 1;
};

struct TensorStats {
  uint64_t count = 0;  // finite values
  uint64_t nan_count = 0;
  uint64_t inf_count = 0;
  double min = 0, max = 0, mean = 0, std = 0, absmax = 0;  // over finite values; 0 when there are none
};

struct InspectedTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;
  uint64_t elements = 0;
  uint64_t bytes = 0;
  std::string file;  // the file holding it (differs between shards)
  std::optional<TensorStats> stats;
};

struct InspectResult {
  std::string path;
  std::string format;                    // "safetensors", "safetensors (sharded)" or "npy"
  std::vector<std::string> files;        // tensor files read, in order
  std::vector<InspectedTensor> tensors;  // file order, then data order within a file
  uint64_t parameter_count = 0;          // sum of elements
  uint64_t tensor_bytes = 0;             // sum of bytes
  Metadata metadata;                     // safetensors __metadata__ (of the first shard)
  std::optional<Json> config;            // config.json of a model directory, when present
};

Result<InspectResult> InspectTensors(const InspectRequest& options, ProgressSink* progress);

// Statistics of n values of `dtype` at `data` (a single-threaded reference; InspectTensors must agree with it).
TensorStats ComputeTensorStats(DType dtype, const uint8_t* data, uint64_t n);

}  // namespace lmkit::io
