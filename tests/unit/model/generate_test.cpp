// `lmkit generate` on stories260K: the float64 golden greedy decode, sampling that no thread count changes, and the
// request's errors.
#include "lmkit/model/generate.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::model;
using lmkit::test::TestData;

namespace {

const std::string kGenerateModel = TestData("model/stories260K");

Json GenerateGolden() {
  auto text = ReadFileToString(kGenerateModel + "/golden_greedy.json");
  REQUIRE(text.ok());
  auto j = ParseJson(*text, "golden");
  REQUIRE(j.ok());
  return *j;
}

}  // namespace

TEST_CASE("generate: greedy decode from BOS matches the float64 golden, logits within 1e-4", "[model][generate]") {
  const Json g = GenerateGolden();
  const auto want = g["tokens"].get<std::vector<uint32_t>>();
  const auto want_logits = g["final_logits"].get<std::vector<double>>();
  GenerateRequest o;
  o.model = kGenerateModel;
  o.prompt = {1};
  o.max_tokens = static_cast<uint32_t>(want.size() - 1);
  for (unsigned threads : {1u, 3u}) {
    o.threads = threads;
    auto r = Generate(o, nullptr);
    REQUIRE(r.ok());
    REQUIRE(r->sequences.size() == 1);
    CHECK(r->sequences[0] == want);
    REQUIRE(r->final_logits.size() == want_logits.size());
    double worst = 0;
    for (size_t i = 0; i < want_logits.size(); ++i)
      worst = std::max(worst, std::fabs(r->final_logits[i] - want_logits[i]));
    CHECK(worst < 1e-4);
  }
}

TEST_CASE("generate: sampling is seeded, per sample, and the same for any thread count", "[model][generate]") {
  GenerateRequest o;
  o.model = kGenerateModel;
  o.prompt = {1, 403};
  o.max_tokens = 12;
  o.samples = 3;
  o.temperature = 1.0;
  o.seed = 7;
  o.threads = 1;
  auto a = Generate(o, nullptr);
  REQUIRE(a.ok());
  o.threads = 3;
  auto b = Generate(o, nullptr);
  REQUIRE(b.ok());
  REQUIRE(a->sequences.size() == 3);
  CHECK(a->sequences == b->sequences);
  CHECK(a->vocab == 512);
  CHECK(a->final_logits.size() == 512);
  for (const auto& s : a->sequences) {
    REQUIRE(s.size() == 14);  // prompt + max_tokens: no stop at EOS
    CHECK(s[0] == 1);
    CHECK(s[1] == 403);
    for (uint32_t id : s) CHECK(id < 512);
  }
  // Three draws of 12 tokens at temperature 1 from one generator are not all the same sequence.
  CHECK_FALSE((a->sequences[0] == a->sequences[1] && a->sequences[1] == a->sequences[2]));
  o.seed = 8;
  auto c = Generate(o, nullptr);
  REQUIRE(c.ok());
  CHECK(c->sequences != a->sequences);
}

TEST_CASE("generate: request errors", "[model][generate]") {
  GenerateRequest o;
  o.model = kGenerateModel;
  o.prompt = {1};
  o.max_tokens = 4;
  auto code = [&] { return Generate(o, nullptr).status().code(); };
  o.prompt = {};
  CHECK(code() == ErrorCode::kInvalidArgument);
  o.prompt = {1};
  o.max_tokens = 0;
  CHECK(code() == ErrorCode::kInvalidArgument);
  o.max_tokens = 4;
  o.temperature = -0.5;
  CHECK(code() == ErrorCode::kInvalidArgument);
  o.temperature = 0;
  o.max_tokens = 512;  // 1 + 512 positions > max_position_embeddings 512
  CHECK(code() == ErrorCode::kInvalidArgument);
  o.max_tokens = 4;
  o.prompt = {1, 512};  // vocab_size is 512
  CHECK(code() == ErrorCode::kInvalidInput);
  o.prompt = {1};
  CHECK(Generate(o, nullptr).ok());
}
