// TrainFiles: one request, three ways (corpus, counts files, MPI), the same files; and the request's rules as errors
// that name its fields.
#include "lmkit/bpe/train/train_files.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "lmkit/bpe/train/count_shard.h"
#include "lmkit/dist/comm.h"
#include "support/corpus_fixtures.h"
#include "support/run_lmkit.h"

using lmkit::bpe::TrainFiles;
using lmkit::bpe::TrainFilesRequest;

namespace {

TrainFilesRequest Request(const std::string& out) {
  TrainFilesRequest r;
  r.vocab_size = 400;
  r.special_tokens = {"<|endoftext|>"};
  r.out_dir = out;
  return r;
}

}  // namespace

TEST_CASE("train files: counts files of every shard give the corpus' files", "[bpe][corpus]") {
  lmkit::test::TempDir dir;
  lmkit::test::WriteCorpusForms(dir.path());
  TrainFilesRequest whole = Request(dir.file("whole"));
  whole.corpus.inputs = {dir.file("c.jsonl.zst")};
  auto w = TrainFiles(whole, nullptr);
  REQUIRE(w.ok());
  CHECK(w->root);
  CHECK(w->train.model.vocab.size() == 400);
  CHECK(w->train.stats.input_bytes == lmkit::test::ReadAll(dir.file("joined.txt")).size());
  CHECK_FALSE(w->reduce_seconds.has_value());

  TrainFilesRequest counted = Request(dir.file("counted"));
  for (uint64_t k = 0; k < 3; ++k) {
    lmkit::bpe::CountShardRequest c;
    c.corpus.inputs = {dir.file("c.jsonl")};
    c.shard = {k, 3};
    c.special_tokens = {"<|endoftext|>"};
    c.output = dir.file(fmt::format("part{}", k));
    auto r = lmkit::bpe::CountShard(c, nullptr);
    REQUIRE(r.ok());
    counted.counts.push_back(c.output);
  }
  auto t = TrainFiles(counted, nullptr);
  REQUIRE(t.ok());
  for (const char* f : {"/vocab.json", "/merges.txt", "/tokenizer.json"})
    CHECK(lmkit::test::ReadAll(dir.file("whole") + f) == lmkit::test::ReadAll(dir.file("counted") + f));

  counted.special_tokens = {"<|other|>"};
  auto other = TrainFiles(counted, nullptr);
  CHECK(other.status().code() == lmkit::ErrorCode::kInvalidInput);
  CHECK(other.status().ToString() == dir.file("part0") +
                                         ": counted with other special tokens than the special_tokens "
                                         "given here");
}

TEST_CASE("train files: the request's rules name its fields", "[bpe][corpus]") {
  lmkit::test::TempDir dir;
  TrainFilesRequest r = Request(dir.file("out"));
  CHECK(TrainFiles(r, nullptr).status().ToString() == "give either text inputs files or counts files (not both)");
  r.corpus.inputs = {lmkit::test::TestData("bpe/corpus.en")};
  r.counts = {dir.file("p.counts")};
  CHECK(TrainFiles(r, nullptr).status().code() == lmkit::ErrorCode::kInvalidArgument);
  r.corpus.inputs.clear();
  r.mpi = true;
  const std::string mpi = TrainFiles(r, nullptr).status().ToString();
  CHECK(mpi == (lmkit::dist::Built() ? "mpi counts text inputs; it does not take counts"
                                     : "mpi: this lmkit was built without MPI (install libopenmpi-dev, configure with "
                                       "-DLMKIT_MPI=ON)"));
  r = Request(dir.file("out"));
  r.corpus.inputs = {lmkit::test::TestData("bpe/corpus.en")};
  r.vocab_size = 100;
  CHECK(TrainFiles(r, nullptr).status().ToString() ==
        "vocab_size 100 is below the 257 tokens every vocabulary starts with (1 special + 256 bytes)");
  CHECK(lmkit::test::ListDir(dir.path()).empty());
}
