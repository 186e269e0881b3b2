// `lmkit plan` as text: the budget and host lines, the tables' rows, the groups and the verdicts, in table and CSV.
#include <catch2/catch.hpp>
#include <sstream>

#include "lmkit/present/accounting.h"
#include "unit/accounting/test_models.h"

using namespace lmkit;
using namespace lmkit::accounting;

namespace {

PlanResult PlanTextFixture(const std::string& text) { return test::PlanResultOf(text, "", 0, /*what_if=*/true); }

std::string PlanLineStarting(const std::string& text, const std::string& start) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    line.erase(0, line.find_first_not_of(' '));  // table rows are indented
    if (line.rfind(start, 0) == 0) return line;
  }
  return "";
}

}  // namespace

TEST_CASE("accounting plan text: budget, host, rows and verdicts", "[present][accounting][plan]") {
  const PlanResult r = PlanTextFixture(R"({"gpu": "h100", "models": [
      {"name": "a", "model": "llama-2-7b", "seq_len": 4096},
      {"name": "b", "model": "llama-2-7b", "seq_len": 4096},
      {"name": "big", "model": "llama-2-7b", "seq_len": 4096, "batch": 64}]})");
  const std::string text = present::RenderPlan(r, present::Format::kTable);
  CHECK(PlanLineStarting(text, "plan: ") == "plan: t.json: 3 models on 1 x H100-SXM5-80GB (80.00 GB, 3.35 TB/s)");
  CHECK(PlanLineStarting(text, "per GPU: ") ==
        "per GPU: 80.00 GB - reserved 1.07 GB (CUDA context, workspaces) - fragmentation margin 5.00% (4.00 GB) = "
        "74.93 GB usable");
  CHECK(PlanLineStarting(text, "host: ") == "host: disk 2.00 GB/s (default); host->device 25.00 GB/s pinned (default)");
  const std::string a = PlanLineStarting(text, "a ");
  CHECK(a.find("13.48 GB") != std::string::npos);  // weights
  CHECK(a.find("15.87 GB") != std::string::npos);  // total
  CHECK(a.find("GPU 0") != std::string::npos);
  CHECK(PlanLineStarting(text, "big ").find("does not fit") != std::string::npos);
  CHECK(PlanLineStarting(text, "GPU 0").find("a, b") != std::string::npos);
  CHECK(PlanLineStarting(text, "same architecture and dtype (")
            .find("a, b, big; weights counted per instance (3 x "
                  "13.48 GB)") != std::string::npos);
  CHECK(PlanLineStarting(text, "does not fit: big: impossible batch") != "");
  CHECK(PlanLineStarting(text, "what-if: big: batch 64 -> ") != "");
  CHECK(text.find("every model fits") == std::string::npos);
}

TEST_CASE("accounting plan text: CSV comments its free text, a plan that fits says so", "[present][accounting][plan]") {
  const PlanResult r = PlanTextFixture(R"({"gpu": "l4", "reserved_gib": 0.5,
      "host": {"disk_gb_s": 1, "pcie_pageable_gb_s": 8, "pinned": false},
      "models": [{"name": "small", "model": "qwen2.5-0.5b", "seq_len": 1024}]})");
  const std::string csv = present::RenderPlan(r, present::Format::kCsv);
  CHECK(PlanLineStarting(csv, "# host: ") == "# host: disk 1.00 GB/s (plan); host->device 8.00 GB/s pageable (plan)");
  CHECK(PlanLineStarting(csv, "# every model fits") == "# every model fits");
  CHECK(PlanLineStarting(csv, "model,preset/config,dtype,batch,context,") != "");
  CHECK(PlanLineStarting(csv, "small,qwen2.5-0.5b,bf16,1,\"1,024\",") != "");
  CHECK(csv.find("same architecture") == std::string::npos);  // a group of one is not worth a line
}
