// Streaming: chunked and parallel encodes equal the whole-input encode; pools; errors; special-token rules.
#include "lmkit/bpe/encode/encode_stream.h"

#include <catch2/catch.hpp>
#include <random>

#include "encode_test_helpers.h"
#include "lmkit/common/thread_start.h"

using namespace lmkit;
using namespace lmkit::bpe;
using namespace lmkit::bpe::test_helpers;

TEST_CASE("bpe encode: streamed encodes equal whole encodes for every chunk size", "[bpe][encode]") {
  for (std::string name : {"gpt2", "cl100k_base", "o200k_base"}) {
    const Tokenizer& tok = Builtin(name);
    std::string text = kAdversarial;
    auto whole = EncodeAll(tok, text);
    for (size_t chunk = 1; chunk <= text.size() + 1; ++chunk) {
      INFO(name << " chunk " << chunk);
      REQUIRE(EncodeStreamed(tok, text, chunk, 1, 7) == whole);
    }
    for (unsigned threads : {2u, 3u}) REQUIRE(EncodeStreamed(tok, text, 5, threads, 3) == whole);
  }
  // A larger text with many chunks, with several thread counts.
  const Tokenizer& gpt2 = Builtin("gpt2");
  std::string corpus = test::ReadAll(test::TestData("bpe-encode/corpus.en"));
  auto want = Expected("corpus.gpt2.json");
  for (unsigned threads : {1u, 2u, 4u}) CHECK(EncodeStreamed(gpt2, corpus, 4096, threads) == want);
  // Threads the system refuses (RLIMIT_NPROC, RLIMIT_AS): the stream runs on those it got, or on this thread alone.
  for (int allowed : {0, 1}) {
    lmkit::FailThreadStartsAfterForTesting(allowed);
    const auto ids = EncodeStreamed(gpt2, corpus, 4096, 4);
    lmkit::FailThreadStartsAfterForTesting(-1);
    CHECK(ids == want);
  }
}

TEST_CASE("bpe encode: an encoder pool reused across streams gives the same ids", "[bpe][encode]") {
  // MPI work pieces reuse warm encoders from piece to piece; the ids must not depend on what they encoded before.
  const Tokenizer& gpt2 = Builtin("gpt2");
  std::string corpus = test::ReadAll(test::TestData("bpe-encode/corpus.en"));
  auto want = Expected("corpus.gpt2.json");
  for (unsigned threads : {1u, 2u}) {
    EncoderPool pool(gpt2);
    for (int round = 0; round < 2; ++round) {
      StringSource src(corpus);
      VectorSink sink;
      StreamOptions opt;
      opt.chunk_bytes = 4096;
      opt.threads = threads;
      opt.encoders = &pool;
      REQUIRE(EncodeStream(gpt2, src, sink, opt, nullptr).ok());
      INFO("threads " << threads << " round " << round);
      CHECK(sink.ids() == want);
    }
  }
  EncoderPool other(Builtin("cl100k_base"));
  StringSource src("x");
  VectorSink sink;
  StreamOptions opt;
  opt.encoders = &other;
  CHECK(EncodeStream(gpt2, src, sink, opt, nullptr).status().code() == ErrorCode::kInternal);
}

TEST_CASE("bpe encode: input without safe cut points becomes one chunk", "[bpe][encode]") {
  const Tokenizer& tok = Builtin("gpt2");
  std::string text(5000, 'x');
  text += "  \n\n";
  text += std::string(3000, '.');
  StringSource src(text, 100);
  VectorSink sink;
  StreamOptions opt;
  opt.chunk_bytes = 64;
  auto st = EncodeStream(tok, src, sink, opt, nullptr);
  REQUIRE(st.ok());
  CHECK(st->chunks == 1);
  CHECK(st->largest_chunk == text.size());
  CHECK(sink.ids() == EncodeAll(tok, text));
}

namespace {

// Fails on the n-th read (1-based) with an error naming the input.
class FailingSource final : public ByteSource {
 public:
  FailingSource(std::string_view text, int fail_at) : inner_(text, 512), fail_at_(fail_at) {}
  Result<size_t> Read(char* dst, size_t capacity) override {
    if (++reads_ == fail_at_) return Status::Io("input.txt", "disk on fire");
    return inner_.Read(dst, capacity);
  }

 private:
  StringSource inner_;
  int fail_at_;
  int reads_ = 0;
};

class FailingSink final : public TokenSink {
 public:
  explicit FailingSink(int fail_at) : fail_at_(fail_at) {}
  Status Write(const uint32_t*, size_t) override {
    return ++writes_ == fail_at_ ? Status::Io("out.bin", "no space left") : Status::Ok();
  }
  int writes() const { return writes_; }

 private:
  int fail_at_;
  int writes_ = 0;
};

}  // namespace

TEST_CASE("bpe encode: read and write errors stop the stream with the error, at any thread count", "[bpe][encode]") {
  const Tokenizer& tok = Builtin("gpt2");
  std::string corpus = test::ReadAll(test::TestData("bpe-encode/corpus.en"));
  for (unsigned threads : {1u, 2u, 3u}) {
    INFO("threads " << threads);
    StreamOptions opt;
    opt.chunk_bytes = 1024;
    opt.threads = threads;
    {
      FailingSource src(corpus, 9);
      VectorSink sink;
      auto st = EncodeStream(tok, src, sink, opt, nullptr);
      REQUIRE_FALSE(st.ok());
      CHECK(st.status().subject() == "input.txt");
      CHECK(st.status().message().find("disk on fire") != std::string::npos);
    }
    {
      StringSource src(corpus);
      FailingSink sink(3);
      auto st = EncodeStream(tok, src, sink, opt, nullptr);
      REQUIRE_FALSE(st.ok());
      CHECK(st.status().message().find("no space left") != std::string::npos);
      CHECK(sink.writes() == 3);  // nothing is written after the failure
    }
  }
}

TEST_CASE("bpe encode: a disallowed special stops the stream at its offset, for every chunk size and thread count",
          "[bpe][encode][special_policy]") {
  const Tokenizer& cl100k = Builtin("cl100k_base");
  const SpecialRules rules = *SpecialRules::Resolve(cl100k, {SpecialSet::Listed({"<|endoftext|>"}), SpecialSet::All()});
  std::string text = kAdversarial;  // holds <|endoftext|> twice (allowed)
  const size_t at = text.size();
  text += "<|fim_prefix|> and more text after it\n<|fim_suffix|>";
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{64}, size_t{4096}}) {
    for (unsigned threads : {1u, 2u, 3u}) {
      INFO("chunk " << chunk << " threads " << threads);
      StringSource src(text, 5);
      VectorSink sink;
      StreamOptions opt;
      opt.chunk_bytes = chunk;
      opt.threads = threads;
      opt.specials = &rules;
      auto st = EncodeStream(cl100k, src, sink, opt, nullptr);
      REQUIRE_FALSE(st.ok());
      CHECK(st.status().code() == ErrorCode::kInvalidInput);
      CHECK(st.status().message().rfind("byte " + std::to_string(at) + ": ", 0) == 0);
      CHECK(st.status().message().find("\"<|fim_prefix|>\"") != std::string::npos);
    }
  }
  // Without the disallowed one, the allowed specials stream as in a whole encode.
  const std::string clean = kAdversarial;
  StringSource src(clean, 3);
  VectorSink sink;
  StreamOptions opt;
  opt.chunk_bytes = 5;
  opt.threads = 2;
  opt.specials = &rules;
  REQUIRE(EncodeStream(cl100k, src, sink, opt, nullptr).ok());
  CHECK(sink.ids() == EncodeAll(cl100k, clean));
}
