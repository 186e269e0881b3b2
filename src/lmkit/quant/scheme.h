// The quantization schemes and output formats `lmkit quantize` offers: one table each, which parses the option
// values, prints the help and the `--list-schemes` listing, and says what each scheme writes. docs/quant.md has the
// loader table that goes with it (loader_rules.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "lmkit/common/status.h"

namespace lmkit::quant {

enum class QuantScheme : uint8_t { kW8A16, kW8A8, kFp8, kFp8Static, kW4A16 };
enum class QuantFormat : uint8_t { kCompressedTensors, kGgufQ8_0 };

// What a scheme's Linear layers compute with, and how it is stored in compressed-tensors.
struct SchemeInfo {
  QuantScheme scheme;
  std::string_view name;       // the --scheme value
  std::string_view summary;    // one line for --help and --list-schemes
  std::string_view weights;    // "int8", "int4" or "fp8_e4m3"
  std::string_view ct_format;  // compressed-tensors "format": pack-quantized, int-quantized or float-quantized
  // Whether activations are quantized too: dynamic per-token (w8a8 without a calibration table, fp8) or static
  // per-tensor (w8a8 with one, fp8-static).
  bool activations;
  bool needs_calibration;  // fp8-static
  bool takes_calibration;  // w8a8 (optional: static instead of dynamic), fp8-static (required)
  std::string_view default_granularity;
  std::string_view recipe;  // the llm-compressor preset it corresponds to
  int weight_bits = 8;      // bits per weight code (4 for w4a16)
};

// Every scheme, in --help order.
std::span<const SchemeInfo> Schemes();
const SchemeInfo& InfoOf(QuantScheme s);
// kInvalidArgument naming Field("scheme") for a name not in Schemes().
Result<QuantScheme> ParseQuantScheme(std::string_view name);

// How weights are rounded: to nearest, or by GPTQ against the Hessian of a calibration run (quant/gptq.h).
enum class QuantMethod : uint8_t { kRtn, kGptq };
struct MethodInfo {
  QuantMethod method;
  std::string_view name;
  std::string_view summary;
};
std::span<const MethodInfo> Methods();
const MethodInfo& InfoOf(QuantMethod m);
// kInvalidArgument naming Field("method") for a name not in Methods().
Result<QuantMethod> ParseQuantMethod(std::string_view name);

struct FormatInfo {
  QuantFormat format;
  std::string_view name;
  std::string_view summary;
};
std::span<const FormatInfo> Formats();
const FormatInfo& InfoOf(QuantFormat f);
// kInvalidArgument naming Field("format") for a name not in Formats().
Result<QuantFormat> ParseQuantFormat(std::string_view name);

}  // namespace lmkit::quant
