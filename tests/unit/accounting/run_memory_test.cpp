// `lmkit memory` as one core call: bounds on the request's numbers, choices the mode ignores, the GPU's capacity,
// sweeps.
#include "lmkit/accounting/run_memory.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "test_models.h"

using namespace lmkit::accounting;
using lmkit::ErrorCode;

TEST_CASE("run memory: overhead and capacity must be numbers from 0 to 1e9", "[accounting][run_memory]") {
  MemoryRequest req;
  req.source.model = "gpt2";
  for (double bad : {-1.0, 1.1e9, std::nan(""), std::numeric_limits<double>::infinity()}) {
    INFO(bad);
    req.overhead_gib = bad;
    auto r = RunMemory(req);
    CHECK(r.status().code() == ErrorCode::kInvalidArgument);
    CHECK(r.status().message().find(lmkit::Field("overhead_gib")) != std::string::npos);
    req.overhead_gib = 1;
    req.capacity_gb = bad;
    CHECK(RunMemory(req).status().message().find(lmkit::Field("capacity_gb")) != std::string::npos);
    req.capacity_gb = 0;
  }
  req.overhead_gib = 2;
  auto r = RunMemory(req);
  REQUIRE(r.ok());
  CHECK(r->report.options.overhead_bytes == 2ULL << 30);  // GiB, not GB
}

TEST_CASE("run memory: choices of the other mode are listed as ignored", "[accounting][run_memory]") {
  MemoryRequest req;
  req.source.model = "gpt2";
  req.mode = Mode::kInference;
  req.optimizer = Optimizer::kSgd;
  req.zero = 2;
  req.kv_dtype = Dtype::kFp8;
  auto inf = RunMemory(req);
  REQUIRE(inf.ok());
  CHECK(inf->ignored == std::vector<std::string>{"optimizer", "zero"});
  req.mode = Mode::kTraining;
  req.kv_dtype.reset();
  req.quant_scope = QuantScope::kAll;
  auto train = RunMemory(req);
  REQUIRE(train.ok());
  CHECK(train->ignored == std::vector<std::string>{"quant_scope"});
  CHECK(train->report.options.optimizer == Optimizer::kSgd);
  CHECK(train->report.options.zero == 2);
}

TEST_CASE("run memory: the GPU gives the capacity unless one is given", "[accounting][run_memory]") {
  MemoryRequest req;
  req.source.model = "gpt2";
  req.gpu = "h100";
  auto r = RunMemory(req);
  REQUIRE(r.ok());
  REQUIRE(r->gpu);
  CHECK(r->report.options.capacity_bytes == static_cast<double>(r->gpu->memory_bytes));
  CHECK(r->report.capacity_known);
  req.capacity_gb = 24;
  auto c = RunMemory(req);
  REQUIRE(c.ok());
  CHECK(c->report.options.capacity_bytes == 24e9);
  req.gpu.clear();
  req.capacity_gb = 0;
  auto none = RunMemory(req);
  REQUIRE(none.ok());
  CHECK_FALSE(none->gpu);
  CHECK_FALSE(none->report.capacity_known);
}

TEST_CASE("run memory: a batch sweep adds per_sequence bytes per sequence", "[accounting][run_memory]") {
  MemoryRequest req;
  req.source.model = "gpt2";
  req.sweep = Sweep{"batch", {"1", "2", "5"}};
  auto r = RunMemory(req);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE(r->sweep.size() == 3);
  const auto& one = r->sweep[0].report;
  CHECK(r->sweep[1].report.total == one.total + one.per_sequence);
  CHECK(r->sweep[2].report.total == one.total + 4 * one.per_sequence);
  req.sweep = Sweep{};
  req.svg_path = "m.svg";
  CHECK(RunMemory(req).status().ToString() == "svg needs sweep");
}

TEST_CASE("run memory: a request with a layout is answered by RunTraining, from the request's own fields",
          "[accounting][run_memory]") {
  MemoryRequest req;
  req.source.model = "llama-3-8b";
  req.batch = 2;
  req.gpus = 8;
  req.optimizer = Optimizer::kSgd;
  req.layout = TrainingRequest{};
  req.layout->layout.tp = 2;
  req.layout->layout.micro_batch = 0;  // the request's batch
  auto r = RunMemory(req);
  REQUIRE(r.ok());
  REQUIRE(r->layout.has_value());
  REQUIRE(r->layout->memory.has_value());
  CHECK(r->layout->request.layout.gpus == 8);
  CHECK(r->layout->request.layout.micro_batch == 2);
  CHECK(r->layout->request.optimizer == Optimizer::kSgd);
  CHECK(r->layout->memory->layout.layout.dp == 4);  // 8 GPUs / tp 2
  CHECK(r->report.total == 0);                      // the plain estimate was not run

  // Without gpus the layout's own degree decides (tp x pp x cp x dp).
  req.gpus.reset();
  auto one = RunMemory(req);
  REQUIRE(one.ok());
  CHECK(one->layout->memory->layout.world == 2);

  MemoryRequest bad = req;
  bad.mode = Mode::kInference;
  CHECK(RunMemory(bad).status().message().find("drop " + lmkit::Field("mode") + " inference") != std::string::npos);
  bad = req;
  bad.activations = ActivationModel::kCs336;
  CHECK(RunMemory(bad).status().message() == lmkit::Field("activations") + " does not combine with a training layout");
  bad = req;
  bad.layout->search = true;
  bad.svg_path = "chart.svg";
  CHECK(RunMemory(bad).status().message() == lmkit::Field("svg") + " does not combine with " + lmkit::Field("search"));
}
