// The request pieces `flops` and `memory` share: the model source and a sweep over one variable.
#include "lmkit/accounting/request.h"

#include <catch2/catch.hpp>

#include "test_models.h"

using namespace lmkit::accounting;
using lmkit::ErrorCode;

TEST_CASE("request: ParseSweep reads VAR=v1,v2 and checks the values", "[accounting][request]") {
  auto none = ParseSweep("");
  REQUIRE(none.ok());
  CHECK(none->variable.empty());
  CHECK(none->values.empty());

  auto s = ParseSweep("seq_len=128,4096");  // the underscore spelling is the same variable
  REQUIRE(s.ok());
  CHECK(s->variable == "seq-len");
  CHECK(s->values == std::vector<std::string>{"128", "4096"});

  auto m = ParseSweep("model=gpt2-xl,not-a-model");  // model names are looked up when applied, not here
  REQUIRE(m.ok());
  CHECK(m->values.size() == 2);

  for (const char* bad : {"batch", "width=1,2", "batch=", "batch=1,,2", "batch=1,", "batch=0", "seq-len=-4", "batch=8x",
                          "batch=99999999999999999999"}) {
    INFO(bad);
    auto r = ParseSweep(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == ErrorCode::kInvalidArgument);
    CHECK(r.status().message().find(lmkit::Field("sweep")) != std::string::npos);
  }
}

TEST_CASE("request: a model source is a name or dimensions, never both or neither", "[accounting][request]") {
  ModelSource both;
  both.model = "gpt2-xl";
  both.has_dims = true;
  CHECK(ResolveModelSource(both).status().code() == ErrorCode::kInvalidArgument);
  CHECK(ResolveModelSource(ModelSource{}).status().code() == ErrorCode::kInvalidArgument);

  ModelSource dims;
  dims.has_dims = true;
  dims.dims.layers = 2;
  dims.dims.d_model = 64;
  dims.dims.heads = 4;
  dims.dims.vocab = 100;
  auto m = ResolveModelSource(dims);
  REQUIRE(m.ok());
  CHECK(m->layers == 2);
  CHECK(m->head_dim == 16);  // d_model / heads

  ModelSource preset;
  preset.model = "gpt2-xl";
  auto p = ResolveModelSource(preset);
  REQUIRE(p.ok());
  CHECK(p->layers == 48);  // GPT-2 XL: 48 layers, d 1600
  CHECK(p->d_model == 1600);
}

TEST_CASE("request: a model sweep replaces the model, values apply to copies", "[accounting][request]") {
  Sweep model_sweep{"model", {"gpt2-xl"}};
  ModelSource src;
  src.model = "gpt2-xl";
  CHECK(CheckSweepSource(model_sweep, src).code() == ErrorCode::kInvalidArgument);
  CHECK(CheckSweepSource(model_sweep, ModelSource{}).ok());
  CHECK(CheckSweepSource(Sweep{"batch", {"2"}}, src).ok());

  int64_t seq = 1024, batch = 1;
  ModelSpec m;
  REQUIRE(ApplySweepValue("batch", "16", &seq, &batch, &m).ok());
  CHECK(batch == 16);
  CHECK(seq == 1024);
  REQUIRE(ApplySweepValue("seq-len", "2048", &seq, &batch, &m).ok());
  CHECK(seq == 2048);
  CHECK_FALSE(ApplySweepValue("seq-len", "0", &seq, &batch, &m).ok());
  CHECK(seq == 2048);
  REQUIRE(ApplySweepValue("model", "gpt2-xl", &seq, &batch, &m).ok());
  CHECK(m.d_model == 1600);
  CHECK(ApplySweepValue("model", "no-such-model-anywhere", &seq, &batch, &m).code() == ErrorCode::kNotFound);
}
