// The GPU table (data/gpus.json), one-GPU spec files, and name lookups that never take a near match silently.
#include "lmkit/accounting/gpu.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <map>

#include "support/run_lmkit.h"

using namespace lmkit::accounting;

TEST_CASE("gpu: table lookups and dtype peaks", "[accounting][gpu]") {
  auto table = LoadGpuTable();
  REQUIRE(table.ok());
  CHECK(table->size() >= 7);
  for (const char* name : {"a100-40", "a100-80", "h100-sxm", "h100-pcie", "h200", "l4", "rtx-4090"}) {
    auto g = FindGpu(name);
    INFO(name);
    REQUIRE(g.ok());
    CHECK(g->PeakFlops(Dtype::kBf16) > 0);
    CHECK(g->bandwidth_bytes_per_s > 0);
    CHECK(g->memory_bytes > 0);
    CHECK_FALSE(g->source.empty());
  }
  CHECK(FindGpu("a100")->PeakFlops(Dtype::kFp8) == 0);
  CHECK(FindGpu("A100 SXM4 80GB")->PeakFlops(Dtype::kFp32) == Approx(19.5e12));
  auto bad = FindGpu("h1000");
  CHECK(bad.status().code() == lmkit::ErrorCode::kNotFound);
  CHECK(bad.status().message().find("H100-SXM5-80GB") != std::string::npos);
}

TEST_CASE("gpu: a table entry with zero bandwidth or no capacity is an error", "[accounting][gpu]") {
  // A zero bandwidth used to load and make the roofline's ridge and memory times infinite (null in --json); a
  // negative capacity silently dropped memory's fit verdict.
  lmkit::test::TempDir dir;
  const std::string path = dir.file("gpus.json");
  auto load = [&](const std::string& memory_gb, const std::string& bandwidth) {
    lmkit::test::WriteAll(path, R"({"gpus": [{"name": "X1", "memory_gb": )" + memory_gb + R"(, "bandwidth_tb_s": )" +
                                    bandwidth + R"(, "dense_tflops": {"bf16": 100}}]})");
    return LoadGpuTable(path);
  };
  REQUIRE(load("80", "3").ok());
  for (auto [mem, bw] : {std::pair{"80", "0"}, std::pair{"-80", "3"}, std::pair{"80", "1e300"}}) {
    auto t = load(mem, bw);
    INFO(mem << " " << bw);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == lmkit::ErrorCode::kInvalidInput);
    CHECK(t.status().subject() == path);
    CHECK(t.status().message() == "GPU 'X1': memory_gb and bandwidth_tb_s must be positive numbers");
  }
}

TEST_CASE("gpu: the added GPUs, with their datasheet figures and sources", "[accounting][gpu]") {
  struct Want {
    const char* name;
    const char* canonical;
    double gb, tb_s, bf16, fp8;
  };
  // Dense (sparsity halved) peaks in TFLOP/s: NVIDIA HGX B200 specifications (per GPU), H100 datasheet (NVL column),
  // H20 product specifications, L40S datasheet, AWS A10G (no fp8), AMD Instinct MI300X data sheet.
  const Want want[] = {{"b200", "B200", 180, 8.0, 2250, 4500},
                       {"H100 NVL", "H100-NVL-94GB", 94, 3.9, 835.5, 1670.5},
                       {"h20", "H20", 96, 4.0, 148, 296},
                       {"l40s", "L40S", 48, 0.864, 362.05, 733},
                       {"a10g", "A10G", 24, 0.6, 70, 0},
                       {"rtx-4090", "RTX-4090", 24, 1.008, 165.2, 330.3},
                       {"mi300x", "MI300X", 192, 5.3, 1307.4, 2614.9}};
  for (const auto& w : want) {
    INFO(w.name);
    auto g = FindGpu(w.name);
    REQUIRE(g.ok());
    CHECK(g->name == w.canonical);
    CHECK(g->memory_bytes == Approx(w.gb * 1e9));
    CHECK(g->bandwidth_bytes_per_s == Approx(w.tb_s * 1e12));
    CHECK(g->PeakFlops(Dtype::kBf16) == Approx(w.bf16 * 1e12));
    CHECK(g->PeakFlops(Dtype::kFp8) == Approx(w.fp8 * 1e12));
    CHECK(g->interconnect_bytes_per_s > 0);
    CHECK_FALSE(g->source.empty());
  }
}

TEST_CASE("gpu: every name and alias is one GPU's, and an unknown name is an error", "[accounting][gpu]") {
  auto table = LoadGpuTable();
  REQUIRE(table.ok());
  // Lookups compare names with case and punctuation removed: two entries sharing such a spelling would make one of
  // them unreachable (or a lookup ambiguous).
  std::map<std::string, std::string> owner;
  auto canon = [](const std::string& s) {
    std::string o;
    for (char c : s)
      if (std::isalnum(static_cast<unsigned char>(c))) o.push_back(static_cast<char>(std::tolower(c)));
    return o;
  };
  for (const auto& g : *table) {
    for (const auto& n : [&] {
           auto v = g.aliases;
           v.push_back(g.name);
           return v;
         }()) {
      auto [it, fresh] = owner.emplace(canon(n), g.name);
      INFO(n);
      CHECK((fresh || it->second == g.name));
      auto found = FindGpu(n);
      REQUIRE(found.ok());
      CHECK(found->name == g.name);
    }
  }
  // A near name is a suggestion in an error, never the GPU: "b100" is not the B200 nor the H100.
  for (const char* near : {"b100", "h300", "mi250", "a10"}) {
    auto r = FindGpu(near);
    INFO(near);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == lmkit::ErrorCode::kNotFound);
    CHECK(r.status().message().rfind("unknown GPU", 0) == 0);
    CHECK(r.status().message().find("(known: ") != std::string::npos);
  }
}

TEST_CASE("gpu: a spec file describes a GPU the table lacks", "[accounting][gpu]") {
  lmkit::test::TempDir dir;
  const std::string path = dir.file("gpu.json");
  lmkit::test::WriteAll(path, R"({"name": "Lab-X", "memory_gb": 64, "bandwidth_tb_s": 2.5, "interconnect_gb_s": 100,
                                  "dense_tflops": {"bf16": 500, "fp8": 1000}, "source": "our lab's measurement"})");
  auto g = LoadGpuSpecFile(path);
  REQUIRE(g.ok());
  CHECK(g->name == "Lab-X");
  CHECK(g->memory_bytes == 64e9);
  CHECK(g->interconnect_bytes_per_s == 100e9);
  CHECK(g->PeakFlops(Dtype::kFp8) == 1000e12);
  auto r = ResolveGpu("", path);
  REQUIRE(r.ok());
  REQUIRE(r->has_value());
  CHECK((*r)->name == "Lab-X");
  CHECK(ResolveGpu("h100", path).status().ToString() == "give either gpu or gpu_spec, not both");
  lmkit::test::WriteAll(path, R"({"name": "Lab-X", "memory_gb": 64, "bandwidth_tb_s": 2.5,
                                  "dense_tflops": {"bf16": "fast"}})");
  auto bad = LoadGpuSpecFile(path);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().ToString() == path + ": GPU 'Lab-X': dense_tflops.bf16 must be a non-negative number");
  lmkit::test::WriteAll(path, "[1, 2]");
  CHECK(LoadGpuSpecFile(path).status().message() == "a GPU spec is a JSON object (the schema of a gpus.json entry)");
}
