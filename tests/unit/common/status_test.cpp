#include "lmkit/common/status.h"

#include <catch2/catch.hpp>

#include "lmkit/common/json.h"
#include "lmkit/common/thread_pool.h"
#include "support/run_lmkit.h"

using namespace lmkit;

namespace {
Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidInput("x", "odd value " + std::to_string(x));
  return x / 2;
}
Result<int> Quarter(int x) {
  LMKIT_ASSIGN_OR_RETURN(int h, Half(x));
  LMKIT_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}
}  // namespace

TEST_CASE("status: one line, subject first", "[common][status]") {
  Status s = Status::InvalidInput("model.safetensors", "header length 99 is past\nthe end");
  CHECK(s.ToString() == "model.safetensors: header length 99 is past the end");
  CHECK(Status::InvalidArgument("bad flag").ToString() == "bad flag");
  CHECK(Status::InvalidInput("", "m").WithSubject("f").ToString() == "f: m");
  CHECK(Status::InvalidInput("f", "m").Annotate("tensor a").ToString() == "f: tensor a: m");
  CHECK(Status::Ok().ok());
}

TEST_CASE("result: propagation through ASSIGN_OR_RETURN", "[common][status]") {
  auto q = Quarter(8);
  REQUIRE(q.ok());
  CHECK(*q == 2);
  auto bad = Quarter(6);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "odd value 3");
}

TEST_CASE("json: malformed input names the subject and offset", "[common][json]") {
  auto r = ParseJson("{\"a\": [1, 2", "cfg.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().ToString().rfind("cfg.json: malformed JSON at byte", 0) == 0);
  auto ok = ParseJson("{\"b\": 1, \"a\": 2}", "x");
  REQUIRE(ok.ok());
  CHECK(DumpJson(*ok, -1) == "{\"b\":1,\"a\":2}");  // insertion order kept
}

TEST_CASE("thread pool: every index exactly once, any thread count", "[common][threads]") {
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    ThreadPool pool(threads);
    CHECK(pool.size() == threads);
    std::vector<int> hits(1000, 0);
    std::vector<unsigned> worker(hits.size());
    // Checked after each ParallelFor, on this thread: Catch's assertion macros are not thread-safe.
    for (int round = 0; round < 3; ++round) {
      pool.ParallelFor(hits.size(), [&](size_t i, unsigned w) {
        worker[i] = w;
        hits[i] += 1;
      });
      for (unsigned w : worker) REQUIRE(w < threads);
    }
    for (int h : hits) REQUIRE(h == 3);
  }
}

TEST_CASE("thread pool: an exception reaches the caller", "[common][threads]") {
  ThreadPool pool(2);
  CHECK_THROWS_AS(pool.ParallelFor(10,
                                   [](size_t i, unsigned) {
                                     if (i == 7) throw std::runtime_error("boom");
                                   }),
                  std::runtime_error);
  // The pool is still usable afterwards.
  std::atomic<int> n{0};
  pool.ParallelFor(5, [&](size_t, unsigned) { ++n; });
  CHECK(n == 5);
}

TEST_CASE("status: fields render as their bare names, or as each front end spells them", "[common][status]") {
  const Status s = Status::InvalidArgument(Field("seq_len") + " must be at least 2, not with " + Field("kv_dtype"));
  CHECK(s.code() == ErrorCode::kInvalidArgument);
  CHECK(s.ToString() == "seq_len must be at least 2, not with kv_dtype");
  CHECK(s.ToString([](std::string_view f) { return std::string(f).append("()"); }) ==
        "seq_len() must be at least 2, not with kv_dtype()");
  // An unclosed mark is left as it is rather than swallowing the rest of the message.
  std::string half = Field("a");
  half.pop_back();
  half += " rest";
  CHECK(RenderFields(half, [](std::string_view) { return std::string("X"); }) == half);
  CHECK(RenderFields("no fields", [](std::string_view) { return std::string("X"); }) == "no fields");
}
