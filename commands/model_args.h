// What `lmkit flops`, `memory` and `plan` share on the command line: the MODEL argument and explicit-dimension flags,
// the output format, and printing a result (text with request fields spelled as flags, or JSON) and its chart.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "command.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/request.h"
#include "lmkit/common/atomic_file.h"
#include "lmkit/present/table.h"

namespace lmkit::cli {

// MODEL is a positional; every other field is spelled as its flag.
inline const FlagNames kAccountingFlags = {{"model", "MODEL"}};

struct ModelArgs {
  std::string model;
  accounting::Dimensions dims;
  std::string ffn = "swiglu", norm = "rmsnorm";
  std::string format = "table";
  std::string sweep;
  std::string svg;
  CLI::Option* layers = nullptr;

  void Bind(CLI::App& sub) {
    sub.add_option("MODEL", model,
                   "config.json (or a directory holding one), or a preset name from data/models/ "
                   "(e.g. llama-3-8b, cs336-gpt2-xl); omit it to give --layers/--d-model/... instead");
    auto* g = "explicit dimensions (instead of MODEL)";
    layers = sub.add_option("--layers", dims.layers, "number of layers")->group(g);
    sub.add_option("--d-model", dims.d_model, "hidden size")->group(g);
    sub.add_option("--heads", dims.heads, "attention heads")->group(g);
    sub.add_option("--kv-heads", dims.kv_heads, "key/value heads (default: heads)")->group(g);
    sub.add_option("--head-dim", dims.head_dim, "head dimension (default: d-model / heads)")->group(g);
    sub.add_option("--d-ff", dims.d_ff, "FFN width (default: 4d for gelu, 8d/3 rounded up to 256 for swiglu)")
        ->group(g);
    sub.add_option("--vocab", dims.vocab, "vocabulary size")->group(g);
    sub.add_option("--positions", dims.positions, "rows of a learned position table (default: 0 = RoPE)")->group(g);
    sub.add_option("--ffn", ffn, EnumChoices(accounting::FfnNames()) + " (3 or 2 matrices)")->group(g);
    sub.add_option("--norm", norm, EnumChoices(accounting::NormNames()))->group(g);
    sub.add_flag("--tied", dims.tied, "LM head tied to the input embedding")->group(g);
    sub.add_flag("--bias", dims.bias, "biases on every linear layer (and LayerNorm)")->group(g);
    sub.add_option("--experts", dims.experts, "routed experts per MoE layer (0 = dense)")->group(g);
    sub.add_option("--top-k", dims.top_k, "experts per token")->group(g);
    sub.add_option("--expert-d-ff", dims.expert_d_ff, "width of one expert (default: d-ff)")->group(g);
    sub.add_option("--window", dims.window, "sliding-window attention span (0 = full)")->group(g);
    sub.add_option("--format", format, EnumChoices(present::FormatNames()) + " (default: table)");
    sub.add_option("--sweep", sweep, "VAR=v1,v2,...: one table over seq-len, batch or model (e.g. seq-len=1024,4096)");
    sub.add_option("--svg", svg, "with --sweep: write an SVG chart of the component shares to this file");
  }

  Result<accounting::ModelSource> Source(bool any_dim_flag) const {
    accounting::ModelSource s;
    s.model = model;
    s.has_dims = any_dim_flag;
    s.dims = dims;
    LMKIT_ASSIGN_OR_RETURN(s.dims.ffn, ParseEnum(accounting::FfnNames(), ffn, "ffn"));
    LMKIT_ASSIGN_OR_RETURN(s.dims.norm, ParseEnum(accounting::NormNames(), norm, "norm"));
    return s;
  }
};

// True when any explicit-dimension flag was given on the command line.
inline bool AnyDimFlag(const CLI::App& sub) {
  for (const char* f :
       {"--layers", "--d-model", "--heads", "--kv-heads", "--head-dim", "--d-ff", "--vocab", "--positions", "--ffn",
        "--norm", "--tied", "--bias", "--experts", "--top-k", "--expert-d-ff", "--window"})
    if (sub.count(f) > 0) return true;
  return false;
}

// A presentation text with its request fields spelled as this command's flags.
inline std::string AsFlags(const std::string& text) {
  return RenderFields(text, [](std::string_view f) { return FlagFor(f, kAccountingFlags); });
}

// Writes `svg` to `path` atomically ("" = nothing to write).
inline Status WriteChart(const std::string& path, const std::string& svg) {
  if (path.empty()) return Status::Ok();
  return WriteFileAtomically(path, svg);
}

// A value for an optional field when its flag was given.
template <typename T>
std::optional<T> IfGiven(const CLI::App& sub, const char* flag, const T& v) {
  return sub.count(flag) > 0 ? std::optional<T>(v) : std::nullopt;
}

// The request field a flag sets: "--kv-dtype" -> "kv_dtype".
inline std::string FieldOf(std::string_view flag) {
  std::string f(flag.substr(flag.rfind('-', 1) == 1 ? 2 : 0));
  for (char& c : f)
    if (c == '-') c = '_';
  return f;
}

// Parses `text`, the value of `flag`, into `out` when the flag was given (a name from the core's table; dtypes are
// case-insensitive); `out` stays unset otherwise, so the core can tell "given" from "default".
template <typename E>
Status ParseGiven(const CLI::App& sub, const char* flag, const std::string& text, std::span<const EnumName<E>> table,
                  std::optional<E>* out) {
  if (sub.count(flag) == 0) return Status::Ok();
  Result<E> v = ParseEnum(table, text, FieldOf(flag));
  if (!v.ok()) return v.status();
  *out = *v;
  return Status::Ok();
}
inline Status ParseGiven(const CLI::App& sub, const char* flag, const std::string& text,
                         std::optional<accounting::Dtype>* out) {
  if (sub.count(flag) == 0) return Status::Ok();
  auto v = accounting::ParseDtype(text, FieldOf(flag));
  if (!v.ok()) return v.status();
  *out = *v;
  return Status::Ok();
}

}  // namespace lmkit::cli
