// Shared by the encoder, stream and safe-cut tests: cached built-in tokenizers, golden ids, whole and streamed encodes.
#pragma once

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lmkit/bpe/encode/encode_stream.h"
#include "lmkit/bpe/encode/encoder.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/common/json.h"
#include "support/run_lmkit.h"

namespace lmkit::bpe::test_helpers {

inline const Tokenizer& Builtin(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    auto t = LoadTokenizer(name, {});
    REQUIRE(t.ok());
    slot = std::move(*t);
  }
  return *slot;
}

inline std::vector<uint32_t> Expected(const std::string& file) {
  auto j = ParseJson(lmkit::test::ReadAll(lmkit::test::TestData("bpe-encode/" + file)), file);
  REQUIRE(j.ok());
  return (*j)["ids"].get<std::vector<uint32_t>>();
}

inline std::vector<uint32_t> EncodeAll(const Tokenizer& tok, std::string_view text) {
  Encoder enc(tok);
  std::vector<uint32_t> ids;
  enc.Encode(text, &ids);
  return ids;
}

inline std::vector<uint32_t> EncodeStreamed(const Tokenizer& tok, std::string_view text, size_t chunk, unsigned threads,
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
inline const char* kAdversarial =
    "Hello world\nfoo  bar\n\n  baz\t\tqux \n x.\nY.\n/Z\n\r\nA's B'LL c'Ve 1234567 x\n12 ab\n"
    ".\n\nq  \n w   end.\n<|endoftext|>\nnext doc 中文字符\n😀 x<|endoftext|>y\n  \n\n!!\n\nok\r\nz a b";

}  // namespace lmkit::bpe::test_helpers
