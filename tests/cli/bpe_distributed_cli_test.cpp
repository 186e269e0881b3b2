// `lmkit bpe count --shard`, `bpe train --counts` and `--mpi` end to end: outputs byte-identical to a single-process
// run, and clear errors for bad counts files. The MPI cases start their own `mpirun` (skipped with a WARN when mpirun
// or MPI support is missing).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "lmkit/common/json.h"
#include "lmkit/io/parquet_reader.h"
#include "support/corpus_fixtures.h"
#include "support/faults.h"
#include "support/run_lmkit.h"
#include "support/skip.h"

using lmkit::test::ReadAll;
using lmkit::test::RunLmkit;
using lmkit::test::TempDir;
using lmkit::test::TestData;

namespace {

const char* const kDistTokenizerFiles[] = {"vocab.json", "merges.txt", "tokenizer.json"};

void CheckSameDistFiles(const std::string& a, const std::string& b) {
  for (const char* f : kDistTokenizerFiles) {
    INFO(f);
    const std::string x = ReadAll(a + "/" + f);
    REQUIRE(!x.empty());
    CHECK(x == ReadAll(b + "/" + f));
  }
}

void TrainPlain(const std::string& out) {
  auto r = RunLmkit({"bpe", "train", TestData("bpe/corpus.en"), "--vocab-size", "500", "--special-token",
                     "<|endoftext|>", "-o", out, "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

struct ShellResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs `cmd` with sh; stdout and stderr are captured through files in `dir`.
ShellResult Shell(const TempDir& dir, const std::string& cmd) {
  const std::string o = dir.file("sh.out"), e = dir.file("sh.err");
  const int rc = std::system((cmd + " >'" + o + "' 2>'" + e + "'").c_str());
  ShellResult r;
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
  r.out = ReadAll(o);
  r.err = ReadAll(e);
  return r;
}

// The mpirun command up to the rank count ("... -n "), or "" (the test marked skipped) when this machine or build
// cannot run the MPI tests.
std::string MpiRunPrefix(const TempDir& dir) {
  // Answered before MPI starts: "built without MPI", or (with MPI) that --mpi does not take --counts.
  auto probe =
      RunLmkit({"bpe", "train", "--mpi", "--counts", dir.file("none"), "--vocab-size", "300", "-o", dir.file("probe")});
  CHECK(probe.exit_code == 2);
  if (probe.err.find("built without MPI") != std::string::npos) {
    LMKIT_SKIP_PART("this lmkit was built without MPI: MPI test");
    return "";
  }
  CHECK(probe.err.find("does not take --counts") != std::string::npos);
  if (lmkit::test::kSanitizerBuild) {
    // The lmkit side is the same code as the sharded tests above, which do run sanitized; Open MPI's own runtime
    // (pmix, hwloc) has not been checked under ASan here, and its start-up would dominate the sanitized suite.
    LMKIT_SKIP_PART("sanitizer build: MPI test");
    return "";
  }
  if (Shell(dir, "command -v mpirun").exit_code != 0) {
    LMKIT_SKIP_PART("mpirun not found: MPI test (apt-get install openmpi-bin)");
    return "";
  }
  // CI runs as root, in a container; ranks share this machine's cores. Containers often forbid the cross-process
  // memory reads (CMA) that Open MPI's shared-memory transport uses for large messages, so the tests copy through
  // shared memory instead.
  return "OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun --allow-run-as-root --oversubscribe --bind-to none -n ";
}

}  // namespace

TEST_CASE("cli bpe count/train --counts: N shard jobs give the plain training's files, N = 1..5", "[cli][bpe][dist]") {
  TempDir dir;
  TrainPlain(dir.file("plain"));
  for (int n = 1; n <= 5; ++n) {
    std::vector<std::string> args = {"bpe", "train", "--vocab-size", "500", "-o", dir.file("sharded"), "--quiet"};
    for (int k = n - 1; k >= 0; --k) {  // any order
      const std::string part = dir.file("part-" + std::to_string(k) + ".counts");
      auto c =
          RunLmkit({"bpe", "count", TestData("bpe/corpus.en"), "--shard", std::to_string(k) + "/" + std::to_string(n),
                    "--special-token", "<|endoftext|>", "-o", part, "--quiet"});
      INFO(c.err);
      REQUIRE(c.exit_code == 0);
      CHECK(c.out.find("shard " + std::to_string(k) + "/" + std::to_string(n)) != std::string::npos);
      args.push_back("--counts");
      args.push_back(part);
    }
    auto t = RunLmkit(args);
    INFO("N = " << n << "\n" << t.err);
    REQUIRE(t.exit_code == 0);
    CheckSameDistFiles(dir.file("plain"), dir.file("sharded"));
  }
}

// The sharded flow as README and docs/distributed.md show it: the shell's glob gives --counts every part file.
TEST_CASE("cli bpe train --counts part-*.counts: a shell glob passes all the shards", "[cli][bpe][dist]") {
  TempDir dir;
  TrainPlain(dir.file("plain"));
  for (int k = 0; k < 3; ++k)
    REQUIRE(RunLmkit({"bpe", "count", TestData("bpe/corpus.en"), "--shard", std::to_string(k) + "/3", "--special-token",
                      "<|endoftext|>", "-o", dir.file("part-" + std::to_string(k) + ".counts"), "--quiet"})
                .exit_code == 0);
  auto r = lmkit::test::RunShell("cd '" + dir.path() + "' && '" + LMKIT_BINARY +
                                 "' bpe train --counts part-*.counts --vocab-size 500 -o glob --quiet");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CheckSameDistFiles(dir.file("plain"), dir.file("glob"));
  // The glob may come last too, after the other flags.
  r = lmkit::test::RunShell("cd '" + dir.path() + "' && '" + LMKIT_BINARY +
                            "' bpe train --vocab-size 500 -o glob2 --quiet --counts part-*.counts");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CheckSameDistFiles(dir.file("plain"), dir.file("glob2"));
}

// Shards of JSONL and Parquet corpora are cut at document (line) and row-group boundaries; their counts give the
// files of the text that joins the documents.
TEST_CASE("cli bpe count --shard on JSONL, .gz, .zst and Parquet: the counts give the joined text's files",
          "[cli][bpe][dist][corpus]") {
  TempDir dir;
  const auto corpora = lmkit::test::WriteCorpusForms(dir.path());
  if (!lmkit::io::ParquetBuilt()) LMKIT_SKIP_PART("this lmkit was built without Parquet: its Parquet cases");
  auto r = RunLmkit({"bpe", "train", dir.file("joined.txt"), "--vocab-size", "500", "--special-token", "<|endoftext|>",
                     "-o", dir.file("plain"), "--quiet"});
  REQUIRE(r.exit_code == 0);
  const std::string jsonl = ReadAll(dir.file("c.jsonl"));
  for (size_t c = 0; c < corpora.size(); ++c) {
    for (int n = 2; n <= 3; ++n) {
      std::vector<std::string> args = {"bpe",     "train",   "--vocab-size", "500", "-o", dir.file("sharded"),
                                       "--quiet", "--counts"};
      uint64_t prev_end = 0;
      int nonempty = 0;
      for (int k = 0; k < n; ++k) {
        const std::string part = dir.file(fmt::format("p{}-{}-{}", c, n, k));
        auto cnt = RunLmkit({"bpe", "count", corpora[c], "--shard", fmt::format("{}/{}", k, n), "--special-token",
                             "<|endoftext|>", "-o", part, "--json", "--threads", "2"});
        INFO(corpora[c] << " " << k << "/" << n << "\n" << cnt.err);
        REQUIRE(cnt.exit_code == 0);
        auto j = lmkit::test::StdoutJson(cnt);
        const uint64_t begin = j["range"][0], end = j["range"][1];
        CHECK(begin == prev_end);
        prev_end = end;
        nonempty += end > begin;
        if (c < 3 && begin > 0) CHECK(jsonl[begin - 1] == '\n');  // JSONL shards start at a line
        args.push_back(part);
      }
      CHECK(nonempty >= 2);  // the cuts fall inside the corpus, not all at one end
      auto t = RunLmkit(args);
      INFO(corpora[c] << " N = " << n << "\n" << t.err);
      REQUIRE(t.exit_code == 0);
      CheckSameDistFiles(dir.file("plain"), dir.file("sharded"));
    }
  }
}

TEST_CASE("cli bpe train --counts: damaged, mismatched and incomplete counts are clear errors", "[cli][bpe][dist]") {
  TempDir dir;
  const std::string in = TestData("bpe/corpus.en");
  REQUIRE(RunLmkit({"bpe", "count", in, "--shard", "0/2", "--special-token", "<|endoftext|>", "-o", dir.file("p0")})
              .exit_code == 0);
  REQUIRE(RunLmkit({"bpe", "count", in, "--shard", "1/2", "--special-token", "<|endoftext|>", "-o", dir.file("p1")})
              .exit_code == 0);
  REQUIRE(RunLmkit({"bpe", "count", in, "--shard", "1/2", "-o", dir.file("nospecial")}).exit_code == 0);
  const std::string p1 = ReadAll(dir.file("p1"));
  lmkit::test::WriteAll(dir.file("cut"), p1.substr(0, p1.size() / 2));

  auto trunc = RunLmkit({"bpe", "train", "--counts", dir.file("p0"), "--counts", dir.file("cut"), "--vocab-size", "300",
                         "-o", dir.file("o")});
  CHECK(trunc.exit_code == 1);
  CHECK(trunc.err.find(dir.file("cut") + ": truncated") != std::string::npos);

  auto mismatch = RunLmkit({"bpe", "train", "--counts", dir.file("p0"), "--counts", dir.file("nospecial"),
                            "--vocab-size", "300", "-o", dir.file("o")});
  CHECK(mismatch.exit_code == 1);
  CHECK(mismatch.err.find("special tokens") != std::string::npos);

  auto missing = RunLmkit({"bpe", "train", "--counts", dir.file("p1"), "--vocab-size", "300", "-o", dir.file("o")});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("shard 0/2 is missing") != std::string::npos);

  // One shard may come from stdin; its counts equal those of the file.
  auto piped =
      RunLmkit({"bpe", "count", "-", "--special-token", "<|endoftext|>", "-o", dir.file("stdin")}, ReadAll(in));
  REQUIRE(piped.exit_code == 0);
  auto file = RunLmkit({"bpe", "count", in, "--special-token", "<|endoftext|>", "-o", dir.file("file")});
  REQUIRE(file.exit_code == 0);
  CHECK(ReadAll(dir.file("stdin")) == ReadAll(dir.file("file")));
  CHECK(RunLmkit({"bpe", "count", "-", "--shard", "0/2", "-o", dir.file("x")}, "a b").exit_code == 2);
  std::remove(dir.file("stdin").c_str());
  std::remove(dir.file("file").c_str());

  auto both = RunLmkit({"bpe", "train", in, "--counts", dir.file("p0"), "--vocab-size", "300", "-o", dir.file("o")});
  CHECK(both.exit_code == 2);
  auto badshard = RunLmkit({"bpe", "count", in, "--shard", "2/2", "-o", dir.file("x")});
  CHECK(badshard.exit_code == 2);
  CHECK(badshard.err.find("K/N") != std::string::npos);
  CHECK(lmkit::test::ListDir(dir.path()).size() == 4);  // p0, p1, nospecial, cut: no output from failed runs
}

TEST_CASE("cli bpe train --mpi: mpirun -n 1..3 writes the single-process files", "[cli][bpe][dist][mpi]") {
  TempDir dir;
  const std::string mpirun = MpiRunPrefix(dir);
  if (mpirun.empty()) return;
  const std::string lmkit = std::string(" '") + LMKIT_BINARY + "' ";
  TrainPlain(dir.file("plain"));
  for (int n = 1; n <= 3; ++n) {
    auto r = Shell(dir, mpirun + std::to_string(n) + lmkit + "bpe train '" + TestData("bpe/corpus.en") +
                            "' --vocab-size 500 --special-token '<|endoftext|>' --mpi -o '" + dir.file("mpi") + "'");
    INFO("ranks = " << n << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("trained 243 merges") != std::string::npos);  // printed once, by rank 0
    CHECK(r.out.find("trained", r.out.find("trained") + 1) == std::string::npos);
    CheckSameDistFiles(dir.file("plain"), dir.file("mpi"));
  }
}

namespace {

// Encodes corpus.en with and without --mpi on each of `ranks` and compares the files.
void CheckMpiEncode(const std::string& ext, std::initializer_list<int> ranks, const std::string& dtype) {
  TempDir dir;
  const std::string in = TestData("bpe/corpus.en");
  const std::string mpirun = MpiRunPrefix(dir);
  if (mpirun.empty()) return;
  const std::string lmkit = std::string(" '") + LMKIT_BINARY + "' ";
  const std::string plain = dir.file("plain" + ext), mpi = dir.file("mpi" + ext);
  auto p = RunLmkit({"bpe", "encode", "-t", "gpt2", in, "--dtype", dtype, "-o", plain, "--quiet"});
  REQUIRE(p.exit_code == 0);
  const std::string want = ReadAll(plain);
  REQUIRE(want.size() > 1000);
  for (int n : ranks) {
    // Small chunks so each rank's range is also cut into several chunks.
    auto r = Shell(dir, mpirun + std::to_string(n) + lmkit + "bpe encode -t gpt2 '" + in + "' --dtype " + dtype +
                            " --mpi --chunk-bytes 8192 -o '" + mpi + "'");
    INFO(ext << " ranks = " << n << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("encoded 133027 bytes") != std::string::npos);
    CHECK(ReadAll(mpi) == want);
  }
}

}  // namespace

TEST_CASE("cli bpe encode --mpi: mpirun -n 1..3 writes the single-process .bin", "[cli][bpe][dist][mpi]") {
  const std::string in = TestData("bpe/corpus.en");
  auto no_out = RunLmkit({"bpe", "encode", "-t", "gpt2", in, "--mpi"});  // refused before MPI starts
  CHECK(no_out.exit_code == 2);
  CHECK((no_out.err.find("--mpi needs -o FILE") != std::string::npos ||
         no_out.err.find("built without MPI") != std::string::npos));
  TempDir dir;
  auto policy = RunLmkit({"bpe", "encode", "-t", "gpt2", in, "--mpi", "--allowed-special", "none", "-o",
                          dir.file("ids.bin")});  // refused before MPI starts too
  CHECK(policy.exit_code == 2);
  CHECK((policy.err == "lmkit bpe encode: --allowed-special and --disallowed-special are not supported with --mpi\n" ||
         policy.err.find("built without MPI") != std::string::npos));
  CHECK(lmkit::test::ListDir(dir.path()).empty());
  CheckMpiEncode(".bin", {1, 2, 3}, "auto");  // uint16 ids
}

TEST_CASE("cli bpe train|encode --mpi on JSONL, .gz, .zst and Parquet: the joined text's files and ids",
          "[cli][bpe][dist][mpi][corpus]") {
  TempDir dir;
  const std::string mpirun = MpiRunPrefix(dir);
  if (mpirun.empty()) return;
  const auto corpora = lmkit::test::WriteCorpusForms(dir.path());
  if (!lmkit::io::ParquetBuilt()) LMKIT_SKIP_PART("this lmkit was built without Parquet: its Parquet cases");
  const std::string lmkit = std::string(" '") + LMKIT_BINARY + "' ";
  auto p = RunLmkit({"bpe", "train", dir.file("joined.txt"), "--vocab-size", "500", "--special-token", "<|endoftext|>",
                     "-o", dir.file("plain"), "--quiet"});
  REQUIRE(p.exit_code == 0);
  p = RunLmkit({"bpe", "encode", "-t", "gpt2", "--special-token", "<|endoftext|>", dir.file("joined.txt"), "-o",
                dir.file("plain.bin"), "--quiet"});
  REQUIRE(p.exit_code == 0);
  const std::string want = ReadAll(dir.file("plain.bin"));
  for (const auto& corpus : corpora) {
    const int n = corpus.find(".gz") != std::string::npos ? 3 : 2;
    auto r = Shell(dir, mpirun + std::to_string(n) + lmkit + "bpe train '" + corpus +
                            "' --vocab-size 500 --special-token '<|endoftext|>' --mpi -o '" + dir.file("mpi") + "'");
    INFO(corpus << " ranks = " << n << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    CheckSameDistFiles(dir.file("plain"), dir.file("mpi"));
    r = Shell(dir, mpirun + std::to_string(n) + lmkit + "bpe encode -t gpt2 --special-token '<|endoftext|>' '" +
                       corpus + "' --mpi --chunk-bytes 8192 -o '" + dir.file("mpi.bin") + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(ReadAll(dir.file("mpi.bin")) == want);
  }
}

TEST_CASE("cli bpe encode --mpi: json output is joined across ranks exactly", "[cli][bpe][dist][mpi]") {
  CheckMpiEncode(".json", {3}, "auto");  // commas and brackets across the rank joins
}

TEST_CASE("cli bpe encode --mpi: uint32 .npy ids are joined across ranks exactly", "[cli][bpe][dist][mpi]") {
  CheckMpiEncode(".npy", {2}, "uint32");  // the header's shape counts every rank's ids; 4-byte ids across the joins
}
