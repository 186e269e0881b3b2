// The --json documents of `flops` and `memory`: exact integers past 2^53, golden fields, and the shared pieces.
#include "lmkit/present/accounting_json.h"

#include <catch2/catch.hpp>

#include "lmkit/present/accounting.h"

using namespace lmkit::accounting;
using lmkit::Json;

TEST_CASE("accounting json: memory of Llama-2-7B inference, with and without a GPU", "[present][accounting]") {
  MemoryRequest req;
  req.source.model = "llama-2-7b";
  req.mode = Mode::kInference;
  req.seq_len = 4096;
  auto r = RunMemory(req);
  REQUIRE(r.ok());
  const Json j = lmkit::present::MemoryJson(*r);
  CHECK(j["memory"]["weights"].get<uint64_t>() == 13476831232ULL);  // reference/accounting.md
  CHECK(j["memory"]["kv_bytes_per_token"].get<uint64_t>() == 524288);
  CHECK(j["memory"]["total"].get<uint64_t>() == 16945648640ULL);
  CHECK(j["params"]["total"].get<uint64_t>() == 6738415616ULL);
  CHECK(j["options"]["mode"] == "inference");
  CHECK(j["options"]["kv_dtype"] == "bf16");
  CHECK(j["model"]["layers"] == 32);
  CHECK_FALSE(j["memory"].contains("capacity"));  // no GPU: no verdict
  CHECK_FALSE(j.contains("gpu"));
  req.gpu = "h100";
  auto g = RunMemory(req);
  REQUIRE(g.ok());
  const Json jg = lmkit::present::MemoryJson(*g);
  CHECK(jg["memory"]["capacity"].get<double>() == 80e9);
  CHECK(jg["memory"]["fits"] == true);
  CHECK(jg["gpu"]["name"] == "H100-SXM5-80GB");
}

TEST_CASE("accounting json: FLOP counts past 2^53 survive a dump and parse exactly", "[present][accounting]") {
  FlopsRequest req;
  req.source.model = "llama-2-7b";
  req.options.seq_len = 4096;
  req.options.batch = 4096;  // ~2.3e17 FLOPs forward: beyond a double's exact integers
  auto r = RunFlops(req);
  REQUIRE(r.ok());
  REQUIRE(r->report.forward > (uint64_t{1} << 53));
  REQUIRE(r->report.forward % 2 == 0);
  auto back = lmkit::ParseJson(lmkit::DumpJson(lmkit::present::FlopsJson(*r)), "flops.json");
  REQUIRE(back.ok());
  CHECK((*back)["totals"]["forward"].get<uint64_t>() == r->report.forward);
  CHECK((*back)["totals"]["backward"].get<uint64_t>() == 2 * r->report.forward);
  CHECK((*back)["tokens"].get<uint64_t>() == 4096ULL * 4096);
  CHECK((*back)["conventions"]["flop_per_mac"] == 2);
  uint64_t sum = 0;
  for (const auto& c : (*back)["components"].items()) sum += c.value().get<uint64_t>();
  CHECK(sum == r->report.forward);  // the components partition the forward pass
}

TEST_CASE("accounting json: a sweep document lists its points, the GPU its datasheet", "[present][accounting]") {
  FlopsRequest req;
  req.source.model = "gpt2";
  req.sweep = Sweep{"seq-len", {"256", "512"}};
  auto r = RunFlops(req);
  REQUIRE(r.ok());
  const Json j = lmkit::present::FlopsJson(*r);
  CHECK(j["sweep"]["variable"] == "seq-len");
  REQUIRE(j["sweep"]["points"].size() == 2);
  CHECK(j["sweep"]["points"][1]["value"] == "512");
  CHECK(j["sweep"]["points"][1]["tokens"] == 512);
  CHECK_FALSE(j.contains("matmuls"));
  auto gpu = FindGpu("h100");
  REQUIRE(gpu.ok());
  const Json g = lmkit::present::GpuJson(*gpu);
  CHECK(g["memory_bytes"].get<double>() == 80e9);
  CHECK(g["name"] == "H100-SXM5-80GB");
}
