// GPUs: the shipped table (data/gpus.json: dense peak throughput per dtype, memory, bandwidth, interconnect, each with
// its source) or one device described in a file of the same schema (--gpu-spec).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lmkit/common/name_table.h"
#include "lmkit/common/status.h"

namespace lmkit::accounting {

enum class Dtype { kFp32, kTf32, kBf16, kFp16, kFp8, kInt8 };
// fp32, tf32, bf16, fp16, fp8, int8 (aliases float32, bfloat16, float16).
std::span<const EnumName<Dtype>> DtypeNames();
// ParseEnum over DtypeNames, case-insensitive; errors name `field`.
Result<Dtype> ParseDtype(const std::string& name, std::string_view field = "dtype");
const char* DtypeName(Dtype d);
double DtypeBytes(Dtype d);  // 4, 4, 2, 2, 1, 1

struct GpuSpec {
  std::string name;
  std::vector<std::string> aliases;
  double memory_bytes = 0;              // datasheet capacity, decimal GB x 1e9
  double bandwidth_bytes_per_s = 0;     // memory bandwidth
  double interconnect_bytes_per_s = 0;  // GPU-to-GPU, per direction (0 = unknown: no tensor parallelism)
  std::string interconnect;             // what the link is ("NVLink 4, 900 GB/s total")
  double peak_fp32 = 0, peak_tf32 = 0, peak_bf16 = 0, peak_fp16 = 0, peak_fp8 = 0, peak_int8 = 0;  // FLOP/s (OP/s)
  std::string source;

  double PeakFlops(Dtype d) const;  // 0 when the GPU has no peak for `d` (fp8 on A100)
};

// The table at `path` ("" = the shipped data/gpus.json). Errors: kInvalidInput naming the file and the entry.
Result<std::vector<GpuSpec>> LoadGpuTable(const std::string& path = "");
// One GPU described by a JSON object in the table's entry schema (name, memory_gb, bandwidth_tb_s, dense_tflops,
// optional interconnect_gb_s, aliases, source), e.g. a device the table lacks. Errors as LoadGpuTable.
Result<GpuSpec> LoadGpuSpecFile(const std::string& path);
// Matches `name` case- and punctuation-insensitively against each entry's name and aliases: an exact match or
// kNotFound listing the known names and the nearest one ("did you mean") — never a near match taken silently.
Result<GpuSpec> FindGpu(const std::string& name, const std::string& table_path = "");
// The GPU a request names: by table name (`name`), or by a spec file (`spec_file`), or none (both empty: nullopt).
// Errors: both given (kInvalidArgument naming the fields gpu and gpu_spec), else FindGpu's or LoadGpuSpecFile's.
Result<std::optional<GpuSpec>> ResolveGpu(const std::string& name, const std::string& spec_file);

}  // namespace lmkit::accounting
