// Parameter counts against published / HF module-shape counts (reference/accounting.md, configs/README.md).
#include "lmkit/accounting/params.h"

#include <catch2/catch.hpp>

#include "lmkit/accounting/model.h"

using namespace lmkit::accounting;

namespace {
ParameterCounts Preset(const std::string& name) {
  auto m = LoadPreset(name);
  INFO(name << ": " << m.status().ToString());
  REQUIRE(m.ok());
  return CountParameters(*m);
}
}  // namespace

TEST_CASE("params: HF configs match the golden totals", "[accounting][params]") {
  struct Golden {
    const char* preset;
    int64_t total;
    int64_t active;
  };
  const Golden golden[] = {
      {"gpt2", 124439808, 124439808},
      {"gpt2-medium", 354823168, 354823168},
      {"gpt2-large", 774030080, 774030080},
      {"gpt2-xl", 1557611200, 1557611200},
      {"llama-2-7b", 6738415616, 6738415616},
      {"llama-3-8b", 8030261248, 8030261248},
      {"llama-3.1-8b", 8030261248, 8030261248},
      {"mistral-7b-v0.1", 7241732096, 7241732096},
      {"qwen2.5-7b", 7615616512, 7615616512},
      {"qwen2.5-0.5b", 494032768, 494032768},
      {"mixtral-8x7b-v0.1", 46702792704, 12879925248},
      {"qwen3-30b-a3b", 30532122624, 3353032704},
      // [computed] from the module shapes; the DeepSeekMoE paper reports 16.4B total, 2.8B activated.
      {"deepseek-moe-16b", 16375728128, 2828650496},
      {"deepseek-v3", 671026419200, 37552297472},
  };
  for (const auto& g : golden) {
    auto c = Preset(g.preset);
    INFO(g.preset);
    CHECK(c.total == g.total);
    CHECK(c.active == g.active);
    CHECK(c.total == c.embedding + c.lm_head + c.non_embedding);
    CHECK(c.total == c.embedding + c.lm_head + c.attention + c.ffn + c.router + c.norms);
  }
}

TEST_CASE("params: CS336 shapes and nanoGPT", "[accounting][params]") {
  CHECK(Preset("cs336-gpt2-small").total == 190460160);
  CHECK(Preset("cs336-gpt2-medium").total == 505629696);
  CHECK(Preset("cs336-gpt2-large").total == 1072469760);
  CHECK(Preset("cs336-gpt2-xl").total == 2127057600);
  auto n = Preset("nanogpt-gpt2-124m");
  CHECK(n.total == 124337664);
  CHECK(n.lm_head == 0);  // tied
  CHECK(n.embedding == 50257 * 768 + 1024 * 768);
}

TEST_CASE("params: tied vs untied and embedding split", "[accounting][params]") {
  auto q = Preset("qwen2.5-0.5b");
  CHECK(q.lm_head == 0);
  CHECK(q.embedding == 151936LL * 896);
  auto l = Preset("llama-2-7b");
  CHECK(l.lm_head == 32000LL * 4096);
  CHECK(l.non_embedding == 6738415616LL - 2 * 32000LL * 4096);
}
