// The plan document (docs/plan.md): every key checked, every entry resolved to a model.
#include "lmkit/accounting/plan.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "lmkit/common/file_reader.h"
#include "lmkit/common/mapped_file.h"
#include "lmkit/common/units.h"
#include "lmkit/io/weights_file.h"

namespace lmkit::accounting {
namespace {

constexpr double kGib = 1073741824.0;

bool Exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// Reads typed fields of one JSON object, naming the entry in every error, and rejects keys it does not know (a typo
// such as "bacth" would otherwise silently plan batch 1).
class PlanFields {
 public:
  PlanFields(const Json& obj, std::string subject, std::string where)
      : obj_(obj), subject_(std::move(subject)), where_(std::move(where)) {}

  Status Err(const std::string& msg) const { return Status::InvalidInput(subject_, where_ + ": " + msg); }

  Status CheckKeys(const std::vector<std::string>& known) const {
    for (const auto& [k, v] : obj_.items()) {
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      std::string list;
      for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
      return Err("unknown key '" + k + "' (known: " + list + ")");
    }
    return Status::Ok();
  }
  bool Has(const char* key) const { return obj_.contains(key) && !obj_.at(key).is_null(); }

  Status Int(const char* key, int64_t lo, int64_t hi, int64_t* out) const {
    if (!Has(key)) return Status::Ok();
    const Json& v = obj_.at(key);
    if (!v.is_number_integer()) return Err(std::string(key) + " must be an integer (got " + DumpJson(v, -1) + ")");
    int64_t x =
        v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : v.get<int64_t>();
    if (x < lo || x > hi)
      return Err(std::string(key) + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + " (got " +
                 DumpJson(v, -1) + ")");
    *out = x;
    return Status::Ok();
  }
  Status Num(const char* key, double lo, double hi, bool lo_open, double* out) const {
    if (!Has(key)) return Status::Ok();
    const Json& v = obj_.at(key);
    if (!v.is_number()) return Err(std::string(key) + " must be a number (got " + DumpJson(v, -1) + ")");
    double x = v.get<double>();
    if (!(lo_open ? x > lo : x >= lo) || !(x <= hi))
      return Err(std::string(key) + " must be " + (lo_open ? "above " : "at least ") + Fixed(lo, 2) + " and at most " +
                 Fixed(hi, 2) + " (got " + DumpJson(v, -1) + ")");
    *out = x;
    return Status::Ok();
  }
  Status Str(const char* key, std::string* out) const {
    if (!Has(key)) return Status::Ok();
    const Json& v = obj_.at(key);
    if (!v.is_string() || v.get<std::string>().empty())
      return Err(std::string(key) + " must be a non-empty string (got " + DumpJson(v, -1) + ")");
    *out = v.get<std::string>();
    return Status::Ok();
  }
  // A name from `table` (aliases accepted): "<key> must be a, b or c (got 'x')".
  template <typename E>
  Status Enum(const char* key, std::span<const EnumName<E>> table, E* out) const {
    std::string name;
    LMKIT_RETURN_IF_ERROR(Str(key, &name));
    if (name.empty()) return Status::Ok();
    auto v = FindEnum(table, name);
    if (!v) return Err(std::string(key) + " must be " + EnumChoices(table) + " (got '" + name + "')");
    *out = *v;
    return Status::Ok();
  }
  Status Bool(const char* key, bool* out) const {
    if (!Has(key)) return Status::Ok();
    const Json& v = obj_.at(key);
    if (!v.is_boolean()) return Err(std::string(key) + " must be true or false (got " + DumpJson(v, -1) + ")");
    *out = v.get<bool>();
    return Status::Ok();
  }

 private:
  const Json& obj_;
  std::string subject_, where_;
};

Result<Dimensions> ParseDims(const Json& j, const std::string& subject, const std::string& where) {
  if (!j.is_object()) return Status::InvalidInput(subject, where + ": dims must be an object");
  PlanFields f(j, subject, where + " dims");
  LMKIT_RETURN_IF_ERROR(f.CheckKeys({"layers", "d_model", "heads", "kv_heads", "head_dim", "d_ff", "vocab", "positions",
                                     "ffn", "norm", "tied", "bias", "experts", "top_k", "expert_d_ff", "window"}));
  Dimensions d;
  const int64_t big = int64_t{1} << 24;
  LMKIT_RETURN_IF_ERROR(f.Int("layers", 1, big, &d.layers));
  LMKIT_RETURN_IF_ERROR(f.Int("d_model", 1, big, &d.d_model));
  LMKIT_RETURN_IF_ERROR(f.Int("heads", 1, big, &d.heads));
  LMKIT_RETURN_IF_ERROR(f.Int("kv_heads", 0, big, &d.kv_heads));
  LMKIT_RETURN_IF_ERROR(f.Int("head_dim", 0, big, &d.head_dim));
  LMKIT_RETURN_IF_ERROR(f.Int("d_ff", 0, big, &d.d_ff));
  LMKIT_RETURN_IF_ERROR(f.Int("vocab", 1, big, &d.vocab));
  LMKIT_RETURN_IF_ERROR(f.Int("positions", 0, big, &d.positions));
  LMKIT_RETURN_IF_ERROR(f.Int("experts", 0, big, &d.experts));
  LMKIT_RETURN_IF_ERROR(f.Int("top_k", 0, big, &d.top_k));
  LMKIT_RETURN_IF_ERROR(f.Int("expert_d_ff", 0, big, &d.expert_d_ff));
  LMKIT_RETURN_IF_ERROR(f.Int("window", 0, big, &d.window));
  LMKIT_RETURN_IF_ERROR(f.Bool("tied", &d.tied));
  LMKIT_RETURN_IF_ERROR(f.Bool("bias", &d.bias));
  LMKIT_RETURN_IF_ERROR(f.Enum("ffn", FfnNames(), &d.ffn));
  LMKIT_RETURN_IF_ERROR(f.Enum("norm", NormNames(), &d.norm));
  for (const char* k : {"layers", "d_model", "heads", "vocab"})
    if (!f.Has(k)) return f.Err(std::string("needs ") + k);
  return d;
}

Status ModelError(const Status& st, const std::string& subject, const std::string& where) {
  if (st.code() == ErrorCode::kNotFound) return Status::NotFound(subject, where + ": " + st.ToString());
  return Status::InvalidInput(subject, where + ": " + st.ToString());
}

std::string Where(size_t i, const std::string& name) {
  return "models[" + std::to_string(i) + "]" + (name.empty() ? "" : " '" + name + "'");
}

// The dtype lmkit's tables use for a tensor dtype name of any of the three formats (for the GPU's peak).
Dtype ServedDtype(const std::string& t) {
  if (t == "F32" || t == "FLOAT" || t == "F64" || t == "DOUBLE") return Dtype::kFp32;
  if (t == "F16" || t == "FLOAT16") return Dtype::kFp16;
  if (t.rfind("F8", 0) == 0 || t.rfind("FLOAT8", 0) == 0) return Dtype::kFp8;
  if (t == "I8" || t == "INT8" || t == "UINT8" || t == "U8" || t.rfind("Q", 0) == 0 || t == "INT4" || t == "UINT4")
    return Dtype::kInt8;
  return Dtype::kBf16;
}

// Reads the weights at `path` into `m`: bytes as stored, or parameters x the entry's dtype when it gives one.
Status SetWeights(const std::string& path, bool dtype_given, PlanModel* m, const PlanFields& f) {
  auto w = io::ReadWeights(path);
  if (!w.ok()) return f.Err("weights: " + w.status().ToString());
  if (w->tensors.empty()) return f.Err("weights: " + path + " holds no tensors");
  m->weights_only = true;
  m->weights_format = w->format;
  m->weight_params = w->parameters;
  std::map<std::string, uint64_t> by_dtype;  // the dtype holding the most bytes is the model's
  uint64_t h = 1469598103934665603ULL;       // FNV-1a over shapes and dtypes: the architecture
  auto mix = [&h](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  };
  auto mix_number = [&h](uint64_t v) {  // the 8 bytes of each dimension, then a separator
    for (int k = 0; k < 8; ++k) h = (h ^ ((v >> (8 * k)) & 0xff)) * 1099511628211ULL;
    h = (h ^ ',') * 1099511628211ULL;
  };
  for (const auto& t : w->tensors) {
    by_dtype[t.dtype] += t.bytes;
    mix(t.dtype);
    for (uint64_t d : t.shape) mix_number(d);
    mix(";");
    const uint64_t b =
        dtype_given ? static_cast<uint64_t>(static_cast<double>(t.elements) * DtypeBytes(m->dtype)) : t.bytes;
    m->tensor_bytes.push_back(b);
    m->weight_bytes += b;
  }
  if (!dtype_given) {
    std::string top;
    uint64_t most = 0;
    for (const auto& [d, b] : by_dtype)
      if (b > most) most = b, top = d;
    m->dtype = ServedDtype(top);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  m->weights_signature = w->format + ": " + std::to_string(w->tensors.size()) + " tensors, shapes " + hex;
  m->spec.family = "weights (" + w->format + ")";
  m->spec.source = path;
  return Status::Ok();
}

}  // namespace

Result<Plan> ParsePlan(const Json& doc, const std::string& subject, const std::string& base_dir) {
  if (!doc.is_object()) return Status::InvalidInput(subject, "a plan is a JSON object with a \"models\" array");
  Plan p;
  p.path = subject;
  PlanFields top(doc, subject, "plan");
  LMKIT_RETURN_IF_ERROR(top.CheckKeys(
      {"about", "gpu", "gpus", "reserved_gib", "runtime_gib_per_model", "fragmentation", "host", "models"}));
  LMKIT_RETURN_IF_ERROR(top.Str("gpu", &p.gpu));
  LMKIT_RETURN_IF_ERROR(top.Int("gpus", 1, 4096, &p.gpus));
  double reserved = kDefaultReservedGib, runtime = 0;
  LMKIT_RETURN_IF_ERROR(top.Num("reserved_gib", 0, 1e4, false, &reserved));
  LMKIT_RETURN_IF_ERROR(top.Num("runtime_gib_per_model", 0, 1e4, false, &runtime));
  LMKIT_RETURN_IF_ERROR(top.Num("fragmentation", 0, 0.5, false, &p.fragmentation));
  p.reserved_bytes = std::round(reserved * kGib);
  p.runtime_bytes_per_model = std::round(runtime * kGib);
  if (top.Has("host")) {
    const Json& h = doc.at("host");
    if (!h.is_object()) return top.Err("host must be an object");
    PlanFields hf(h, subject, "host");
    LMKIT_RETURN_IF_ERROR(
        hf.CheckKeys({"disk_gb_s", "pcie_pinned_gb_s", "pcie_pageable_gb_s", "pinned", "allreduce_latency_us"}));
    double latency_us = kAllReduceLatencyS * 1e6;
    LMKIT_RETURN_IF_ERROR(hf.Num("allreduce_latency_us", 0, 1e6, false, &latency_us));
    p.host.allreduce_latency_s = latency_us * 1e-6;
    double disk = 0, pin = 0, page = 0;
    LMKIT_RETURN_IF_ERROR(hf.Num("disk_gb_s", 0, 1e4, true, &disk));
    LMKIT_RETURN_IF_ERROR(hf.Num("pcie_pinned_gb_s", 0, 1e4, true, &pin));
    LMKIT_RETURN_IF_ERROR(hf.Num("pcie_pageable_gb_s", 0, 1e4, true, &page));
    LMKIT_RETURN_IF_ERROR(hf.Bool("pinned", &p.host.pinned));
    if (disk > 0) p.host.disk_bytes_per_s = disk * 1e9, p.host.disk_from_plan = true;
    if (pin > 0) p.host.pcie_pinned_bytes_per_s = pin * 1e9;
    if (page > 0) p.host.pcie_pageable_bytes_per_s = page * 1e9;
    p.host.pinned_rate_from_plan = pin > 0;
    p.host.pageable_rate_from_plan = page > 0;
  }
  if (!top.Has("models") || !doc.at("models").is_array() || doc.at("models").empty())
    return top.Err("needs a non-empty \"models\" array");

  const Json& models = doc.at("models");
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < models.size(); ++i) {
    const Json& e = models[i];
    if (!e.is_object()) return Status::InvalidInput(subject, Where(i, "") + " must be an object");
    PlanModel m;
    std::string name;
    PlanFields f0(e, subject, Where(i, ""));
    LMKIT_RETURN_IF_ERROR(f0.Str("name", &name));
    LMKIT_RETURN_IF_ERROR(f0.Str("model", &m.model));
    const std::string where = Where(i, name.empty() ? m.model : name);
    PlanFields f(e, subject, where);
    LMKIT_RETURN_IF_ERROR(
        f.CheckKeys({"name", "model", "weights", "dims", "dtype", "kv_dtype", "quant_scope", "batch", "seq_len",
                     "output_tokens", "requests_per_s", "count", "tp", "kv_tokens", "gpu_memory_utilization",
                     "flops_per_request", "activation_bytes", "latency_ms"}));
    if (int(f.Has("model")) + int(f.Has("dims")) + int(f.Has("weights")) != 1)
      return f.Err(
          "give exactly one of \"model\" (preset or config path), \"weights\" (a safetensors, .onnx or GGUF file or "
          "folder) or \"dims\"");
    std::string weights_path;
    LMKIT_RETURN_IF_ERROR(f.Str("weights", &weights_path));
    int64_t act = 0;
    LMKIT_RETURN_IF_ERROR(f.Num("flops_per_request", 0, 1e30, false, &m.flops_per_request));
    LMKIT_RETURN_IF_ERROR(f.Int("activation_bytes", 0, int64_t{1} << 50, &act));
    LMKIT_RETURN_IF_ERROR(f.Num("latency_ms", 0, 1e9, false, &m.latency_ms));
    m.activation_bytes = static_cast<uint64_t>(act);
    const int64_t big = int64_t{1} << 31;
    LMKIT_RETURN_IF_ERROR(f.Int("batch", 1, big, &m.batch));
    LMKIT_RETURN_IF_ERROR(f.Int("seq_len", 1, big, &m.seq_len));
    LMKIT_RETURN_IF_ERROR(f.Int("output_tokens", 0, big, &m.output_tokens));
    if (m.output_tokens >= m.seq_len)
      return f.Err("output_tokens (" + std::to_string(m.output_tokens) + ") must be below seq_len (" +
                   std::to_string(m.seq_len) + "): seq_len is the whole context, prompt + generated");
    LMKIT_RETURN_IF_ERROR(f.Num("requests_per_s", 0, 1e9, false, &m.requests_per_s));
    int64_t count = 1;
    LMKIT_RETURN_IF_ERROR(f.Int("count", 1, 1024, &count));
    std::string dtype = "bf16";
    LMKIT_RETURN_IF_ERROR(f.Str("dtype", &dtype));
    auto dt = ParseDtype(dtype);
    if (!dt.ok() || *dt == Dtype::kTf32)
      return f.Err("dtype must be fp32, bf16, fp16, fp8 or int8 (got '" + dtype + "')");
    m.dtype = *dt;
    if (f.Has("kv_dtype")) {
      std::string kv;
      LMKIT_RETURN_IF_ERROR(f.Str("kv_dtype", &kv));
      auto k = ParseDtype(kv);
      if (!k.ok() || *k == Dtype::kTf32)
        return f.Err("kv_dtype must be fp32, bf16, fp16, fp8 or int8 (got '" + kv + "')");
      m.kv_dtype = *k;
    }
    LMKIT_RETURN_IF_ERROR(f.Enum("quant_scope", QuantScopeNames(), &m.quant_scope));
    LMKIT_RETURN_IF_ERROR(f.Int("tp", 1, 4096, &m.tp));
    LMKIT_RETURN_IF_ERROR(f.Int("kv_tokens", 1, int64_t{1} << 40, &m.kv_tokens));
    LMKIT_RETURN_IF_ERROR(f.Num("gpu_memory_utilization", 0, 1, true, &m.gpu_memory_utilization));
    if (m.kv_tokens > 0 && m.gpu_memory_utilization > 0)
      return f.Err("give kv_tokens or gpu_memory_utilization, not both (each sets the KV cache budget)");

    auto near_plan = [&](const std::string& a) {
      return !base_dir.empty() && a[0] != '/' && Exists(base_dir + "/" + a) ? base_dir + "/" + a : a;
    };
    if (!m.model.empty() && Exists(near_plan(m.model))) {
      std::string why;
      switch (io::ClassifyModelFile(near_plan(m.model), &why)) {
        case io::ModelFileKind::kWeights:
          weights_path = m.model;
          break;
        case io::ModelFileKind::kNeither:
          return f.Err("'" + m.model + "': " + why);
        case io::ModelFileKind::kConfig:
          break;
      }
    }
    if (!weights_path.empty()) {
      const std::string arg = near_plan(weights_path);
      if (!Exists(arg)) return Status::NotFound(subject, where + ": weights '" + weights_path + "': no such file");
      LMKIT_RETURN_IF_ERROR(SetWeights(arg, f.Has("dtype"), &m, f));
      m.config_file = arg;
      m.model = weights_path;
      m.spec.name = name.empty() ? std::filesystem::path(weights_path).stem().string() : name;
      if (m.tp > 1 || m.output_tokens > 0 || m.kv_tokens > 0 || m.gpu_memory_utilization > 0 || m.kv_dtype)
        return f.Err(
            "tp, output_tokens, kv_tokens, gpu_memory_utilization and kv_dtype are for transformer models, not for a "
            "model given by its weights");
    } else if (m.flops_per_request > 0 || m.activation_bytes > 0 || m.latency_ms > 0) {
      return f.Err("flops_per_request, activation_bytes and latency_ms are for a model given by its weights");
    }
    if (m.weights_only) {
      // described by its weights above
    } else if (!m.model.empty()) {
      std::string arg = near_plan(m.model);
      if (Exists(arg)) {
        std::error_code ec;
        m.config_file = std::filesystem::is_directory(arg, ec) ? arg + "/config.json" : arg;
      }
      auto spec = ResolveModel(arg);
      if (!spec.ok()) return ModelError(spec.status(), subject, where + ": unknown model '" + m.model + "'");
      m.spec = std::move(*spec);
    } else {
      LMKIT_ASSIGN_OR_RETURN(Dimensions d, ParseDims(e.at("dims"), subject, where));
      auto spec = FromDimensions(d);
      if (!spec.ok()) return ModelError(spec.status(), subject, where);
      m.spec = std::move(*spec);
      m.spec.name = name.empty() ? "custom" : name;
    }
    if (name.empty()) name = m.model.empty() ? m.spec.name : m.model;
    for (int64_t c = 1; c <= count; ++c) {
      PlanModel inst = m;
      inst.name = count > 1 ? name + "#" + std::to_string(c) : name;
      inst.index = i;
      auto [it, fresh] = seen.emplace(inst.name, i);
      if (!fresh)
        return f.Err("name '" + inst.name + "' is already used by models[" + std::to_string(it->second) +
                     "]; give each entry a distinct \"name\"");
      p.models.push_back(std::move(inst));
    }
  }
  return p;
}

Result<Plan> LoadPlan(const std::string& path) {
  LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  LMKIT_ASSIGN_OR_RETURN(Json doc, ParseJson(text, path));
  std::string dir;
  if (path != "-") {
    size_t slash = path.rfind('/');
    dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  }
  return ParsePlan(doc, path, dir);
}

}  // namespace lmkit::accounting
