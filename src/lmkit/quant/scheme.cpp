#include "lmkit/quant/scheme.h"

#include <array>
#include <vector>

#include "lmkit/common/name_table.h"

namespace lmkit::quant {
namespace {

// Presets: compressed-tensors quant_scheme.py (W8A16 = _int_wnam(8), W4A16 = _int_wnam(4) with group 128, INT8_W8A8,
// FP8_DYNAMIC, FP8), docs/quant.md.
constexpr std::array<SchemeInfo, 5> kSchemes = {{
    {QuantScheme::kW8A16, "w8a16", "INT8 weights, 16-bit activations (compressed-tensors pack-quantized)", "int8",
     "pack-quantized", false, false, false, "channel", "W8A16", 8},
    {QuantScheme::kW8A8, "w8a8",
     "INT8 weights and activations: dynamic per-token, or static per-tensor from a calibration table (int-quantized)",
     "int8", "int-quantized", true, false, true, "channel", "W8A8 (INT8)", 8},
    {QuantScheme::kFp8, "fp8",
     "FP8 E4M3 weights, dynamic per-token FP8 activations (float-quantized; Hopper/Ada FP8 kernels)", "fp8_e4m3",
     "float-quantized", true, false, false, "channel", "FP8_DYNAMIC", 8},
    {QuantScheme::kFp8Static, "fp8-static",
     "FP8 E4M3 weights, static per-tensor FP8 activations from a calibration table (float-quantized)", "fp8_e4m3",
     "float-quantized", true, true, true, "tensor", "FP8", 8},
    {QuantScheme::kW4A16, "w4a16",
     "INT4 weights in groups of 128, 16-bit activations (compressed-tensors pack-quantized; vLLM's Marlin kernels)",
     "int4", "pack-quantized", false, false, false, "group:128", "W4A16", 4},
}};

constexpr std::array<FormatInfo, 2> kFormats = {{
    {QuantFormat::kCompressedTensors, "compressed-tensors",
     "a safetensors checkpoint with quantization_config (vLLM, transformers); a directory for a directory input"},
    {QuantFormat::kGgufQ8_0, "gguf-q8_0", "one llama.cpp GGUF file (Q8_0 blocks) from a Llama-family model directory"},
}};

constexpr std::array<MethodInfo, 2> kMethods = {{
    {QuantMethod::kRtn, "rtn", "round to nearest with absmax scales (no calibration)"},
    {QuantMethod::kGptq, "gptq",
     "GPTQ: columns rounded in turn, each error spread over the later columns through the inverse Hessian of the "
     "layer's input (needs calibration tokens)"},
}};

}  // namespace

std::span<const MethodInfo> Methods() { return kMethods; }

const MethodInfo& InfoOf(QuantMethod m) { return EntryOf(kMethods, &MethodInfo::method, m); }

Result<QuantMethod> ParseQuantMethod(std::string_view name) {
  return ParseName(kMethods, &MethodInfo::method, name, "method", UnknownName::kNot);
}

std::span<const SchemeInfo> Schemes() { return kSchemes; }

const SchemeInfo& InfoOf(QuantScheme s) { return EntryOf(kSchemes, &SchemeInfo::scheme, s); }

Result<QuantScheme> ParseQuantScheme(std::string_view name) {
  return ParseName(kSchemes, &SchemeInfo::scheme, name, "scheme", UnknownName::kNot);
}

std::span<const FormatInfo> Formats() { return kFormats; }

const FormatInfo& InfoOf(QuantFormat f) { return EntryOf(kFormats, &FormatInfo::format, f); }

Result<QuantFormat> ParseQuantFormat(std::string_view name) {
  return ParseName(kFormats, &FormatInfo::format, name, "format", UnknownName::kNot);
}

}  // namespace lmkit::quant
