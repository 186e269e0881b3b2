// `lmkit bpe train|encode` on corpora as they are published: JSONL (plain, .gz, .zst) and Parquet give the files and
// ids of the text file that joins their documents with the separator, byte for byte; bad inputs are one-line errors
// naming the file and line (or row group), with nothing written. Sharded, counted and MPI runs on these formats are
// in bpe_distributed_cli_test.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "lmkit/io/parquet_reader.h"
#include "support/corpus_fixtures.h"
#include "support/run_lmkit.h"
#include "support/skip.h"

using lmkit::test::ListDir;
using lmkit::test::ReadAll;
using lmkit::test::RunLmkit;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;

namespace {

const std::string kEot = "<|endoftext|>";
const char* const kCorpusTokenizerFiles[] = {"vocab.json", "merges.txt", "tokenizer.json"};

std::vector<std::string> WriteCorpora(const TempDir& dir) {
  if (!lmkit::io::ParquetBuilt()) LMKIT_SKIP_PART("this lmkit was built without Parquet: its Parquet cases");
  return lmkit::test::WriteCorpusForms(dir.path());
}

void Train(const std::vector<std::string>& inputs, const std::string& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"bpe", "train"};
  args.insert(args.end(), inputs.begin(), inputs.end());
  for (const char* a : {"--vocab-size", "500", "--special-token", "<|endoftext|>", "--quiet", "-o"}) args.push_back(a);
  args.push_back(out);
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = RunLmkit(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

void CheckSameCorpusFiles(const std::string& a, const std::string& b) {
  for (const char* f : kCorpusTokenizerFiles) {
    INFO(b << "/" << f);
    const std::string x = ReadAll(a + "/" + f);
    REQUIRE(!x.empty());
    CHECK(x == ReadAll(b + "/" + f));
  }
}

// Runs `args` expecting `code` and exactly one line on stderr starting with `want`; nothing may appear in `dir`
// beyond what was there.
void CheckFails(const TempDir& dir, const std::vector<std::string>& args, int code, const std::string& want) {
  const auto before = ListDir(dir.path());
  auto r = RunLmkit(args);
  INFO(r.err);
  CHECK(r.exit_code == code);
  CHECK(r.err.rfind(want, 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.out.empty());
  CHECK(ListDir(dir.path()) == before);
}

}  // namespace

TEST_CASE("bpe corpus cli: training on JSONL, .gz, .zst and Parquet equals training on the joined text",
          "[cli][bpe][corpus]") {
  TempDir dir;
  const auto corpora = WriteCorpora(dir);
  Train({dir.file("joined.txt")}, dir.file("text"));
  CHECK(ReadAll(dir.file("text/merges.txt")).size() > 1000);
  for (size_t i = 0; i < corpora.size(); ++i) {
    const std::string out = dir.file("out" + std::to_string(i));
    Train({corpora[i]}, out, {"--threads", i % 2 ? "2" : "1"});
    CheckSameCorpusFiles(dir.file("text"), out);
  }
  // Two JSONL files are one list of documents, joined across the files as well.
  WriteAll(dir.file("twice.txt"), ReadAll(dir.file("joined.txt")) + kEot + ReadAll(dir.file("joined.txt")));
  Train({dir.file("twice.txt")}, dir.file("twice"));
  Train({dir.file("c.jsonl.gz"), dir.file("c.jsonl")}, dir.file("two"));
  CheckSameCorpusFiles(dir.file("twice"), dir.file("two"));
}

TEST_CASE("bpe corpus cli: --text-field, --doc-separator and --input-format", "[cli][bpe][corpus]") {
  TempDir dir;
  const auto docs = lmkit::test::CorpusEnDocs();
  WriteAll(dir.file("para.txt"), lmkit::test::Join(docs, "\n\n"));
  WriteAll(dir.file("body.data"), lmkit::test::Gzip(lmkit::test::Jsonl(docs, "body")));  // no telling name
  auto train = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {"bpe", "train", "--vocab-size", "400", "--quiet"};
    all.insert(all.end(), args.begin(), args.end());
    auto r = RunLmkit(all);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  };
  train({dir.file("para.txt"), "-o", dir.file("text")});
  train({dir.file("body.data"), "--input-format", "jsonl", "--text-field", "body", "--doc-separator", "\n\n", "-o",
         dir.file("jsonl")});
  CheckSameCorpusFiles(dir.file("text"), dir.file("jsonl"));
  if (lmkit::io::ParquetBuilt()) {
    train({TestData("corpora/docs_large.parquet"), "--text-field", "content", "--doc-separator", "\n\n", "-o",
           dir.file("parquet")});
    CheckSameCorpusFiles(dir.file("text"), dir.file("parquet"));
  }
}

// README's first command trains on this Parquet sample (scripts/quickstart.sh): its binary and this one come from the
// same scripts/configure.sh, so Parquet must be built here too, and the rows joined by "\n" are corpus.en.
TEST_CASE("bpe corpus cli: the quickstart's Parquet sample trains the merges of its text", "[cli][bpe][corpus]") {
  if (!lmkit::io::ParquetBuilt()) LMKIT_SKIP("this lmkit was built without Parquet (scripts/configure.sh builds it)");
  TempDir dir;
  Train({lmkit::test::RepoPath("data/samples/corpus.en")}, dir.file("text"));
  Train({lmkit::test::RepoPath("data/samples/corpus.parquet")}, dir.file("parquet"), {"--doc-separator", "\n"});
  CheckSameCorpusFiles(dir.file("text"), dir.file("parquet"));
}

TEST_CASE("bpe corpus cli: encoding JSONL, .gz, .zst and Parquet equals encoding the joined text",
          "[cli][bpe][corpus]") {
  TempDir dir;
  const auto corpora = WriteCorpora(dir);
  auto encode = [&](std::vector<std::string> inputs, const std::string& out, const std::string& stdin_data = "") {
    std::vector<std::string> args = {
        "bpe",           "encode", "-t", "gpt2", "--special-token", "<|endoftext|>", "--quiet",
        "--chunk-bytes", "4096",   "-o", out};
    args.insert(args.end(), inputs.begin(), inputs.end());
    auto r = RunLmkit(args, stdin_data);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return ReadAll(out);
  };
  const std::string want = encode({dir.file("joined.txt")}, dir.file("text.bin"));
  REQUIRE(want.size() > 10000);
  for (size_t i = 0; i < corpora.size(); ++i) {
    INFO(corpora[i]);
    CHECK(encode({corpora[i]}, dir.file("ids" + std::to_string(i) + ".bin")) == want);
  }
  // From stdin, compressed: the format is given, the compression found.
  CHECK(encode({"--input-format", "jsonl"}, dir.file("stdin.bin"), ReadAll(dir.file("c.jsonl.zst"))) == want);
  auto json = RunLmkit({"bpe", "encode", "-t", "gpt2", "--special-token", "<|endoftext|>", dir.file("c.jsonl.gz"), "-o",
                        dir.file("ids.json"), "--json"});
  REQUIRE(json.exit_code == 0);
  auto j = lmkit::test::StdoutJson(json);
  CHECK(j["bytes"] == ReadAll(dir.file("joined.txt")).size());  // bytes of text encoded, documents joined
  CHECK(j["input"] == dir.file("c.jsonl.gz"));
}

TEST_CASE("bpe corpus cli: --allowed-special and --disallowed-special apply to the joined documents",
          "[cli][bpe][corpus]") {
  TempDir dir;
  lmkit::test::WriteCorpusForms(dir.path());
  auto encode = [&](const std::string& input, const std::string& out, std::vector<std::string> policy) {
    std::vector<std::string> args = {"bpe", "encode",  "-t",  "gpt2", "--special-token",
                                     kEot,  "--quiet", input, "-o",   out};
    args.insert(args.end(), policy.begin(), policy.end());
    auto r = RunLmkit(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return ReadAll(out);
  };
  // Neither allowed nor disallowed: the separator between documents is ordinary text, as in the joined file.
  const std::vector<std::string> ordinary = {"--allowed-special", "none", "--disallowed-special", "none"};
  const std::string want = encode(dir.file("joined.txt"), dir.file("text.bin"), ordinary);
  CHECK(encode(dir.file("c.jsonl.zst"), dir.file("zst.bin"), ordinary) == want);
  CHECK(encode(dir.file("c.jsonl.zst"), dir.file("all.bin"), {}) != want);  // the default makes it the special id
  // Disallowed (tiktoken's default): the first separator is an error at its offset in the joined text.
  const std::string joined = ReadAll(dir.file("joined.txt"));
  TempDir out;
  CheckFails(out,
             {"bpe", "encode", "-t", "gpt2", "--special-token", kEot, dir.file("c.jsonl"), "--allowed-special", "none",
              "-o", out.file("ids.bin")},
             1,
             "lmkit bpe encode: " + dir.file("c.jsonl") + ": byte " + std::to_string(joined.find(kEot)) +
                 ": the text is the special token \"<|endoftext|>\", which is disallowed (--allowed-special encodes "
                 "it as a special, --disallowed-special none as ordinary text)\n");
}

TEST_CASE("bpe corpus cli: bad corpora are one-line errors naming the file and line, with nothing written",
          "[cli][bpe][corpus]") {
  TempDir dir;
  const auto docs = lmkit::test::CorpusEnDocs();
  const std::string lines = lmkit::test::Jsonl(docs);
  // The JSONL with line `n` (1-based) replaced.
  auto with_line = [&](int n, const std::string& line) {
    std::string out;
    size_t begin = 0;
    for (int i = 1; begin < lines.size(); ++i) {
      const size_t end = lines.find('\n', begin) + 1;
      out += i == n ? line : lines.substr(begin, end - begin);
      begin = end;
    }
    return out;
  };
  const std::string malformed = with_line(7, "{\"id\": 6, \"text\": \"unterminated}\n");
  const std::string missing = with_line(3, "{\"id\": 2, \"txt\": \"x\"}\n");
  const std::string number = lines + "{\"id\": 99, \"text\": 42}\n";
  const std::string gz = lmkit::test::Gzip(lines), zst = lmkit::test::Zstd(lines);
  TempDir in;  // inputs apart from the outputs' directory, which must stay empty
  WriteAll(in.file("malformed.jsonl"), malformed);
  WriteAll(in.file("missing.jsonl"), missing);
  WriteAll(in.file("number.jsonl.zst"), lmkit::test::Zstd(number));
  WriteAll(in.file("cut.jsonl.gz"), gz.substr(0, gz.size() - 100));
  WriteAll(in.file("cut.jsonl.zst"), zst.substr(0, zst.size() / 3));
  WriteAll(in.file("plain.txt"), "some text\n");
  const std::vector<std::string> train = {"bpe", "train", "--vocab-size", "300", "--special-token",
                                          kEot,  "-o",    dir.file("out")};
  auto with = [](std::vector<std::string> args, std::vector<std::string> more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  CheckFails(dir, with(train, {in.file("malformed.jsonl")}), 1,
             "lmkit bpe train: " + in.file("malformed.jsonl") + ": line 7: malformed JSON (");
  CheckFails(dir, with(train, {in.file("missing.jsonl")}), 1,
             "lmkit bpe train: " + in.file("missing.jsonl") + ": line 3: no field \"text\"\n");
  CheckFails(
      dir, with(train, {in.file("number.jsonl.zst")}), 1,
      "lmkit bpe train: " + in.file("number.jsonl.zst") + ": line 52: field \"text\" is a number, expected a string\n");
  CheckFails(dir, with(train, {in.file("cut.jsonl.gz")}), 1,
             "lmkit bpe train: " + in.file("cut.jsonl.gz") + ": truncated gzip stream (it ends after ");
  CheckFails(dir, with(train, {in.file("cut.jsonl.zst")}), 1,
             "lmkit bpe train: " + in.file("cut.jsonl.zst") + ": truncated zstd stream (it ends after ");
  CheckFails(dir, {"bpe", "train", "--vocab-size", "300", "-o", dir.file("out"), in.file("missing.jsonl")}, 2,
             "lmkit bpe train: JSONL and Parquet documents are joined by a separator: give --special-token (the "
             "first one joins them) or --doc-separator\n");
  CheckFails(dir, with(train, {in.file("plain.txt"), in.file("missing.jsonl")}), 2,
             "lmkit bpe train: INPUT: text files mixed with JSONL/Parquet files; give one kind (--input-format sets "
             "the format of all)\n");
  CheckFails(dir, with(train, {in.file("plain.txt"), "--input-format", "csv"}), 2,
             "lmkit bpe train: --input-format 'csv': expected text, jsonl or parquet\n");
  CheckFails(dir, with(train, {in.file("plain.txt"), "--doc-separator", "\n"}), 2,
             "lmkit bpe train: --doc-separator joins JSONL and Parquet documents; these inputs are text\n");
  const std::string parquet = TestData("corpora/docs.parquet");
  if (lmkit::io::ParquetBuilt()) {
    CheckFails(dir, with(train, {parquet, "--text-field", "body"}), 1,
               "lmkit bpe train: " + parquet + ": no column \"body\" (its columns: id, text)\n");
    CheckFails(dir, with(train, {TestData("corpora/null_text.parquet")}), 1,
               "lmkit bpe train: " + TestData("corpora/null_text.parquet") + ": row group 1: row 0 is null\n");
  } else {
    CheckFails(dir, with(train, {parquet}), 1,
               "lmkit bpe train: " + parquet + ": this lmkit was built without Parquet support (pip install pyarrow");
  }
  // Encode and count fail the same way, leaving no output.
  CheckFails(
      dir,
      {"bpe", "encode", "-t", "gpt2", "--special-token", kEot, in.file("cut.jsonl.zst"), "-o", dir.file("ids.bin")}, 1,
      "lmkit bpe encode: " + in.file("cut.jsonl.zst") + ": truncated zstd stream");
  CheckFails(dir, {"bpe", "count", in.file("malformed.jsonl"), "--special-token", kEot, "-o", dir.file("p.counts")}, 1,
             "lmkit bpe count: " + in.file("malformed.jsonl") + ": line 7: malformed JSON (");
  CHECK(ListDir(dir.path()).empty());
}
