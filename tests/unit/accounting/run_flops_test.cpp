// `lmkit flops` as one core call: which request fields need which others, sweeps, and what they report.
#include "lmkit/accounting/run_flops.h"

#include <catch2/catch.hpp>

#include "test_models.h"

using namespace lmkit::accounting;
using lmkit::ErrorCode;

TEST_CASE("run flops: options that need a GPU say so, and --mfu 0 is an error", "[accounting][run_flops]") {
  FlopsRequest req;
  req.source.model = "gpt2";
  req.kv_dtype = Dtype::kFp8;
  CHECK(RunFlops(req).status().ToString() == "kv_dtype needs gpu (it sets the roofline's KV cache bytes)");
  req.kv_dtype.reset();
  req.attention = Attention::kUnfused;
  CHECK(RunFlops(req).status().ToString() == "attention needs gpu (it shapes the roofline)");
  req.attention.reset();
  // #31: a given 0 is refused, not read as "no step time".
  req.gpu = "h100";
  req.mfu = 0.0;
  CHECK(RunFlops(req).status().ToString() == "mfu must be in (0, 1] (got 0)");
  req.mfu = 0.5;
  req.steps = 0;
  CHECK(RunFlops(req).status().ToString() == "steps must be positive (got 0)");
}

TEST_CASE("run flops: an svg needs a sweep, a model sweep excludes a model, steps need an MFU",
          "[accounting][run_flops]") {
  FlopsRequest req;
  req.source.model = "gpt2";
  req.svg_path = "chart.svg";
  CHECK(RunFlops(req).status().ToString() == "svg needs sweep");
  req.svg_path.clear();
  req.sweep = Sweep{"model", {"gpt2-xl"}};
  CHECK(RunFlops(req).status().code() == ErrorCode::kInvalidArgument);
  req.sweep = Sweep{};
  req.gpu = "h100";
  req.steps = 10;
  CHECK(RunFlops(req).status().ToString() == "steps needs gpu and mfu");
}

TEST_CASE("run flops: a batch sweep scales the forward FLOPs linearly", "[accounting][run_flops]") {
  FlopsRequest req;
  req.source.model = "gpt2";
  req.options.seq_len = 512;
  req.sweep = Sweep{"batch", {"1", "2", "8"}};
  auto r = RunFlops(req);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CHECK(r->sweep_variable == "batch");
  REQUIRE(r->sweep.size() == 3);
  CHECK(r->sweep[0].label == "1");
  CHECK(r->sweep[1].report.forward == 2 * r->sweep[0].report.forward);
  CHECK(r->sweep[2].report.forward == 8 * r->sweep[0].report.forward);
  CHECK_FALSE(r->sweep[0].step);  // no GPU, no step time
  CHECK_FALSE(r->prefill);        // nor a roofline
  // The components a sweep shows are those with FLOPs somewhere, in report order, without repeats.
  auto comps = SweepComponents(r->sweep);
  REQUIRE_FALSE(comps.empty());
  for (size_t i = 1; i < comps.size(); ++i) CHECK(static_cast<int>(comps[i - 1]) < static_cast<int>(comps[i]));
  for (auto c : comps) CHECK(r->sweep[0].report.component[static_cast<int>(c)] > 0);
  CHECK(SweepComponents({}).empty());
}

TEST_CASE("run flops: a model sweep reports the first model as the request's", "[accounting][run_flops]") {
  FlopsRequest req;
  req.sweep = Sweep{"model", {"gpt2-xl", "gpt2"}};
  auto r = RunFlops(req);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CHECK(r->model.d_model == 1600);  // gpt2-xl
  REQUIRE(r->sweep.size() == 2);
  CHECK(r->report.forward == r->sweep[0].report.forward);
  CHECK(r->sweep[1].report.forward < r->sweep[0].report.forward);
}

TEST_CASE("run flops: a request with a layout is answered by RunTraining's step, from the request's own fields",
          "[accounting][run_flops]") {
  FlopsRequest req;
  req.source.model = "llama-3-8b";
  req.options.seq_len = 4096;
  req.options.batch = 2;
  req.gpu = "h100";
  req.mfu = 0.4;
  req.layout = TrainingRequest{};
  req.layout->layout.tp = 2;
  req.layout->layout.gpus = 8;
  req.layout->layout.micro_batch = 0;  // the request's batch
  auto r = RunFlops(req);
  REQUIRE(r.ok());
  REQUIRE(r->layout.has_value());
  REQUIRE(r->layout->step.has_value());
  // The same as RunTraining on the request a front end used to build by hand.
  TrainingRequest t;
  t.source.model = "llama-3-8b";
  t.seq_len = 4096;
  t.layout.tp = 2;
  t.layout.gpus = 8;
  t.layout.micro_batch = 2;
  t.gpu = "h100";
  t.mfu = 0.4;
  auto direct = RunTraining(t);
  REQUIRE(direct.ok());
  CHECK(r->layout->request.layout.micro_batch == 2);
  CHECK(r->layout->step->step_s == direct->step->step_s);
  CHECK(r->layout->step->model_flops == direct->step->model_flops);
  CHECK(r->report.forward == 0);  // the plain count was not run

  // What the layout model does not use is refused by name, and its step time needs a GPU.
  FlopsRequest bad = req;
  bad.kv_dtype = Dtype::kFp8;
  CHECK(RunFlops(bad).status().message() == lmkit::Field("kv_dtype") + " does not combine with a training layout");
  bad = req;
  bad.options.macs = true;
  CHECK(RunFlops(bad).status().message() == lmkit::Field("macs") + " does not combine with a training layout");
  bad = req;
  bad.gpu.clear();
  CHECK(RunFlops(bad).status().code() == lmkit::ErrorCode::kInvalidArgument);
  CHECK(RunFlops(bad).status().message().find("needs " + lmkit::Field("gpu")) != std::string::npos);
}
