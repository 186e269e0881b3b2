// Internal to `lmkit quantize` (quantize.cpp and its writers): which tensors are quantized, and the shards of
// the input. Not a public interface.
//
// Contract: Selected(t, m) is the selection rule of quantize.h (a 2-D F32/F16/BF16 "*.weight" that an include names,
// or that is not an embedding, norm, lm_head or MoE router (`gate`, `shared_expert_gate`) when there is no include;
// then no exclude match). MakePlan opens
// INPUT with io::OpenCheckpoint (a .safetensors file, or a model directory with model.safetensors or an index and its
// shards, in sorted order, under the checkpoint's strict index rules) and checks OUTPUT against it: with
// `single_output_file` OUTPUT is one file whatever INPUT is (GGUF), otherwise a directory for a directory INPUT and a
// file for a file INPUT, each shard's out_path set accordingly.
#pragma once

#include <map>
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
// Whether `weight_name` is a routed expert's projection in the per-expert layout ("...experts.3.w1.weight",
// "...experts.0.down_proj.weight"; not a shared expert's).
bool IsRoutedExpert(const std::string& weight_name);

// The routed experts' 2-D projections inside transformers 5's fused 3-D expert tensor `t` (`experts.gate_up_proj`
// [E, 2I, H]: gate rows [0, I) then up rows [I, 2I) of each expert; `experts.down_proj` [E, H, I]), as tensors of the
// same file (begin/end inside t's data), in data order (expert by expert, gate before up), named as the per-expert
// layout names them: Mixtral "...experts.<e>.w1/w3/w2.weight", the others "...experts.<e>.gate_proj/up_proj/
// down_proj.weight" (the names transformers' conversion mapping merges back into the fused tensors when it loads).
// None when `t` is not a 3-D F32/F16/BF16 "*.experts.gate_up_proj" / "*.experts.down_proj" tensor.
std::vector<io::TensorInfo> FusedExpertSlices(const io::TensorInfo& t, const std::string& model_type);

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
  std::string model_type;  // config.json's, "" without one (names the fused experts' slices)
  // Every fused expert tensor's slices (FusedExpertSlices) by name: (shard index, the slice).
  std::map<std::string, std::pair<size_t, io::TensorInfo>> expert_slices;
};

Result<Plan> MakePlan(const QuantizeRequest& o, bool single_output_file);

}  // namespace lmkit::quant::detail
