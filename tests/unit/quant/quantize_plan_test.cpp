// Which tensors `lmkit quantize` selects, and how the input's shards map to outputs (and which outputs are refused).
#include "lmkit/quant/quantize_plan.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::quant;
using namespace lmkit::quant::detail;

namespace {

io::TensorInfo Weight(const std::string& name, std::vector<uint64_t> shape = {8, 8},
                      io::DType dtype = io::DType::kF32) {
  io::TensorInfo t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = dtype;
  return t;
}

Matchers PlanMatchers(std::vector<std::string> include, std::vector<std::string> exclude) {
  QuantizeRequest o;
  o.include = std::move(include);
  o.exclude = std::move(exclude);
  auto m = CompileMatchers(o);
  REQUIRE(m.ok());
  return *m;
}

const std::string kPlanModel = lmkit::test::TestData("model/stories260K");

}  // namespace

TEST_CASE("quantize plan: the default selection keeps embeddings, norms and the head", "[quant][quantize_plan]") {
  const Matchers none = PlanMatchers({}, {});
  CHECK(Selected(Weight("model.layers.0.self_attn.q_proj.weight"), none));
  CHECK(Selected(Weight("model.layers.3.mlp.down_proj.weight", {8, 8}, io::DType::kBF16), none));
  CHECK_FALSE(Selected(Weight("model.embed_tokens.weight"), none));
  CHECK_FALSE(Selected(Weight("lm_head.weight"), none));
  CHECK_FALSE(Selected(Weight("transformer.wte.weight"), none));
  CHECK_FALSE(Selected(Weight("output.weight"), none));  // GGUF-style head
  CHECK_FALSE(Selected(Weight("model.layers.0.input_layernorm.weight", {8, 8}), none));
  CHECK_FALSE(Selected(Weight("model.layers.0.self_attn.q_proj.bias"), none));    // not a weight
  CHECK_FALSE(Selected(Weight("model.layers.0.mlp.up_proj.weight", {8}), none));  // 1-D
  CHECK_FALSE(Selected(Weight("model.layers.0.mlp.up_proj.weight", {8, 8}, io::DType::kI32), none));
}

TEST_CASE("quantize plan: MoE routers stay in 16 bits by default, experts are selected", "[quant][quantize_plan]") {
  const Matchers none = PlanMatchers({}, {});
  CHECK_FALSE(Selected(Weight("model.layers.1.mlp.gate.weight", {4, 32}), none));
  CHECK_FALSE(Selected(Weight("model.layers.1.block_sparse_moe.gate.weight", {4, 32}), none));
  CHECK_FALSE(Selected(Weight("model.layers.1.mlp.shared_expert_gate.weight", {1, 32}), none));
  CHECK(Selected(Weight("model.layers.1.mlp.gate_proj.weight"), none));
  CHECK(Selected(Weight("model.layers.1.mlp.experts.3.gate_proj.weight"), none));
  CHECK(Selected(Weight("model.layers.1.mlp.gate.weight", {4, 32}), PlanMatchers({"mlp\\.gate\\."}, {})));
  CHECK(IsRoutedExpert("model.layers.1.block_sparse_moe.experts.3.w2.weight"));
  CHECK(IsRoutedExpert("model.layers.1.mlp.experts.10.up_proj.weight"));
  CHECK_FALSE(IsRoutedExpert("model.layers.1.mlp.shared_experts.up_proj.weight"));
  CHECK_FALSE(IsRoutedExpert("model.layers.1.mlp.shared_expert.down_proj.weight"));
  CHECK_FALSE(IsRoutedExpert("model.layers.1.mlp.experts.gate_up_proj"));
}

TEST_CASE("quantize plan: fused 3-D experts split into per-expert matrices at their byte offsets",
          "[quant][quantize_plan]") {
  // E = 3 experts, I = 2, H = 5, BF16: gate_up [3, 4, 5] holds gate rows 0-1 and up rows 2-3 of each expert.
  io::TensorInfo gu = Weight("model.layers.1.mlp.experts.gate_up_proj", {3, 4, 5}, io::DType::kBF16);
  gu.begin = 1000;
  gu.end = 1000 + 3 * 4 * 5 * 2;
  const std::vector<io::TensorInfo> s = FusedExpertSlices(gu, "qwen3_moe");
  REQUIRE(s.size() == 6);
  CHECK(s[0].name == "model.layers.1.mlp.experts.0.gate_proj.weight");
  CHECK(s[1].name == "model.layers.1.mlp.experts.0.up_proj.weight");
  CHECK(s[5].name == "model.layers.1.mlp.experts.2.up_proj.weight");
  for (size_t i = 0; i < s.size(); ++i) {
    CHECK(s[i].shape == std::vector<uint64_t>{2, 5});
    CHECK(s[i].dtype == io::DType::kBF16);
    CHECK(s[i].begin == 1000 + i * 20);  // 2 rows x 5 columns x 2 bytes
    CHECK(s[i].num_bytes() == 20);
  }
  io::TensorInfo dn = Weight("model.layers.0.mlp.experts.down_proj", {2, 5, 2});
  dn.end = 2 * 5 * 2 * 4;
  const std::vector<io::TensorInfo> d = FusedExpertSlices(dn, "mixtral");  // Mixtral's names: w1 / w3 / w2
  REQUIRE(d.size() == 2);
  CHECK(d[1].name == "model.layers.0.mlp.experts.1.w2.weight");
  CHECK(d[1].begin == 40);
  CHECK(FusedExpertSlices(gu, "mixtral")[1].name == "model.layers.1.mlp.experts.0.w3.weight");
  CHECK(FusedExpertSlices(Weight("model.layers.0.mlp.experts.down_proj", {5, 2}), "").empty());        // not 3-D
  CHECK(FusedExpertSlices(Weight("model.layers.0.mlp.experts.gate_up_proj", {2, 3, 2}), "").empty());  // odd 2I
  CHECK(FusedExpertSlices(Weight("model.layers.0.mlp.down_proj", {2, 4, 2}), "").empty());
}

TEST_CASE("quantize plan: include replaces the default, exclude always wins", "[quant][quantize_plan]") {
  const Matchers head = PlanMatchers({"lm_head"}, {});
  CHECK(Selected(Weight("lm_head.weight"), head));
  CHECK_FALSE(Selected(Weight("model.layers.0.self_attn.q_proj.weight"), head));  // only what include names
  const Matchers no_attn = PlanMatchers({}, {"self_attn"});
  CHECK_FALSE(Selected(Weight("model.layers.0.self_attn.q_proj.weight"), no_attn));
  CHECK(Selected(Weight("model.layers.0.mlp.gate_proj.weight"), no_attn));
  const Matchers both = PlanMatchers({"proj"}, {"layers\\.1\\."});
  CHECK(Selected(Weight("model.layers.0.mlp.gate_proj.weight"), both));
  CHECK_FALSE(Selected(Weight("model.layers.1.mlp.gate_proj.weight"), both));
  QuantizeRequest bad;
  bad.exclude = {"(unclosed"};
  auto m = CompileMatchers(bad);
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().message().rfind("invalid pattern '(unclosed': ", 0) == 0);
  CHECK(ModuleName("model.layers.0.mlp.up_proj.weight") == "model.layers.0.mlp.up_proj");
  CHECK(EndsWith("a.weight", ".weight"));
  CHECK_FALSE(EndsWith("weight", ".weight"));
}

TEST_CASE("quantize plan: a directory maps to a directory, a file to a file, GGUF to one file",
          "[quant][quantize_plan]") {
  lmkit::test::TempDir dir;
  QuantizeRequest o;
  o.input = kPlanModel;
  o.output = dir.file("out");
  auto p = MakePlan(o, false);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  CHECK(p->directory);
  REQUIRE(p->shards.size() == 1);
  CHECK(p->shards[0].out_path == dir.file("out") + "/model.safetensors");
  CHECK(p->index_name.empty());
  CHECK(p->config_text.find("\"model_type\": \"llama\"") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("out")));  // created only once every input is validated

  o.output = dir.file("one.gguf");
  auto g = MakePlan(o, true);
  REQUIRE(g.ok());
  CHECK(g->shards[0].out_path == dir.file("one.gguf"));

  lmkit::test::WriteAll(dir.file("a-file"), "x");
  o.output = dir.file("a-file");
  CHECK(MakePlan(o, false).status().code() == ErrorCode::kInvalidInput);  // a directory input needs a directory
  o.output = dir.path();
  CHECK(MakePlan(o, true).status().code() == ErrorCode::kInvalidArgument);  // GGUF is one file

  o.input = kPlanModel + "/model.safetensors";
  o.output = dir.path();
  CHECK(MakePlan(o, false).status().code() == ErrorCode::kInvalidArgument);  // a file input needs a file
  o.output = o.input;
  auto same = MakePlan(o, false);
  REQUIRE_FALSE(same.ok());
  CHECK(same.status().message().find("would overwrite") != std::string::npos);
}
