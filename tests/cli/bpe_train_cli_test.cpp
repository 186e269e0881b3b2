// `lmkit bpe train` end to end: files written, their formats, stdin and several inputs, --json, errors.
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "lmkit/bpe/files/byte_unicode.h"
#include "lmkit/common/json.h"
#include "support/run_lmkit.h"

using lmkit::test::ReadAll;
using lmkit::test::RunLmkit;
using lmkit::test::TempDir;
using lmkit::test::TestData;

TEST_CASE("bpe train cli: golden files for corpus.en", "[bpe][cli]") {
  TempDir dir;
  auto r = RunLmkit({"bpe", "train", TestData("bpe/corpus.en"), "--vocab-size", "500", "--special-token",
                     "<|endoftext|>", "-o", dir.path(), "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(ReadAll(dir.file("merges.txt")) == "#version: 0.2\n" + ReadAll(TestData("bpe/train-bpe-reference-merges.txt")));
  auto vocab = lmkit::ParseJson(ReadAll(dir.file("vocab.json")), "vocab.json");
  auto ref = lmkit::ParseJson(ReadAll(TestData("bpe/train-bpe-reference-vocab.json")), "ref");
  REQUIRE(vocab.ok());
  REQUIRE(ref.ok());
  std::set<std::string> got, want;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) got.insert(it.key());
  for (auto it = ref->begin(); it != ref->end(); ++it) want.insert(it.key());
  CHECK(got == want);
  CHECK((*vocab)["<|endoftext|>"] == 0);
  CHECK((*vocab)["!"] == 34);           // specials, then bytes 0..255 in order: '!' is byte 33
  CHECK((*vocab)["\xc4\xa0t"] == 257);  // the first merge "Ġ t"
  auto tok = lmkit::ParseJson(ReadAll(dir.file("tokenizer.json")), "tokenizer.json");
  REQUIRE(tok.ok());
  CHECK((*tok)["model"]["type"] == "BPE");
  CHECK((*tok)["model"]["vocab"].size() == 500);
  CHECK((*tok)["model"]["merges"].size() == 243);
  CHECK((*tok)["model"]["merges"][0] == "\xc4\xa0 t");
  CHECK((*tok)["added_tokens"][0]["content"] == "<|endoftext|>");
  CHECK((*tok)["added_tokens"][0]["special"] == true);
  CHECK((*tok)["pre_tokenizer"]["type"] == "ByteLevel");
  CHECK((*tok)["pre_tokenizer"]["add_prefix_space"] == false);
  CHECK((*tok)["decoder"]["type"] == "ByteLevel");
}

TEST_CASE("bpe train cli: stdin, several inputs and threads give the same bytes - --json summary", "[bpe][cli]") {
  TempDir dir;
  const std::string a = TestData("bpe/corpus.en"), b = TestData("bpe/tinystories_sample.txt");
  auto r1 = RunLmkit({"bpe", "train", a, b, "--vocab-size", "600", "--special-token", "<|endoftext|>", "-o",
                      dir.file("one"), "--threads", "1", "--json"});
  REQUIRE(r1.exit_code == 0);
  auto r2 = RunLmkit({"bpe", "train", "-", "--vocab-size", "600", "--special-token", "<|endoftext|>", "-o",
                      dir.file("two"), "--threads", "3", "--quiet"},
                     ReadAll(a) + ReadAll(b));
  REQUIRE(r2.exit_code == 0);
  for (const char* f : {"vocab.json", "merges.txt", "tokenizer.json"})
    CHECK(ReadAll(dir.file(std::string("one/") + f)) == ReadAll(dir.file(std::string("two/") + f)));
  auto j = lmkit::ParseJson(r1.out, "stdout");
  REQUIRE(j.ok());
  CHECK((*j)["input_bytes"] == ReadAll(a).size() + ReadAll(b).size());
  CHECK((*j)["vocab_size"] == 600);
  CHECK((*j)["merges"] == 600 - 257);
  CHECK((*j)["pretokens_unique"].get<uint64_t>() < (*j)["pretokens_total"].get<uint64_t>());
  for (const char* k : {"read", "pretokenize_count", "merge", "write"}) CHECK((*j)["seconds"].contains(k));
  CHECK((*j)["peak_rss_bytes"].get<uint64_t>() > 0);
  CHECK((*j)["longest_token"]["bytes"].get<int>() >= 2);
}

TEST_CASE("bpe train cli: errors", "[bpe][cli]") {
  TempDir dir;
  auto r = RunLmkit({"bpe", "train", TestData("bpe/corpus.en"), "-o", dir.path()});
  CHECK(r.exit_code == 2);  // --vocab-size is required
  r = RunLmkit({"bpe", "train", TestData("bpe/corpus.en"), "--vocab-size", "100", "-o", dir.path()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--vocab-size 100") != std::string::npos);
  r = RunLmkit({"bpe", "train", dir.file("missing.txt"), "--vocab-size", "300", "-o", dir.file("out")});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("missing.txt") != std::string::npos);
  CHECK(lmkit::test::ListDir(dir.path()).empty());  // nothing written on failure
}

TEST_CASE("bpe train cli: --special-token takes one value, so inputs may follow it", "[bpe][cli]") {
  TempDir dir;
  auto r = RunLmkit({"bpe", "train", "--special-token", "<|endoftext|>", TestData("bpe/tinystories_sample.txt"),
                     "--special-token", "<|x|>", "--vocab-size", "300", "-o", dir.path(), "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto j = lmkit::ParseJson(r.out, "stdout");
  REQUIRE(j.ok());
  CHECK((*j)["special_tokens"] == 2);
  CHECK((*j)["input_bytes"] == ReadAll(TestData("bpe/tinystories_sample.txt")).size());
  auto vocab = lmkit::ParseJson(ReadAll(dir.file("vocab.json")), "vocab.json");
  REQUIRE(vocab.ok());
  CHECK((*vocab)["<|x|>"] == 1);
}

// The three files were renamed into place one by one, so a failure on tokenizer.json came after vocab.json and
// merges.txt had already been replaced: an error exit that left a mixed old/new tokenizer behind.
TEST_CASE("bpe train cli: a failing tokenizer.json leaves the old vocab.json and merges.txt", "[bpe][cli]") {
  TempDir dir;
  const std::string out = dir.file("tok");
  REQUIRE(::mkdir(out.c_str(), 0755) == 0);
  lmkit::test::WriteAll(out + "/vocab.json", "old vocab");
  lmkit::test::WriteAll(out + "/merges.txt", "old merges");
  REQUIRE(::mkdir((out + "/tokenizer.json").c_str(), 0755) == 0);  // cannot be replaced by a file
  auto r = RunLmkit({"bpe", "train", TestData("bpe/tinystories_sample.txt"), "--vocab-size", "300", "-o", out});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit bpe train: " + out + "/tokenizer.json: is a directory\n");
  CHECK(r.out.empty());
  CHECK(ReadAll(out + "/vocab.json") == "old vocab");
  CHECK(ReadAll(out + "/merges.txt") == "old merges");
  CHECK(lmkit::test::ListDir(out) == std::vector<std::string>{"merges.txt", "tokenizer.json", "vocab.json"});
}

// CLI11 read size_t flags with strtoull: "-1" became 2^64-1 and an overflowing value saturated to it, so both
// trained silently to the end instead of being refused; "0400" was octal 256.
TEST_CASE("bpe train cli: --vocab-size must be a decimal count within 64 bits", "[bpe][cli]") {
  TempDir dir;
  const std::string in = TestData("bpe/tinystories_sample.txt");
  for (std::string bad : {"-1", "99999999999999999999", "0x200", "+300", "3e2", ""}) {
    INFO(bad);
    auto r = RunLmkit({"bpe", "train", in, "--vocab-size", bad, "-o", dir.file("out")});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--vocab-size") != std::string::npos);
    CHECK(r.err.find("got '" + bad + "'") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.out.empty());
    CHECK(lmkit::test::ListDir(dir.path()).empty());
  }
  auto r = RunLmkit({"bpe", "train", in, "--vocab-size", "0300", "-o", dir.file("out"), "--json"});
  REQUIRE(r.exit_code == 0);
  CHECK(lmkit::test::StdoutJson(r)["vocab_size"] == 300);  // decimal, not octal 192 (a usage error)
  r = RunLmkit({"bpe", "train", in, "--vocab-size", "300", "--block-bytes", "-5", "-o", dir.file("out2")});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("got '-5'") != std::string::npos);
}
