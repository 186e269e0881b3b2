#include "lmkit/quant/quantize_plan.h"

// GCC 12's false -Wmaybe-uninitialized inside libstdc++'s <regex> at -O1 with sanitizers (quantize.cpp says more).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <filesystem>
#include <set>

#include "lmkit/common/json.h"
#include "lmkit/common/mapped_file.h"
#include "lmkit/io/checkpoint.h"

namespace lmkit::quant::detail {
namespace fs = std::filesystem;
namespace {

bool IsQuantizableDType(io::DType t) { return t == io::DType::kF32 || t == io::DType::kF16 || t == io::DType::kBF16; }

// Embeddings, norms, the output head and the MoE routers stay in full precision unless an include pattern names
// them. The routers (Mixtral's block_sparse_moe.gate, the Qwen/DeepSeek mlp.gate, Qwen2-MoE's shared_expert_gate) are
// not Linear modules in transformers 5 and get no quantization there: a quantized one loads as missing + unexpected
// keys.
bool DefaultExcluded(const std::string& name) {
  static const std::regex kDefault(
      "(^|\\.)(embed_tokens|embeddings|word_embeddings|embed_in|embed_out|wte|wpe|lm_head)(\\.|$)|^output\\.weight$|"
      "norm|"
      "(^|\\.)ln_|"
      "(^|\\.)(gate|shared_expert_gate)\\.weight$",
      std::regex::ECMAScript);
  return std::regex_search(name, kDefault);
}

}  // namespace

Result<Matchers> CompileMatchers(const QuantizeRequest& o) {
  Matchers m;
  auto compile = [](const std::string& pattern, std::vector<std::regex>& out) -> Status {
    try {
      out.emplace_back(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Status::InvalidArgument("invalid pattern '" + pattern + "': " + e.what());
    }
    return Status::Ok();
  };
  for (const auto& p : o.include) LMKIT_RETURN_IF_ERROR(compile(p, m.include));
  for (const auto& p : o.exclude) LMKIT_RETURN_IF_ERROR(compile(p, m.exclude));
  return m;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A 2-D float "*.weight" that is not default-excluded (or matches an include), and matches no exclude.
bool Selected(const io::TensorInfo& t, const Matchers& m) {
  if (!EndsWith(t.name, ".weight") || t.shape.size() != 2 || !IsQuantizableDType(t.dtype)) return false;
  bool in = false;
  if (m.include.empty()) {
    in = !DefaultExcluded(t.name);
  } else {
    for (const auto& r : m.include) in = in || std::regex_search(t.name, r);
  }
  if (!in) return false;
  for (const auto& r : m.exclude)
    if (std::regex_search(t.name, r)) return false;
  return true;
}

std::string ModuleName(const std::string& weight_name) {
  return weight_name.substr(0, weight_name.size() - std::string(".weight").size());
}

bool IsRoutedExpert(const std::string& weight_name) {
  static const std::regex kExpert("\\.experts\\.[0-9]+\\.(w1|w2|w3|gate_proj|up_proj|down_proj)\\.weight$",
                                  std::regex::ECMAScript);
  return std::regex_search(weight_name, kExpert);
}

std::vector<io::TensorInfo> FusedExpertSlices(const io::TensorInfo& t, const std::string& model_type) {
  const bool gate_up = EndsWith(t.name, ".experts.gate_up_proj");
  if ((!gate_up && !EndsWith(t.name, ".experts.down_proj")) || t.shape.size() != 3 || !IsQuantizableDType(t.dtype))
    return {};
  const uint64_t E = t.shape[0], R = t.shape[1], C = t.shape[2];
  if (gate_up && R % 2 != 0) return {};
  const bool w123 = model_type == "mixtral";
  const std::string prefix = t.name.substr(0, t.name.size() - (gate_up ? 12 : 9));  // "...experts."
  const uint64_t rows = gate_up ? R / 2 : R, bytes = rows * C * io::DTypeSize(t.dtype);
  std::vector<io::TensorInfo> out;
  auto add = [&](uint64_t e, const char* leaf, uint64_t index) {
    io::TensorInfo x;
    x.name = prefix + std::to_string(e) + "." + leaf + ".weight";
    x.dtype = t.dtype;
    x.shape = {rows, C};
    x.begin = t.begin + index * bytes;
    x.end = x.begin + bytes;
    out.push_back(std::move(x));
  };
  for (uint64_t e = 0; e < E; ++e) {
    if (gate_up) {
      add(e, w123 ? "w1" : "gate_proj", 2 * e);
      add(e, w123 ? "w3" : "up_proj", 2 * e + 1);
    } else {
      add(e, w123 ? "w2" : "down_proj", e);
    }
  }
  return out;
}

Result<Plan> MakePlan(const QuantizeRequest& o, bool single_output_file) {
  Plan plan;
  std::error_code ec;
  LMKIT_ASSIGN_OR_RETURN(io::Checkpoint ck, io::OpenCheckpoint(o.input));
  plan.directory = ck.directory;
  if (plan.directory) {
    if (!ck.index_path.empty()) plan.index_name = io::kIndexName;
    plan.config_path = ck.config_path;
    plan.config_text = std::move(ck.config_text);
    // Read leniently: the writers parse config.json themselves and report a malformed one.
    if (Result<Json> cj = ParseJson(plan.config_text, plan.config_path);
        cj.ok() && cj->is_object() && cj->contains("model_type") && (*cj)["model_type"].is_string())
      plan.model_type = (*cj)["model_type"].get<std::string>();
    // The output directory is created only once every input has been validated (Quantize), so a bad input leaves
    // no directory behind.
    if (!single_output_file && fs::exists(o.output, ec) && !fs::is_directory(o.output, ec))
      return Status::InvalidInput(
          o.output, "exists and is not a directory (" + Field("output") + " of a directory " + Field("input") + ")");
    for (io::CheckpointFile& f : ck.files)
      plan.shards.push_back(Shard{f.path, (fs::path(o.output) / f.name).string(), f.name, std::move(f.file)});
  } else {
    if (!single_output_file && fs::is_directory(o.output, ec))
      return Status::InvalidArgument(Field("output") + " must be a file path when " + Field("input") +
                                     " is a .safetensors file");
    io::CheckpointFile& f = ck.files.front();
    plan.shards.push_back(Shard{o.input, o.output, fs::path(o.output).filename().string(), std::move(f.file)});
  }
  if (single_output_file) {
    if (fs::is_directory(o.output, ec))
      return Status::InvalidArgument(Field("output") + " must be a file path with " + Field("format") + " gguf-q8_0");
    for (Shard& s : plan.shards) s.out_path = o.output;
  }
  for (size_t si = 0; si < plan.shards.size(); ++si)
    for (const io::TensorInfo& t : plan.shards[si].file.tensors())
      for (io::TensorInfo& x : FusedExpertSlices(t, plan.model_type)) {
        std::string name = x.name;
        plan.expert_slices.emplace(std::move(name), std::make_pair(si, std::move(x)));
      }
  for (Shard& s : plan.shards) {
    if (fs::weakly_canonical(s.in_path, ec) == fs::weakly_canonical(s.out_path, ec))
      return Status::InvalidArgument(Field("output") + " would overwrite " + Field("input") + " (" + s.in_path + ")");
  }
  return plan;
}

}  // namespace lmkit::quant::detail
