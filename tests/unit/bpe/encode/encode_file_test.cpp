// EncodeFile: a corpus in, a token file out; JSONL documents joined by the first special token give the ids of the
// joined text; the request's rules name its fields.
#include "lmkit/bpe/encode/encode_file.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "support/corpus_fixtures.h"
#include "support/run_lmkit.h"

using lmkit::bpe::EncodeFile;
using lmkit::bpe::EncodeRequest;

TEST_CASE("encode file: JSONL documents give the ids of their joined text", "[bpe][corpus]") {
  lmkit::test::TempDir dir;
  lmkit::test::WriteCorpusForms(dir.path());
  auto encode = [&](std::vector<std::string> inputs, const std::string& out) {
    EncodeRequest req;
    req.tokenizer = "gpt2";
    req.tokenizer_options.specials = {"<|endoftext|>"};
    req.corpus.inputs = std::move(inputs);
    req.output = dir.file(out);
    req.threads = 2;
    req.chunk_bytes = 4096;
    auto r = EncodeFile(req, nullptr);
    REQUIRE(r.ok());
    CHECK(r->root);
    return *r;
  };
  const auto text = encode({dir.file("joined.txt")}, "text.bin");
  const auto zst = encode({dir.file("c.jsonl.zst")}, "zst.bin");
  CHECK(lmkit::test::ReadAll(dir.file("zst.bin")) == lmkit::test::ReadAll(dir.file("text.bin")));
  CHECK(zst.bytes == text.bytes);
  CHECK(zst.tokens == text.tokens);
  CHECK(zst.dtype == lmkit::bpe::IdDtype::kU16);
  // Two inputs are one list of documents.
  const auto two = encode({dir.file("c.jsonl"), dir.file("c.jsonl.gz")}, "two.json");
  CHECK(two.input == fmt::format("{} {}", dir.file("c.jsonl"), dir.file("c.jsonl.gz")));
  CHECK(two.format == lmkit::bpe::IdFormat::kJson);
  CHECK(two.tokens == 2 * text.tokens + 1);  // the separator between them is one more token
}

TEST_CASE("encode file: the request's rules name its fields", "[bpe][corpus]") {
  lmkit::test::TempDir dir;
  lmkit::test::WriteCorpusForms(dir.path());
  EncodeRequest req;
  req.tokenizer = "gpt2";
  req.corpus.inputs = {dir.file("c.jsonl")};
  req.output = dir.file("ids.json");
  req.dtype = lmkit::bpe::IdDtype::kU16;
  CHECK(EncodeFile(req, nullptr).status().ToString() == "dtype applies to the bin and npy formats, not json");
  req.dtype = lmkit::bpe::IdDtype::kAuto;
  req.output.clear();
  req.format = lmkit::bpe::IdFormat::kNpy;
  CHECK(EncodeFile(req, nullptr).status().ToString() ==
        "format npy needs an output file (output): its header holds the token count");
  req.format.reset();
  req.output = dir.file("ids.bin");
  CHECK(EncodeFile(req, nullptr).status().ToString() ==
        "JSONL and Parquet documents are joined by a separator: give special_tokens (the first one joins them) or "
        "doc_separator");
  req.corpus.doc_separator.assign(1, '\n');
  CHECK(EncodeFile(req, nullptr).ok());
  req.mpi = true;
  req.output.clear();
  auto mpi = EncodeFile(req, nullptr);
  CHECK(mpi.status().code() == lmkit::ErrorCode::kInvalidArgument);
  CHECK(mpi.status().message().rfind(lmkit::Field("mpi"), 0) == 0);
}
