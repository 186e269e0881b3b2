// Internal to `lmkit quantize` (quantize.cpp and its writers): which tensors are quantized, and the shards of
// the input. Not a public interface.
//
// Contract: Selected(t, m) is the selection rule of quantize.h (a 2-D F32/F16/BF16 "*.weight" that an include names,
// or that is not an embedding, norm or lm_head when there is no include; then no exclude match). MakePlan opens
// INPUT with io::OpenCheckpoint (a .safetensors file, or a model directory with model.safetensors or an index and its
// shards, in sorted order, under the checkpoint's strict index rules) and checks OUTPUT against it: with
// `single_output_file` OUTPUT is one file whatever INPUT is (GGUF), otherwise a directory for a directory INPUT and a
// file for a file INPUT, each shard's out_path set accordingly.
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/quant/quantize.h"

namespace lmkit::quant::detail {

struct Matchers {
  std::vector<std::regex> include, exclude;
};

Result<Matchers> CompileMatchers(const QuantizeRequest& o);
bool EndsWith(const std::string& s, const std::string& suffix);
bool Selected(const io::TensorInfo& t, const Matchers& m);
std::string ModuleName(const std::string& weight_name);  // "a.b.weight" -> "a.b"

struct Shard {
  std::string in_path;
  std::string out_path;
  std::string file_name;  // for the index
  io::SafetensorsFile file;
};

struct Plan {
  bool directory = false;
  std::vector<Shard> shards;
  std::string index_name;   // "" when not sharded
  std::string config_path;  // a directory's config.json, "" when it has none (io/checkpoint.h)
  std::string config_text;
};

Result<Plan> MakePlan(const QuantizeRequest& o, bool single_output_file);

}  // namespace lmkit::quant::detail
