// The GPU table (data/gpus.json): dense peak throughput per dtype, memory and bandwidth, each with its source.
//
// Contract: LoadGpuTable reads the shipped table (or `path`); FindGpu matches a name case-insensitively against each
// entry's name and aliases ("h100", "H100-SXM", "a100-80gb"...), and fails with kNotFound listing the known names and
// the nearest one. Peak figures are dense (no 2:4 sparsity). PeakFlops returns 0 when the GPU has no peak for that
// dtype (e.g. fp8 on A100). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit::accounting {

enum class Dtype { kFp32, kTf32, kBf16, kFp16, kFp8, kInt8 };

// Parses "fp32", "tf32", "bf16", "fp16", "fp8", "int8" (kInvalidArgument otherwise).
Result<Dtype> ParseDtype(const std::string& name);
const char* DtypeName(Dtype d);
double DtypeBytes(Dtype d);  // 4, 4, 2, 2, 1, 1

struct GpuSpec {
  std::string name;
  std::vector<std::string> aliases;
  double memory_bytes = 0;           // datasheet capacity, decimal GB x 1e9
  double bandwidth_bytes_per_s = 0;  // memory bandwidth
  double peak_fp32 = 0, peak_tf32 = 0, peak_bf16 = 0, peak_fp16 = 0, peak_fp8 = 0, peak_int8 = 0;  // FLOP/s (OP/s)
  std::string source;

  double PeakFlops(Dtype d) const;
};

Result<std::vector<GpuSpec>> LoadGpuTable(const std::string& path = "");
Result<GpuSpec> FindGpu(const std::string& name, const std::string& table_path = "");

}  // namespace lmkit::accounting
