// The loaders' rules, transcribed independently of lmkit's own table (quant/loader_rules.h) from their sources, and
// applied to the checkpoints lmkit writes: the config a loader parses, and the tensors (names, dtypes, shapes) it
// creates parameters for. A change in what lmkit writes, or in loader_rules.cpp, that a loader would not take fails
// here without the loaders installed. Sources (docs/quant.md cites them by line):
//   vLLM  vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py (_get_scheme_from_parts and
//         the _is_* predicates), schemes/compressed_tensors_wNa16.py (create_weights), marlin_utils.py
//         (MARLIN_SUPPORTED_GROUP_SIZES);
//   compressed-tensors 0.20.1  compressors/format.py (infer_module_format's priority), compressors/pack_quantized/
//         base.py and naive_quantized/base.py (can_compress, compression_param_names);
//   llama.cpp  convert_hf_to_gguf.py (ModelBase.dequant_model, the compressed-tensors branch).
#include "lmkit/quant/loader_rules.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <random>
#include <set>

#include "lmkit/common/json.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/quant/quantize.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::quant;

namespace {

// ---- vLLM's _get_scheme_from_parts for a Linear with one config group -------------------------------------------
std::string JsonStr(const Json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : "";
}
bool JsonTrue(const Json& j, const char* k) { return j.contains(k) && j[k].is_boolean() && j[k].get<bool>(); }
int JsonInt(const Json& j, const char* k) { return j.contains(k) && j[k].is_number_integer() ? j[k].get<int>() : -1; }

// The vLLM scheme class chosen for the config group, or "" (NotImplementedError: "No compressed-tensors compatible
// scheme was found", or a WNA16 constructor/kernel refusal).
std::string VllmScheme(const Json& qc) {
  const Json& g = qc["config_groups"]["group_0"];
  const Json& w = g["weights"];
  const Json in = g.contains("input_activations") ? g["input_activations"] : Json();
  const std::string format =
      g.contains("format") && g["format"].is_string() ? JsonStr(g, "format") : JsonStr(qc, "format");
  const std::string ws = JsonStr(w, "strategy");
  // _is_wNa16_group_channel: weight-only, channel or group, static weights.
  if (in.is_null() && (ws == "channel" || ws == "group") && !JsonTrue(w, "dynamic")) {
    if (format == "pack-quantized" && (JsonInt(w, "num_bits") == 4 || JsonInt(w, "num_bits") == 8)) {
      // CompressedTensorsWNA16: group_size None needs channel; Marlin takes group sizes -1, 32, 64, 128.
      const int gs = w["group_size"].is_null() ? -1 : JsonInt(w, "group_size");
      if (gs == -1 && ws != "channel") return "";
      if (gs != -1 && gs != 32 && gs != 64 && gs != 128) return "";
      return "CompressedTensorsWNA16";
    }
  }
  // is_activation_quantization_format: naive-, int-, float-quantized (and nvfp4).
  const bool act_format = format == "naive-quantized" || format == "int-quantized" || format == "float-quantized";
  if (!act_format || in.is_null()) return "";
  const bool w8 = JsonInt(w, "num_bits") == 8 && JsonInt(in, "num_bits") == 8;
  const bool wtc = ws == "tensor" || ws == "channel";
  // _is_fp8_w8a8
  if (JsonStr(w, "type") == "float" && JsonStr(in, "type") == "float" && JsonTrue(w, "symmetric") &&
      !JsonTrue(w, "dynamic") && (wtc || ws == "block")) {
    if (JsonTrue(in, "dynamic") || (JsonTrue(in, "symmetric") && JsonStr(in, "strategy") == "tensor"))
      return "CompressedTensorsW8A8Fp8";
  }
  // _is_static_tensor_w8a8 / _is_dynamic_token_w8a8
  if (w8 && wtc && JsonTrue(w, "symmetric") && JsonStr(in, "strategy") == "tensor" && !JsonTrue(w, "dynamic") &&
      !JsonTrue(in, "dynamic"))
    return "CompressedTensorsW8A8Int8";
  if (w8 && wtc && JsonTrue(w, "symmetric") && JsonStr(in, "strategy") == "token" && !JsonTrue(w, "dynamic") &&
      JsonTrue(in, "dynamic"))
    return "CompressedTensorsW8A8Int8";
  return "";
}

// ---- compressed-tensors: the format a module would be inferred to have, and the tensors that format holds ---------
std::string InferredFormat(const Json& g) {
  const Json& w = g["weights"];
  const Json in = g.contains("input_activations") ? g["input_activations"] : Json();
  // COMPRESSION_FORMAT_PRIORITY after the mx/nv formats: int-quantized, pack-quantized, float-quantized, naive.
  if (!in.is_null() && JsonStr(w, "type") == "int") return "int-quantized";
  if ((in.is_null() || JsonStr(in, "type") != "float") && JsonStr(w, "type") == "int" && JsonInt(w, "num_bits") >= 1 &&
      JsonInt(w, "num_bits") <= 8)
    return "pack-quantized";
  if (!in.is_null() && JsonStr(w, "type") == "float") return "float-quantized";
  return "naive-quantized";
}

// Local tensor names of a quantized Linear: compression_param_names(format) for symmetric schemes, plus the static
// input_scale the lifecycle registers.
std::set<std::string> ParamNames(const std::string& format, const Json& g) {
  std::set<std::string> n = format == "pack-quantized"
                                ? std::set<std::string>{"weight_packed", "weight_scale", "weight_shape"}
                                : std::set<std::string>{"weight", "weight_scale"};
  const Json in = g.contains("input_activations") ? g["input_activations"] : Json();
  if (!in.is_null() && !JsonTrue(in, "dynamic")) n.insert("input_scale");
  return n;
}

// ---- llama.cpp's convert_hf_to_gguf.py ------------------------------------------------------------------------
bool LlamaCppConverts(const Json& qc) {
  const Json& w = qc["config_groups"]["group_0"]["weights"];
  const std::string f = JsonStr(qc, "format"), s = JsonStr(w, "strategy");
  if (f == "float-quantized" || f == "int-quantized" || f == "naive-quantized")
    return (s == "channel" || s == "block") && w["group_size"].is_null();
  if (f == "pack-quantized") return s == "group" && JsonStr(w, "type") == "int";
  return false;
}

// ---- a toy Llama layer, written once ------------------------------------------------------------------------
struct LoaderToy {
  test::TempDir dir;
  std::string model, calib;
  std::map<std::string, std::vector<uint64_t>> linears;  // module -> shape
  LoaderToy() {
    model = dir.file("model");
    std::filesystem::create_directory(model);
    linears = {{"model.layers.0.self_attn.q_proj", {64, 64}}, {"model.layers.0.self_attn.k_proj", {32, 64}},
               {"model.layers.0.self_attn.v_proj", {32, 64}}, {"model.layers.0.self_attn.o_proj", {64, 64}},
               {"model.layers.0.mlp.gate_proj", {128, 64}},   {"model.layers.0.mlp.up_proj", {128, 64}},
               {"model.layers.0.mlp.down_proj", {64, 128}}};
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    std::vector<std::vector<uint8_t>> store;
    std::vector<io::TensorData> ts;
    auto add = [&](const std::string& name, std::vector<uint64_t> shape, io::DType dt) {
      uint64_t n = 1;
      for (uint64_t d : shape) n *= d;
      std::vector<float> v(n);
      for (float& x : v) x = nd(rng);
      store.emplace_back(n * io::DTypeSize(dt));
      REQUIRE(io::ConvertFromF32(dt, v.data(), store.back().data(), n).ok());
      ts.push_back({name, dt, shape, std::span<const uint8_t>(store.back())});
    };
    store.reserve(16);
    add("model.embed_tokens.weight", {100, 64}, io::DType::kBF16);
    for (const auto& [m, shape] : linears) add(m + ".weight", shape, io::DType::kBF16);
    add("model.norm.weight", {64}, io::DType::kBF16);
    REQUIRE(io::WriteSafetensors(model + "/model.safetensors", ts, {{"format", "pt"}}).ok());
    test::WriteAll(model + "/config.json", R"({"model_type": "llama", "hidden_size": 64})");
    Json c;
    c["format"] = "lmkit-calibration";
    for (const auto& [m, shape] : linears) c["tensors"][m]["amax"] = 3.0;
    calib = dir.file("calib.json");
    test::WriteAll(calib, DumpJson(c));
  }
};

}  // namespace

TEST_CASE("loader rules: what lmkit writes is what vLLM, compressed-tensors and llama.cpp read, as loader_rules says",
          "[quant][loaders]") {
  static LoaderToy toy;
  int written = 0;
  for (const SchemeInfo& info : Schemes()) {
    for (const char* gname : {"channel", "tensor", "group:32", "group:16"}) {
      for (bool with_calib : {false, true}) {
        if (with_calib ? !info.takes_calibration : info.needs_calibration) continue;
        auto g = ParseGranularity(gname);
        REQUIRE(g.ok());
        INFO(info.name << " " << gname << (with_calib ? " static" : ""));
        QuantizeRequest o;
        o.input = toy.model;
        o.output = toy.dir.file(std::string(info.name) + "-" + gname + (with_calib ? "-s" : ""));
        o.scheme = info.scheme;
        o.granularity = *g;
        if (with_calib) o.calibration = toy.calib;
        const Support sup = CheckSupport(info.scheme, QuantFormat::kCompressedTensors, *g, with_calib);
        auto rep = Quantize(o, nullptr);
        if (sup.policy == Support::Policy::kRefuse) {
          CHECK(rep.status().code() == ErrorCode::kInvalidArgument);
          CHECK(!std::filesystem::exists(o.output));
          continue;
        }
        REQUIRE(rep.ok());
        ++written;
        CHECK(rep->warnings.size() == (sup.policy == Support::Policy::kWarn ? 1u : 0u));
        auto cfg = ParseJson(test::ReadAll(o.output + "/config.json"), "config.json");
        REQUIRE(cfg.ok());
        const Json& qc = (*cfg)["quantization_config"];
        const Json& grp = qc["config_groups"]["group_0"];
        // The format lmkit declares is the one compressed-tensors would infer (its loader then needs no override)
        // and the scheme's, in both places vLLM and compressed-tensors read it.
        CHECK(JsonStr(qc, "format") == info.ct_format);
        CHECK(JsonStr(grp, "format") == info.ct_format);
        CHECK(InferredFormat(grp) == info.ct_format);
        // vLLM: a scheme class exactly where loader_rules says it serves.
        const std::string vllm = VllmScheme(qc);
        CHECK(!vllm.empty() == sup.loaders[0].serves);
        // llama.cpp's converter.
        CHECK(LlamaCppConverts(qc) == sup.loaders[2].serves);
        // The tensors every quantized Linear holds: names, dtypes and shapes as the loaders create their parameters.
        auto f = io::SafetensorsFile::Open(o.output + "/model.safetensors");
        REQUIRE(f.ok());
        const std::set<std::string> names = ParamNames(InferredFormat(grp), grp);
        std::set<std::string> seen;
        for (const io::TensorInfo& t : f->tensors()) seen.insert(t.name);
        for (const auto& [m, shape] : toy.linears) {
          const uint64_t out = shape[0], in = shape[1];
          for (const char* n : {"weight", "weight_packed", "weight_scale", "weight_shape", "input_scale"})
            CHECK(seen.count(m + "." + n) == names.count(std::string(n)));
          const io::TensorInfo* s = f->Find(m + ".weight_scale");
          REQUIRE(s);
          const std::vector<uint64_t> scale_shape = g->kind == Granularity::Kind::kTensor ? std::vector<uint64_t>{1}
                                                    : g->kind == Granularity::Kind::kChannel
                                                        ? std::vector<uint64_t>{out, 1}
                                                        : std::vector<uint64_t>{out, in / g->group_size};
          CHECK(s->shape == scale_shape);
          CHECK(s->dtype == io::DType::kBF16);  // the model's dtype, which vLLM's params_dtype is
          if (names.count("weight_packed")) {
            // CompressedTensorsWNA16.create_weights: int32 [out, in / pack_factor], pack_factor 32 / num_bits;
            // weight_shape int64 [2] holding [out, in].
            const io::TensorInfo* p = f->Find(m + ".weight_packed");
            const io::TensorInfo* sh = f->Find(m + ".weight_shape");
            REQUIRE(p);
            REQUIRE(sh);
            CHECK(p->dtype == io::DType::kI32);
            const uint64_t pack_factor = 32 / grp["weights"]["num_bits"].get<uint64_t>();
            CHECK(p->shape == std::vector<uint64_t>{out, in / pack_factor});
            CHECK(sh->dtype == io::DType::kI64);
            CHECK(sh->shape == std::vector<uint64_t>{2});
            int64_t v[2];
            std::memcpy(v, f->Data(*sh).data(), sizeof v);
            CHECK(v[0] == static_cast<int64_t>(out));
            CHECK(v[1] == static_cast<int64_t>(in));
          } else {
            const io::TensorInfo* w = f->Find(m + ".weight");
            REQUIRE(w);
            CHECK(w->dtype == (JsonStr(grp["weights"], "type") == "float" ? io::DType::kF8E4M3 : io::DType::kI8));
            CHECK(w->shape == shape);
          }
          if (names.count("input_scale")) CHECK(f->Find(m + ".input_scale")->shape == std::vector<uint64_t>{1});
        }
        // Embeddings and norms stay as they were, and config's ignore names every 2-D weight left unquantized.
        CHECK(f->Find("model.embed_tokens.weight")->dtype == io::DType::kBF16);
        CHECK(std::find(qc["ignore"].begin(), qc["ignore"].end(), "model.embed_tokens") != qc["ignore"].end());
      }
    }
  }
  CHECK(written >= 12);
}

TEST_CASE("loader rules: each scheme's default granularity is one vLLM serves", "[quant][loaders]") {
  for (const SchemeInfo& info : Schemes()) {
    auto g = ParseGranularity(info.default_granularity);
    REQUIRE(g.ok());
    for (bool st : {false, true}) {
      if (st ? !info.takes_calibration : info.needs_calibration) continue;
      const Support s = CheckSupport(info.scheme, QuantFormat::kCompressedTensors, *g, st);
      INFO(info.name);
      CHECK(s.policy == Support::Policy::kWrite);
      CHECK(s.loaders[0].serves);
      CHECK(s.loaders[1].serves);
    }
  }
}

TEST_CASE("loader rules: a fused q/k/v or gate/up group split by the selection is found", "[quant][loaders]") {
  const std::vector<std::string> all = {"l.0.self_attn.q_proj", "l.0.self_attn.k_proj", "l.0.self_attn.v_proj",
                                        "l.0.mlp.gate_proj",    "l.0.mlp.up_proj",      "l.0.mlp.down_proj"};
  CHECK(!FindSplitFusedGroup(all, {}));
  CHECK(!FindSplitFusedGroup({"l.0.mlp.down_proj"}, {"l.0.self_attn.q_proj", "l.0.self_attn.k_proj",
                                                     "l.0.self_attn.v_proj", "l.0.mlp.gate_proj", "l.0.mlp.up_proj"}));
  auto s = FindSplitFusedGroup({"l.0.self_attn.q_proj", "l.0.self_attn.v_proj"}, {"l.0.self_attn.k_proj"});
  REQUIRE(s);
  CHECK(*s ==
        "'l.0.self_attn.q_proj' is quantized but 'l.0.self_attn.k_proj' is not, and vLLM loads both as one "
        "layer (qkv_proj), which must have one scheme");
  CHECK(FindSplitFusedGroup({"l.0.mlp.gate_proj"}, {"l.0.mlp.up_proj"}));
  // The same leaf names under different parents are different layers.
  CHECK(!FindSplitFusedGroup({"l.0.self_attn.q_proj"}, {"l.1.self_attn.k_proj"}));
}
