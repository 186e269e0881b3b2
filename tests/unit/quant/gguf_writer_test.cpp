// The GGUF Q8_0 output of `lmkit quantize` on stories260K: one file whose header counts every tensor under llama.cpp's
// names, Q8_0 for the Linear weights whose rows are whole 32-blocks, and the others kept and listed.
#include <catch2/catch.hpp>
#include <cstring>

#include "lmkit/quant/quantize.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::quant;

TEST_CASE("gguf writer: a v3 file of every tensor under llama.cpp's names", "[quant][gguf_writer]") {
  lmkit::test::TempDir dir;
  QuantizeRequest o;
  o.input = lmkit::test::TestData("model/stories260K");
  o.output = dir.file("m.gguf");
  o.format = QuantFormat::kGgufQ8_0;
  o.granularity = *ParseGranularity("group:32");  // Q8_0 blocks (the CLI's default with this format)
  auto rep = Quantize(o, nullptr);
  INFO(rep.status().ToString());
  REQUIRE(rep.ok());
  const std::string bytes = lmkit::test::ReadAll(dir.file("m.gguf"));
  REQUIRE(bytes.size() > 24);
  CHECK(bytes.compare(0, 4, "GGUF") == 0);
  uint32_t version = 0;
  uint64_t tensors = 0;
  std::memcpy(&version, bytes.data() + 4, 4);
  std::memcpy(&tensors, bytes.data() + 8, 8);
  CHECK(version == 3);
  // The embedding, the final norm, and 9 tensors in each of 5 layers (the head is tied: none of its own).
  CHECK(tensors == 2 + 5 * 9);
  for (const char* name : {"token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight", "blk.4.ffn_down.weight",
                           "blk.3.attn_norm.weight", "general.architecture"})
    CHECK(bytes.find(name) != std::string::npos);
  CHECK(bytes.find("model.layers.") == std::string::npos);  // no Hugging Face names left
}

TEST_CASE("gguf writer: rows that are not whole Q8_0 blocks stay in full precision, named in the report",
          "[quant][gguf_writer]") {
  lmkit::test::TempDir dir;
  QuantizeRequest o;
  o.input = lmkit::test::TestData("model/stories260K");
  o.output = dir.file("m.gguf");
  o.format = QuantFormat::kGgufQ8_0;
  o.granularity = *ParseGranularity("group:32");
  auto rep = Quantize(o, nullptr);
  REQUIRE(rep.ok());
  // down_proj rows are 172 long (not a multiple of 32); q/k/v/o (64) and gate/up (64) are whole blocks.
  REQUIRE(rep->kept_unquantized.size() == 5);
  for (int l = 0; l < 5; ++l)
    CHECK(rep->kept_unquantized[static_cast<size_t>(l)] ==
          "model.layers." + std::to_string(l) + ".mlp.down_proj.weight");
  CHECK(rep->tensors.size() == 5 * 6);
  CHECK(rep->params_quantized == 5 * (2 * 64 * 64 + 2 * 32 * 64 + 2 * 172 * 64));
  for (const auto& t : rep->tensors) {
    INFO(t.name);
    CHECK(t.stats.SqnrDb() > 30);  // 8-bit codes per 32 weights: about 40 dB on these Gaussian-like weights
  }
}
