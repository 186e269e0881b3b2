#include "lmkit/quant/smooth_mapping.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace lmkit::quant {
namespace {

// Splits "P.layers.N.rest" into "P.layers.N" and "rest"; false when the name has no "layers.N." part.
bool SplitLayer(const std::string& name, std::string* layer, std::string* rest) {
  for (size_t pos = name.find("layers."); pos != std::string::npos; pos = name.find("layers.", pos + 1)) {
    if (pos > 0 && name[pos - 1] != '.') continue;
    size_t e = pos + 7;
    while (e < name.size() && std::isdigit(static_cast<unsigned char>(name[e]))) ++e;
    if (e == pos + 7 || e >= name.size() || name[e] != '.') continue;
    *layer = name.substr(0, e);
    *rest = name.substr(e + 1);
    return true;
  }
  return false;
}

// "P.layers.N" -> "P.layers.*".
std::string AnyLayer(const std::string& layer) { return layer.substr(0, layer.rfind('.') + 1) + "*"; }

enum class Reads { kOther, kAttentionInput, kMlpInput };

bool OneOf(const std::string& s, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return s == n; });
}

// What the Linear at `rest` (the name after "layers.N.") reads.
Reads WhatItReads(const std::string& rest) {
  if (OneOf(rest, {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.qkv_proj",
                   "self_attn.q_a_proj", "self_attn.kv_a_proj_with_mqa"}))
    return Reads::kAttentionInput;
  std::string m;
  if (rest.starts_with("mlp.")) {
    m = rest.substr(4);
  } else if (rest.starts_with("block_sparse_moe.")) {  // Mixtral's Hub names
    m = rest.substr(17);
  } else {
    return Reads::kOther;
  }
  // Dense gate/up (Phi-3 fused), a MoE router and qwen2_moe's shared-expert gate.
  if (OneOf(m, {"gate_proj", "up_proj", "gate_up_proj", "gate", "shared_expert_gate"})) return Reads::kMlpInput;
  for (const char* shared : {"shared_expert.", "shared_experts."})
    if (m.starts_with(shared) && OneOf(m.substr(std::string(shared).size()), {"gate_proj", "up_proj"}))
      return Reads::kMlpInput;
  if (m.starts_with("experts.")) {
    size_t e = 8;
    while (e < m.size() && std::isdigit(static_cast<unsigned char>(m[e]))) ++e;
    if (e > 8 && e < m.size() && m[e] == '.' && OneOf(m.substr(e + 1), {"gate_proj", "up_proj", "w1", "w3"}))
      return Reads::kMlpInput;
  }
  return Reads::kOther;
}

}  // namespace

SmoothMapping MapSmoothing(const model::LlamaConfig& c, std::span<const std::string> linears) {
  SmoothMapping out;
  std::map<std::string, size_t> group_of;  // norm -> index into out.groups
  auto note = [&](std::string line) {
    if (std::find(out.unsmoothed.begin(), out.unsmoothed.end(), line) == out.unsmoothed.end())
      out.unsmoothed.push_back(std::move(line));
  };
  for (const std::string& name : linears) {
    std::string layer, rest;
    if (!SplitLayer(name, &layer, &rest)) continue;
    if (rest == "self_attn.q_b_proj")
      note(AnyLayer(layer) + ".self_attn.q_a_layernorm: not smoothed (MLA's inner norm, as llm-compressor)");
    if (rest == "self_attn.kv_b_proj")
      note(AnyLayer(layer) + ".self_attn.kv_a_layernorm: not smoothed (MLA's inner norm, as llm-compressor)");
    const Reads reads = WhatItReads(rest);
    if (reads == Reads::kOther) continue;
    if (c.norms == model::NormPlacement::kPost) {
      note(AnyLayer(layer) + ": the attention and MLP inputs are no norm's output (post-norms), not smoothed");
      continue;
    }
    std::string norm = layer + ".input_layernorm";
    if (reads == Reads::kMlpInput)
      norm = layer +
             (c.norms == model::NormPlacement::kSandwich ? ".pre_feedforward_layernorm" : ".post_attention_layernorm");
    auto [it, added] = group_of.emplace(norm, out.groups.size());
    if (added) out.groups.push_back({norm, c.unit_offset_norms, {}});
    out.groups[it->second].linears.push_back(name);
  }
  return out;
}

}  // namespace lmkit::quant
