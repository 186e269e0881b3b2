#include "lmkit/quant/loader_rules.h"

#include <fmt/format.h>

#include <map>

namespace lmkit::quant {
namespace {

using Kind = Granularity::Kind;

// vLLM's Marlin kernels (the WNA16 path on Ampere and later) take these group sizes (marlin_utils.py,
// MARLIN_SUPPORTED_GROUP_SIZES; -1 is channel).
bool MarlinGroupSize(uint64_t g) { return g == 32 || g == 64 || g == 128; }

LoaderVerdict Verdict(Loader l, bool serves, std::string why) { return LoaderVerdict{l, serves, std::move(why)}; }

Support CompressedTensors(QuantScheme scheme, const Granularity& g, bool static_acts) {
  Support s;
  const std::string gname = GranularityName(g);
  // vLLM: compressed_tensors.py _get_scheme_from_parts.
  switch (scheme) {
    case QuantScheme::kW8A16:
    case QuantScheme::kW4A16:
      if (g.kind == Kind::kTensor)
        s.loaders[0] = Verdict(Loader::kVllm, false,
                               "its WNA16 path (_is_wNa16_group_channel) takes channel or group "
                               "weight scales, not tensor");
      else if (g.kind == Kind::kGroup && !MarlinGroupSize(g.group_size))
        s.loaders[0] = Verdict(Loader::kVllm, false,
                               fmt::format("its Marlin kernels take group sizes 32, 64 and 128, not {}", g.group_size));
      else
        s.loaders[0] = Verdict(Loader::kVllm, true,
                               "CompressedTensorsWNA16 (Marlin/Machete: out_features % 64, in_features % 128)");
      break;
    case QuantScheme::kW8A8:
      if (g.kind == Kind::kGroup)
        s.loaders[0] =
            Verdict(Loader::kVllm, false, "its INT8 kernels take tensor or channel weight scales, not group");
      else
        s.loaders[0] = Verdict(Loader::kVllm, true,
                               static_acts ? "CompressedTensorsW8A8Int8 (static per-tensor input scales)"
                                           : "CompressedTensorsW8A8Int8 (dynamic per-token input scales)");
      break;
    case QuantScheme::kFp8:
    case QuantScheme::kFp8Static:
      if (g.kind == Kind::kGroup)
        s.loaders[0] =
            Verdict(Loader::kVllm, false, "its FP8 kernels take tensor, channel or block weight scales, not group");
      else
        s.loaders[0] = Verdict(Loader::kVllm, true, "CompressedTensorsW8A8Fp8 on SM 8.9+ (W8A16Fp8 Marlin before)");
      break;
  }
  // transformers + compressed-tensors: every module is decompressed to its float weight (pack-quantized,
  // int-quantized or float-quantized alike) and quantized activations are simulated in the forward pass.
  s.loaders[1] = Verdict(Loader::kTransformers, true,
                         std::string("decompresses ") + std::string(InfoOf(scheme).ct_format) + " (" + gname + ")");
  // llama.cpp: convert_hf_to_gguf.py dequantizes compressed-tensors before writing GGUF.
  if (scheme == QuantScheme::kW8A16 || scheme == QuantScheme::kW4A16) {
    s.loaders[2] =
        g.kind == Kind::kGroup
            ? Verdict(Loader::kLlamaCpp, true, "convert_hf_to_gguf.py dequantizes pack-quantized groups")
            : Verdict(Loader::kLlamaCpp, false, "convert_hf_to_gguf.py takes pack-quantized with group scales only");
  } else {
    s.loaders[2] =
        g.kind == Kind::kChannel
            ? Verdict(Loader::kLlamaCpp, true,
                      std::string("convert_hf_to_gguf.py dequantizes ") + std::string(InfoOf(scheme).ct_format))
            : Verdict(Loader::kLlamaCpp, false,
                      std::string("convert_hf_to_gguf.py takes ") + std::string(InfoOf(scheme).ct_format) +
                          " with channel (or block) scales only");
  }
  if (!s.loaders[0].serves) {
    const std::string what = fmt::format("{} {} with {} scales", Field("scheme"), InfoOf(scheme).name, gname);
    if (scheme == QuantScheme::kW8A16 || scheme == QuantScheme::kW4A16) {
      s.policy = Support::Policy::kWarn;
      s.message =
          fmt::format("vLLM cannot serve {}: {}; transformers + compressed-tensors loads it", what, s.loaders[0].why);
    } else {
      // Activations would only be simulated (transformers) or not quantized at all (llama.cpp): no loader runs it
      // as the scheme it claims.
      s.policy = Support::Policy::kRefuse;
      s.message = fmt::format("vLLM cannot serve {}: {}; use {} channel or tensor", what, s.loaders[0].why,
                              Field("granularity"));
    }
  }
  return s;
}

}  // namespace

std::string_view LoaderName(Loader l) {
  switch (l) {
    case Loader::kVllm:
      return "vLLM";
    case Loader::kTransformers:
      return "transformers";
    case Loader::kLlamaCpp:
      return "llama.cpp";
  }
  return "";
}

Support CheckSupport(QuantScheme scheme, QuantFormat format, const Granularity& g, bool static_activations) {
  if (format == QuantFormat::kCompressedTensors) return CompressedTensors(scheme, g, static_activations);
  Support s;
  // vLLM and transformers: from their documentation (GGUF Q8_0 of the llama architecture), not loaded here.
  s.loaders[0] = Verdict(Loader::kVllm, true, "its GGUF loader (Q8_0; tokenizer from the Hugging Face directory)");
  s.loaders[1] = Verdict(Loader::kTransformers, true,
                         "from_pretrained(dir, gguf_file=...) dequantizes Q8_0 to float (needs accelerate)");
  s.loaders[2] = Verdict(Loader::kLlamaCpp, true, "native Q8_0 (llama architecture)");
  return s;
}

std::optional<std::string> FindSplitFusedGroup(const std::vector<std::string>& quantized,
                                               const std::vector<std::string>& kept) {
  // (parent module, fused layer) -> the first quantized and the first kept member seen.
  struct Members {
    std::string quantized, kept;
  };
  std::map<std::pair<std::string, std::string>, Members> groups;
  auto key = [](const std::string& m) -> std::optional<std::pair<std::string, std::string>> {
    const size_t dot = m.rfind('.');
    const std::string leaf = dot == std::string::npos ? m : m.substr(dot + 1);
    const std::string parent = dot == std::string::npos ? "" : m.substr(0, dot);
    if (leaf == "q_proj" || leaf == "k_proj" || leaf == "v_proj") return std::pair{parent, std::string("qkv_proj")};
    if (leaf == "gate_proj" || leaf == "up_proj") return std::pair{parent, std::string("gate_up_proj")};
    return std::nullopt;
  };
  for (const std::string& m : quantized)
    if (auto k = key(m); k && groups[*k].quantized.empty()) groups[*k].quantized = m;
  for (const std::string& m : kept)
    if (auto k = key(m); k && groups[*k].kept.empty()) groups[*k].kept = m;
  for (const auto& [k, members] : groups)
    if (!members.quantized.empty() && !members.kept.empty())
      return fmt::format(
          "'{}' is quantized but '{}' is not, and vLLM loads both as one layer ({}), which must have "
          "one scheme",
          members.quantized, members.kept, k.second);
  return std::nullopt;
}

}  // namespace lmkit::quant
