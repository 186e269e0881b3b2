// The plan document and its evaluation: parse, estimate each model with the accounting code, pack, explain.
#include "lmkit/accounting/plan.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/params.h"
#include "lmkit/accounting/table.h"
#include "lmkit/common/file_reader.h"
#include "lmkit/common/mapped_file.h"

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
  std::string ffn = "swiglu", norm = "rmsnorm";
  LMKIT_RETURN_IF_ERROR(f.Str("ffn", &ffn));
  LMKIT_RETURN_IF_ERROR(f.Str("norm", &norm));
  if (ffn != "swiglu" && ffn != "gelu") return f.Err("ffn must be swiglu or gelu (got '" + ffn + "')");
  if (norm != "rmsnorm" && norm != "layernorm") return f.Err("norm must be rmsnorm or layernorm (got '" + norm + "')");
  d.ffn = ffn == "gelu" ? FfnKind::kGelu : FfnKind::kSwiGlu;
  d.norm = norm == "layernorm" ? NormKind::kLayerNorm : NormKind::kRmsNorm;
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
    LMKIT_RETURN_IF_ERROR(hf.CheckKeys({"disk_gb_s", "pcie_pinned_gb_s", "pcie_pageable_gb_s", "pinned"}));
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
    LMKIT_RETURN_IF_ERROR(f.CheckKeys(
        {"name", "model", "dims", "dtype", "batch", "seq_len", "output_tokens", "requests_per_s", "count"}));
    if (f.Has("model") == f.Has("dims"))
      return f.Err("give exactly one of \"model\" (preset or config path) or \"dims\"");
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

    if (!m.model.empty()) {
      std::string arg = m.model;
      if (!base_dir.empty() && arg[0] != '/' && Exists(base_dir + "/" + arg)) arg = base_dir + "/" + arg;
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

Result<PlanResult> EvaluatePlan(Plan plan, const std::string& gpu_override, int64_t gpus_override) {
  PlanResult r;
  const std::string subject = plan.path;
  std::string gpu_name = gpu_override.empty() ? plan.gpu : gpu_override;
  if (gpu_name.empty()) return Status::InvalidArgument("no GPU: give --gpu NAME or \"gpu\" in the plan");
  LMKIT_ASSIGN_OR_RETURN(r.gpu, FindGpu(gpu_name));
  r.gpus = gpus_override > 0 ? gpus_override : plan.gpus > 0 ? plan.gpus : 1;
  if (r.gpus > 4096) return Status::InvalidArgument("--gpus must be at most 4096");
  const double capacity = r.gpu.memory_bytes;
  const double margin = capacity * plan.fragmentation;
  r.usable_bytes = std::floor(capacity - margin - plan.reserved_bytes);
  if (r.usable_bytes <= 0)
    return Status::InvalidInput(subject, "reserved_gib and fragmentation leave no usable memory on " + r.gpu.name);

  std::map<std::string, int> group_of;
  for (size_t i = 0; i < plan.models.size(); ++i) {
    const PlanModel& pm = plan.models[i];
    const std::string where = Where(pm.index, pm.name);
    ModelEstimate e;
    e.entry = pm;
    if (r.gpu.PeakFlops(pm.dtype) <= 0)
      return Status::InvalidInput(subject, where + ": " + r.gpu.name + " has no " + DtypeName(pm.dtype) +
                                               " peak in the GPU table; choose another dtype or GPU");
    MemoryOptions o;
    o.mode = Mode::kInference;
    o.dtype = pm.dtype;
    o.batch = pm.batch;
    o.seq_len = pm.seq_len;
    o.overhead_bytes = static_cast<uint64_t>(plan.runtime_bytes_per_model);
    o.capacity_bytes = r.usable_bytes;
    auto mem = EstimateMemory(pm.spec, o);
    if (!mem.ok()) return Status::InvalidInput(subject, where + ": " + mem.status().message());
    e.memory = *mem;
    e.runtime = e.memory.overhead;
    e.footprint = e.memory.total;
    e.max_batch_alone = e.memory.max_batch;
    std::string usable = Human(r.usable_bytes, "B") + " usable on one " + r.gpu.name + " (" + Human(capacity, "B") +
                         " - reserved " + Human(plan.reserved_bytes, "B") + " - margin " + Human(margin, "B") + ")";
    if (static_cast<double>(e.memory.fixed) > r.usable_bytes)
      return Status::InvalidInput(subject, where + ": no GPU fits it: its weights alone take " +
                                               Human(static_cast<double>(e.memory.weights), "B") + ", more than the " +
                                               usable + "; use a smaller dtype or a larger GPU");
    if (static_cast<double>(e.footprint) > r.usable_bytes)
      return Status::InvalidInput(subject, where + ": impossible batch: batch " + std::to_string(pm.batch) + " x " +
                                               std::to_string(pm.seq_len) + " tokens needs " +
                                               Human(static_cast<double>(e.footprint), "B") + ", more than the " +
                                               usable + "; the largest batch that fits alone is " +
                                               std::to_string(e.max_batch_alone));

    // Speed: roofline of the prefill (or the single forward pass) plus output_tokens decode steps at the mean context.
    FlopsOptions fo;
    fo.batch = pm.batch;
    fo.seq_len = pm.seq_len - pm.output_tokens;
    auto ops = BuildMatmuls(pm.spec, fo);
    if (!ops.ok()) return Status::InvalidInput(subject, where + ": " + ops.status().message());
    LMKIT_ASSIGN_OR_RETURN(e.prefill, ComputeRoofline(*ops, r.gpu, pm.dtype));
    e.prefill_s = e.prefill.time_s;
    std::string pre_bound = e.prefill.compute_s >= e.prefill.memory_s ? "compute" : "memory";
    e.bound = pre_bound;
    e.bound_detail = (pm.output_tokens > 0 ? "prefill " : "forward ") + pre_bound + "-bound";
    if (pm.output_tokens > 0) {
      auto dec = BuildDecodeMatmuls(pm.spec, pm.batch, fo.seq_len + pm.output_tokens / 2);
      if (!dec.ok()) return Status::InvalidInput(subject, where + ": " + dec.status().message());
      LMKIT_ASSIGN_OR_RETURN(e.decode, ComputeRoofline(*dec, r.gpu, pm.dtype));
      e.decode_s = e.decode.time_s * static_cast<double>(pm.output_tokens);
      std::string dec_bound = e.decode.compute_s >= e.decode.memory_s ? "compute" : "memory";
      e.bound_detail += ", decode " + dec_bound + "-bound";
      if (e.decode_s > e.prefill_s) e.bound = dec_bound;
    }
    e.latency_s = e.prefill_s + e.decode_s;
    const double w = static_cast<double>(e.memory.weights);
    e.switch_s = w / plan.host.pcie_bytes_per_s();
    e.cold_load_s = w / plan.host.disk_bytes_per_s + e.switch_s;
    e.utilisation = pm.requests_per_s * e.latency_s / static_cast<double>(pm.batch);

    e.architecture = DescribeModel(pm.spec) + "; " + Grouped(static_cast<uint64_t>(e.memory.params.total)) +
                     " parameters; " + DtypeName(pm.dtype);
    auto [it, fresh] = group_of.emplace(e.architecture, static_cast<int>(r.groups.size()));
    if (fresh) r.groups.push_back(ArchGroup{e.architecture, {}, e.memory.weights});
    e.group = it->second;
    r.groups[static_cast<size_t>(e.group)].members.push_back(static_cast<int>(i));
    r.models.push_back(std::move(e));
  }

  std::vector<uint64_t> sizes;
  for (const auto& m : r.models) sizes.push_back(m.footprint);
  Packing pk = PackItems(sizes, static_cast<uint64_t>(r.usable_bytes), static_cast<int>(r.gpus));
  r.packing_method = pk.method;
  r.gpu_use.resize(static_cast<size_t>(r.gpus));
  for (size_t b = 0; b < r.gpu_use.size(); ++b) {
    GpuUse& g = r.gpu_use[b];
    g.capacity = capacity;
    g.reserved = plan.reserved_bytes;
    g.margin = margin;
    g.models_bytes = pk.used[b];
    g.free = std::max(0.0, capacity - margin - plan.reserved_bytes - static_cast<double>(pk.used[b]));
  }
  // Each GPU lists its models largest first (the order they were placed in), ties in plan order.
  std::vector<size_t> order(r.models.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return r.models[a].footprint > r.models[b].footprint; });
  double most_free = 0;
  for (const auto& g : r.gpu_use) most_free = std::max(most_free, g.free);
  for (size_t i : order) {
    ModelEstimate& m = r.models[i];
    m.gpu = pk.bin_of[i];
    if (m.gpu >= 0) {
      GpuUse& g = r.gpu_use[static_cast<size_t>(m.gpu)];
      g.models.push_back(static_cast<int>(i));
      g.utilisation += m.utilisation;
    } else {
      r.unplaced.push_back(static_cast<int>(i));
      m.unplaced_reason = "fits an empty GPU (" + Human(static_cast<double>(m.footprint), "B") +
                          ") but not beside the others: the most free memory left on a GPU is " +
                          Human(most_free, "B") + " (" + pk.method + ")";
    }
  }
  r.plan = std::move(plan);
  return r;
}

Result<PlanResult> RunPlan(const PlanRequest& req) {
  LMKIT_ASSIGN_OR_RETURN(Plan plan, LoadPlan(req.plan_path));
  LMKIT_ASSIGN_OR_RETURN(PlanResult r, EvaluatePlan(std::move(plan), req.gpu, req.gpus));
  if (!req.svg_path.empty()) {
    // The chart replaces its destination: not a model config the plan reads (the command checks the plan file).
    std::error_code ec;
    if (std::filesystem::is_regular_file(req.svg_path, ec))
      for (const PlanModel& m : r.plan.models)
        if (!m.config_file.empty() && std::filesystem::equivalent(m.config_file, req.svg_path, ec))
          return Status::InvalidArgument(m.config_file + ": is also the output (--svg " + req.svg_path +
                               "); writing it would destroy the input");
    r.svg_path = req.svg_path;  // the caller draws the map (present/accounting_svg.h)
  }
  return r;
}

}  // namespace lmkit::accounting
