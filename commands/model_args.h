// The MODEL argument and explicit-dimension flags shared by `lmkit flops` and `lmkit memory`.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "lmkit/accounting/report.h"

namespace lmkit::cli {

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
    sub.add_option("--positions", dims.positions, "rows of a learned position table (default 0 = RoPE)")->group(g);
    sub.add_option("--ffn", ffn, "swiglu (3 matrices) or gelu (2 matrices)")->group(g);
    sub.add_option("--norm", norm, "rmsnorm or layernorm")->group(g);
    sub.add_flag("--tied", dims.tied, "LM head tied to the input embedding")->group(g);
    sub.add_flag("--bias", dims.bias, "biases on every linear layer (and LayerNorm)")->group(g);
    sub.add_option("--experts", dims.experts, "routed experts per MoE layer (0 = dense)")->group(g);
    sub.add_option("--top-k", dims.top_k, "experts per token")->group(g);
    sub.add_option("--expert-d-ff", dims.expert_d_ff, "width of one expert (default: d-ff)")->group(g);
    sub.add_option("--window", dims.window, "sliding-window attention span (0 = full)")->group(g);
    sub.add_option("--format", format, "table (default), json, csv or md");
    sub.add_option("--sweep", sweep, "VAR=v1,v2,...: one table over seq-len, batch or model (e.g. seq-len=1024,4096)");
    sub.add_option("--svg", svg, "with --sweep: write an SVG chart of the component shares to this file");
  }

  Result<accounting::ModelSource> Source(bool any_dim_flag) const {
    accounting::ModelSource s;
    s.model = model;
    s.has_dims = any_dim_flag;
    s.dims = dims;
    if (ffn == "swiglu") {
      s.dims.ffn = accounting::FfnKind::kSwiGlu;
    } else if (ffn == "gelu") {
      s.dims.ffn = accounting::FfnKind::kGelu;
    } else {
      return Status::InvalidArgument("--ffn must be swiglu or gelu (got '" + ffn + "')");
    }
    if (norm == "rmsnorm") {
      s.dims.norm = accounting::NormKind::kRmsNorm;
    } else if (norm == "layernorm") {
      s.dims.norm = accounting::NormKind::kLayerNorm;
    } else {
      return Status::InvalidArgument("--norm must be rmsnorm or layernorm (got '" + norm + "')");
    }
    return s;
  }
  // The files MODEL (and a `--sweep model=...`) read: a config file, or the config.json of a directory (presets are
  // not files here). --svg replaces its destination, so it must not be one of them.
  std::vector<std::string> InputFiles(const accounting::Sweep& sw) const {
    std::vector<std::string> models = {model};
    if (sw.variable == "model") models.insert(models.end(), sw.values.begin(), sw.values.end());
    std::vector<std::string> files;
    std::error_code ec;
    for (const std::string& m : models) {
      if (m.empty()) continue;
      files.push_back(std::filesystem::is_directory(m, ec) ? (std::filesystem::path(m) / "config.json").string() : m);
    }
    return files;
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

}  // namespace lmkit::cli
