// The encoder against tiktoken's ids (golden files in tests/data/bpe-encode/, see PROVENANCE.md), the two merge
// loops against each other, and streaming/chunked encodes against whole-input encodes.
#include "lmkit/bpe/encoder.h"

#include <catch2/catch.hpp>
#include <random>

#include "lmkit/bpe/tokenizer_files.h"
#include "lmkit/common/json.h"
#include "lmkit/common/thread_start.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::bpe;

namespace {

const Tokenizer& Builtin(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    auto t = LoadTokenizer(name, {});
    REQUIRE(t.ok());
    slot = std::move(*t);
  }
  return *slot;
}

std::vector<uint32_t> Expected(const std::string& file) {
  auto j = ParseJson(test::ReadAll(test::TestData("bpe-encode/" + file)), file);
  REQUIRE(j.ok());
  return (*j)["ids"].get<std::vector<uint32_t>>();
}

std::vector<uint32_t> EncodeAll(const Tokenizer& tok, std::string_view text) {
  Encoder enc(tok);
  std::vector<uint32_t> ids;
  enc.Encode(text, &ids);
  return ids;
}

std::vector<uint32_t> EncodeStreamed(const Tokenizer& tok, std::string_view text, size_t chunk, unsigned threads,
                                     size_t max_read = SIZE_MAX) {
  StringSource src(text, max_read);
  VectorSink sink;
  StreamOptions opt;
  opt.chunk_bytes = chunk;
  opt.threads = threads;
  auto st = EncodeStream(tok, src, sink, opt, nullptr);
  REQUIRE(st.ok());
  CHECK(st->bytes == text.size());
  CHECK(st->tokens == sink.ids().size());
  return sink.ids();
}

// Text that stresses every rule near a cut: whitespace runs before words and at the end, newlines after
// punctuation ("[\r\n]*", "[\r\n/]*"), contractions, digit groups, CJK, emoji, specials next to newlines.
const char* kAdversarial =
    "Hello world\nfoo  bar\n\n  baz\t\tqux \n x.\nY.\n/Z\n\r\nA's B'LL c'Ve 1234567 x\n12 ab\n"
    ".\n\nq  \n w   end.\n<|endoftext|>\nnext doc 中文字符\n😀 x<|endoftext|>y\n  \n\n!!\n\nok\r\nz a b";

}  // namespace

TEST_CASE("bpe encode: gpt2 ids equal tiktoken on corpus.en and tinystories", "[bpe][encode]") {
  const Tokenizer& tok = Builtin("gpt2");
  auto corpus = test::ReadAll(test::TestData("bpe-encode/corpus.en"));
  auto ids = EncodeAll(tok, corpus);
  auto want = Expected("corpus.gpt2.json");
  REQUIRE(want.size() == 30854);
  CHECK(ids == want);
  auto stories = test::ReadAll(test::TestData("bpe-encode/tinystories_sample.txt"));
  auto want_s = Expected("tinystories_sample.gpt2.json");
  REQUIRE(want_s.size() == 923);
  CHECK(EncodeAll(tok, stories) == want_s);
}

TEST_CASE("bpe encode: cl100k_base and o200k_base ids equal tiktoken", "[bpe][encode]") {
  for (std::string name : {"cl100k_base", "o200k_base"}) {
    INFO(name);
    const Tokenizer& tok = Builtin(name);
    for (std::string stem : {"patterns", "tinystories_sample"}) {
      INFO(stem);
      auto text = test::ReadAll(test::TestData("bpe-encode/" + stem + (stem == "patterns" ? ".txt" : ".txt")));
      CHECK(EncodeAll(tok, text) == Expected(stem + "." + name + ".json"));
    }
  }
  CHECK(EncodeAll(Builtin("gpt2"), test::ReadAll(test::TestData("bpe-encode/patterns.txt"))) ==
        Expected("patterns.gpt2.json"));
}

TEST_CASE("bpe encode: known small encodings", "[bpe][encode]") {
  const Tokenizer& gpt2 = Builtin("gpt2");
  CHECK(EncodeAll(gpt2, "Hello world") == std::vector<uint32_t>{15496, 995});
  CHECK(EncodeAll(gpt2, "<|endoftext|>") == std::vector<uint32_t>{50256});
  CHECK(EncodeAll(gpt2, "").empty());
  CHECK(EncodeAll(Builtin("cl100k_base"), "hello world") == std::vector<uint32_t>{15339, 1917});
  CHECK(EncodeAll(Builtin("o200k_base"), "hello world") == std::vector<uint32_t>{24912, 2375});
}

TEST_CASE("bpe encode: flat and heap merge loops agree", "[bpe][encode]") {
  const Tokenizer& tok = Builtin("gpt2");
  Encoder enc(tok);
  std::mt19937 rng(7);
  const std::string alphabet = "aaabbbeeettthhhnnnrrss  --==..\n";
  for (int trial = 0; trial < 300; ++trial) {
    std::string piece;
    size_t len = 1 + rng() % 400;
    for (size_t i = 0; i < len; ++i) piece += alphabet[rng() % alphabet.size()];
    std::vector<uint32_t> a, b;
    enc.MergeFlat(piece, &a);
    enc.MergeHeap(piece, &b);
    REQUIRE(a == b);
  }
  // A 100 KB run of one symbol takes the heap path and stays fast.
  std::string dashes(100000, '-');
  std::vector<uint32_t> ids;
  enc.EncodePiece(dashes, &ids);
  std::string_view bytes;
  size_t total = 0;
  for (uint32_t id : ids) {
    REQUIRE(tok.TokenBytes(id, &bytes));
    total += bytes.size();
  }
  CHECK(total == dashes.size());
}

TEST_CASE("bpe encode: every safe cut splits the encoding exactly", "[bpe][encode]") {
  std::mt19937 rng(11);
  const std::vector<std::string> atoms = {"a",    "Z",    "q",  "x", "1",  "22",  " ",  "  ", "\n",
                                          "\r\n", "\t",   ".",  "/", "'s", "'LL", "中", "😀",  "<|endoftext|>",
                                          "!",    "\n\n", "ab", "é"};
  for (std::string name : {"gpt2", "cl100k_base", "o200k_base"}) {
    const Tokenizer& tok = Builtin(name);
    for (int trial = 0; trial < 60; ++trial) {
      std::string text;
      size_t n = 5 + rng() % 60;
      for (size_t i = 0; i < n; ++i) text += atoms[rng() % atoms.size()];
      auto whole = EncodeAll(tok, text);
      for (size_t c = 2; c + 1 < text.size(); ++c) {
        if (LastSafeCut(std::string_view(text).substr(0, c + 2), c, tok.enabled_specials()) != c) continue;
        auto left = EncodeAll(tok, std::string_view(text).substr(0, c));
        auto right = EncodeAll(tok, std::string_view(text).substr(c));
        left.insert(left.end(), right.begin(), right.end());
        INFO(name << " cut " << c << " in " << Json(text).dump());
        REQUIRE(left == whole);
      }
    }
  }
}

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

TEST_CASE("bpe encode: special tokens, longest first, only when enabled", "[bpe][encode]") {
  TokenizerOptions opt;
  auto plain = LoadTokenizer("gpt2", opt);
  REQUIRE(plain.ok());
  // gpt2's own <|endoftext|> is on by default.
  CHECK(EncodeAll(**plain, "a<|endoftext|>b") == std::vector<uint32_t>{64, 50256, 65});
  // A caller-named special that is not in the tokenizer is an error naming it.
  opt.specials = {"<|im_start|>"};
  auto bad = LoadTokenizer("gpt2", opt);
  REQUIRE(!bad.ok());
  CHECK(bad.status().subject() == "<|im_start|>");
  // cl100k_base knows <|fim_prefix|> etc.; all its own specials are matched.
  CHECK(EncodeAll(Builtin("cl100k_base"), "<|fim_prefix|>x<|endofprompt|>") ==
        std::vector<uint32_t>{100258, 87, 100276});
}

TEST_CASE("bpe encode: invalid UTF-8 is encoded losslessly", "[bpe][encode]") {
  const Tokenizer& tok = Builtin("gpt2");
  std::string bad = "ok \xff\xfe bad \xc3 cut \xe4\xb8 end\x80";
  auto ids = EncodeAll(tok, bad);
  std::string back;
  std::string_view b;
  for (uint32_t id : ids) {
    REQUIRE(tok.TokenBytes(id, &b));
    back += b;
  }
  CHECK(back == bad);
  CHECK(EncodeStreamed(tok, bad, 3, 2) == ids);
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

TEST_CASE("bpe encode: a sink's default Write16 widens every id, in order, across its 4096-id steps", "[bpe][encode]") {
  std::vector<uint16_t> ids(10001);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint16_t>((i * 40503u) & 0xffffu);
  VectorSink sink;
  REQUIRE(sink.Write16(ids.data(), ids.size()).ok());
  REQUIRE(sink.Write16(ids.data(), 0).ok());
  REQUIRE(sink.ids().size() == ids.size());
  for (size_t i = 0; i < ids.size(); ++i) REQUIRE(sink.ids()[i] == ids[i]);
}
