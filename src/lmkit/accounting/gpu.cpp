#include "lmkit/accounting/gpu.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "lmkit/common/data_dir.h"
#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"
#include "lmkit/common/mapped_file.h"
#include "lmkit/common/nearest_name.h"

namespace lmkit::accounting {
namespace {

std::string Lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// "H100 SXM", "h100-sxm" and "h100_sxm" are the same name.
std::string Canonical(const std::string& s) {
  std::string out;
  for (char ch : Lower(s))
    if (std::isalnum(static_cast<unsigned char>(ch))) out.push_back(ch);
  return out;
}

constexpr EnumName<Dtype> kDtypeNames[] = {
    {Dtype::kFp32, "fp32"},    {Dtype::kTf32, "tf32"},     {Dtype::kBf16, "bf16"},
    {Dtype::kFp16, "fp16"},    {Dtype::kFp8, "fp8"},       {Dtype::kInt8, "int8"},
    {Dtype::kFp32, "float32"}, {Dtype::kBf16, "bfloat16"}, {Dtype::kFp16, "float16"}};

// A number the entry must have: positive and finite once scaled (bandwidth_tb_s 1e300 becomes infinity in bytes).
Result<double> Positive(const Json& g, const char* key, double scale, const std::string& file,
                        const std::string& name) {
  if (!g.contains(key) || !g[key].is_number())
    return Status::InvalidInput(file, "GPU '" + name + "' lacks memory_gb, bandwidth_tb_s or dense_tflops");
  const double v = g[key].get<double>() * scale;
  // The roofline divides by the bandwidth and the fit verdict needs a capacity: a zero bandwidth printed
  // "ridge inf FLOP/B" (null in JSON), a negative capacity silently dropped the verdict.
  if (!(v > 0 && std::isfinite(v)))
    return Status::InvalidInput(file, "GPU '" + name + "': memory_gb and bandwidth_tb_s must be positive numbers");
  return v;
}

Result<double> Tera(const Json& peaks, const char* key, const std::string& file, const std::string& name) {
  if (!peaks.contains(key)) return 0.0;
  const double v = peaks[key].is_number() ? peaks[key].get<double>() * 1e12 : -1;
  if (!(v >= 0 && std::isfinite(v)))
    return Status::InvalidInput(file, "GPU '" + name + "': dense_tflops." + key + " must be a non-negative number");
  return v;
}

Result<GpuSpec> ParseGpu(const Json& g, const std::string& file) {
  GpuSpec s;
  if (!g.is_object() || !g.contains("name") || !g["name"].is_string() || g["name"].get<std::string>().empty())
    return Status::InvalidInput(file, "a GPU entry has no 'name'");
  s.name = g["name"].get<std::string>();
  if (g.contains("aliases") && g["aliases"].is_array())
    for (const auto& a : g["aliases"])
      if (a.is_string()) s.aliases.push_back(a.get<std::string>());
  if (!g.contains("dense_tflops") || !g["dense_tflops"].is_object())
    return Status::InvalidInput(file, "GPU '" + s.name + "' lacks memory_gb, bandwidth_tb_s or dense_tflops");
  LMKIT_ASSIGN_OR_RETURN(s.memory_bytes, Positive(g, "memory_gb", 1e9, file, s.name));
  LMKIT_ASSIGN_OR_RETURN(s.bandwidth_bytes_per_s, Positive(g, "bandwidth_tb_s", 1e12, file, s.name));
  if (g.contains("interconnect_gb_s")) {
    const Json& ic = g["interconnect_gb_s"];
    const double v = ic.is_number() ? ic.get<double>() * 1e9 : -1;
    if (!(v >= 0 && std::isfinite(v)))
      return Status::InvalidInput(file, "GPU '" + s.name + "': interconnect_gb_s must be a non-negative number");
    s.interconnect_bytes_per_s = v;
  }
  if (g.contains("interconnect") && g["interconnect"].is_string())
    s.interconnect = g["interconnect"].get<std::string>();
  const Json& p = g["dense_tflops"];
  LMKIT_ASSIGN_OR_RETURN(s.peak_fp32, Tera(p, "fp32", file, s.name));
  LMKIT_ASSIGN_OR_RETURN(s.peak_tf32, Tera(p, "tf32", file, s.name));
  LMKIT_ASSIGN_OR_RETURN(s.peak_bf16, Tera(p, "bf16", file, s.name));
  LMKIT_ASSIGN_OR_RETURN(s.peak_fp16, Tera(p, "fp16", file, s.name));
  LMKIT_ASSIGN_OR_RETURN(s.peak_fp8, Tera(p, "fp8", file, s.name));
  LMKIT_ASSIGN_OR_RETURN(s.peak_int8, Tera(p, "int8", file, s.name));
  if (g.contains("source") && g["source"].is_string()) s.source = g["source"].get<std::string>();
  return s;
}

}  // namespace

std::span<const EnumName<Dtype>> DtypeNames() { return kDtypeNames; }

Result<Dtype> ParseDtype(const std::string& name, std::string_view field) {
  return ParseEnum(DtypeNames(), Lower(name), field);
}

const char* DtypeName(Dtype d) { return EnumNameOf(DtypeNames(), d).data(); }

double DtypeBytes(Dtype d) {
  switch (d) {
    case Dtype::kFp32:
    case Dtype::kTf32:
      return 4;
    case Dtype::kBf16:
    case Dtype::kFp16:
      return 2;
    case Dtype::kFp8:
    case Dtype::kInt8:
      return 1;
  }
  return 4;
}

double GpuSpec::PeakFlops(Dtype d) const {
  switch (d) {
    case Dtype::kFp32:
      return peak_fp32;
    case Dtype::kTf32:
      return peak_tf32;
    case Dtype::kBf16:
      return peak_bf16;
    case Dtype::kFp16:
      return peak_fp16;
    case Dtype::kFp8:
      return peak_fp8;
    case Dtype::kInt8:
      return peak_int8;
  }
  return 0;
}

Result<std::vector<GpuSpec>> LoadGpuTable(const std::string& path) {
  std::string file = path;
  if (file.empty()) {
    LMKIT_ASSIGN_OR_RETURN(file, FindDataFile("gpus.json"));
  }
  LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(file));
  LMKIT_ASSIGN_OR_RETURN(Json j, ParseJson(text, file));
  if (!j.is_object() || !j.contains("gpus") || !j["gpus"].is_array())
    return Status::InvalidInput(file, "missing list 'gpus'");
  std::vector<GpuSpec> out;
  for (const auto& g : j["gpus"]) {
    LMKIT_ASSIGN_OR_RETURN(GpuSpec s, ParseGpu(g, file));
    out.push_back(std::move(s));
  }
  return out;
}

Result<GpuSpec> LoadGpuSpecFile(const std::string& path) {
  LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  LMKIT_ASSIGN_OR_RETURN(Json j, ParseJson(text, path));
  if (!j.is_object())
    return Status::InvalidInput(path, "a GPU spec is a JSON object (the schema of a gpus.json entry)");
  return ParseGpu(j, path);
}

Result<GpuSpec> FindGpu(const std::string& name, const std::string& table_path) {
  LMKIT_ASSIGN_OR_RETURN(auto table, LoadGpuTable(table_path));
  std::string want = Canonical(name);
  for (const auto& g : table) {
    if (Canonical(g.name) == want) return g;
    for (const auto& a : g.aliases)
      if (Canonical(a) == want) return g;
  }
  // Suggestions compare canonical spellings (names and aliases), so "h10" finds H100 through its alias "h100".
  std::string list;
  std::vector<std::string> canon;
  std::vector<const GpuSpec*> owner;
  for (const auto& g : table) {
    list += (list.empty() ? "" : ", ") + g.name;
    canon.push_back(Canonical(g.name));
    owner.push_back(&g);
    for (const auto& a : g.aliases) {
      canon.push_back(Canonical(a));
      owner.push_back(&g);
    }
  }
  const std::string near = NearestName(want, canon);
  std::string hint;
  for (size_t i = 0; i < canon.size() && !near.empty(); ++i)
    if (canon[i] == near) {
      hint = "; did you mean '" + owner[i]->name + "'?";
      break;
    }
  return Status::NotFound(name, "unknown GPU" + hint + " (known: " + list + ")");
}

Result<std::optional<GpuSpec>> ResolveGpu(const std::string& name, const std::string& spec_file) {
  if (!name.empty() && !spec_file.empty())
    return Status::InvalidArgument("give either " + Field("gpu") + " or " + Field("gpu_spec") + ", not both");
  if (!spec_file.empty()) {
    LMKIT_ASSIGN_OR_RETURN(GpuSpec g, LoadGpuSpecFile(spec_file));
    return std::optional<GpuSpec>(std::move(g));
  }
  if (name.empty()) return std::optional<GpuSpec>();
  LMKIT_ASSIGN_OR_RETURN(GpuSpec g, FindGpu(name));
  return std::optional<GpuSpec>(std::move(g));
}

}  // namespace lmkit::accounting
