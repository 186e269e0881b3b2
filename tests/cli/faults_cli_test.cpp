// Fault injection across commands (#31): refused threads, special files where JSON is expected, a full disk under a
// multi-file output, concurrent writers, broken shard indexes, non-finite weights and signals. Each case is
// reproducible without root or a tmpfs: RLIMIT_AS / RLIMIT_FSIZE in the child, FIFOs, /dev/zero, /dev/full, a lock
// held by the test.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "lmkit/common/json.h"
#include "lmkit/io/safetensors.h"
#include "support/faults.h"
#include "support/run_lmkit.h"
#include "support/skip.h"

using lmkit::test::ChildLimits;
using lmkit::test::ListDir;
using lmkit::test::ReadAll;
using lmkit::test::RunLmkit;
using lmkit::test::RunLmkitLimited;
using lmkit::test::RunResult;
using lmkit::test::RunShell;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;
namespace fs = std::filesystem;

namespace {

const std::string kStoriesDir = TestData("model/stories260K");
const std::string kCorpusEn = TestData("bpe/corpus.en");

// One line on stderr that starts with `prefix`.
bool OneLine(const RunResult& r, const std::string& prefix) {
  return r.err.rfind(prefix, 0) == 0 && r.err.find('\n') == r.err.size() - 1;
}

// Entries of `dir` whose name marks a temporary or staging file.
std::vector<std::string> Leftovers(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& n : ListDir(dir))
    if (n.find(".tmp.") != std::string::npos) out.push_back(n);
  return out;
}

// A copy of stories260K in `dir` (config.json and model.safetensors).
std::string CopyModel(const TempDir& tmp, const std::string& name) {
  const std::string d = tmp.file(name);
  fs::create_directories(d);
  fs::copy_file(kStoriesDir + "/config.json", d + "/config.json");
  fs::copy_file(kStoriesDir + "/model.safetensors", d + "/model.safetensors");
  return d;
}

}  // namespace

namespace {

// The threaded commands, each with the file it writes ("" = its stdout); "@/" is the run's own directory.
struct ThreadedRun {
  std::vector<std::string> args;
  std::string output;
};
std::vector<ThreadedRun> ThreadedRuns(const std::string& ids) {
  return {
      {{"bpe", "encode", "-t", "gpt2", kCorpusEn, "-o", "@/ids.bin"}, "@/ids.bin"},
      {{"bpe", "train", kCorpusEn, "--vocab-size", "400", "-o", "@/tok"}, "@/tok/tokenizer.json"},
      {{"inspect", "--stats", kStoriesDir}, ""},
      {{"quantize", kStoriesDir, "-o", "@/q"}, "@/q/model.safetensors"},
      {{"calibrate", "--model", kStoriesDir, "--tokens", ids, "--method", "minmax", "-o", "@/c.json"}, "@/c.json"},
  };
}

std::vector<std::string> InDir(const std::vector<std::string>& args, const std::string& dir, const std::string& j) {
  std::vector<std::string> out = {"-q", "-j", j};
  for (const auto& a : args) out.push_back(a.rfind("@/", 0) == 0 ? dir + a.substr(1) : a);
  return out;
}

std::string At(const std::string& path, const std::string& dir) {
  return path.rfind("@/", 0) == 0 ? dir + path.substr(1) : path;
}

}  // namespace

// #31 item 1. lmkit runs as a fresh user whose RLIMIT_NPROC lets only 3 threads start beside the main one: every
// threaded command finishes on the threads it got and writes what a one-thread run writes (docs/cli.md: results do
// not depend on --threads). Before, bpe encode died in std::terminate and the others hung.
TEST_CASE("faults: refused threads give the one-thread output, not an abort or a hang", "[faults][cli][threads]") {
  if (::geteuid() != 0) LMKIT_SKIP("needs root, to run lmkit as a fresh user under RLIMIT_NPROC (CI runs as root)");
  TempDir tmp;
  fs::permissions(tmp.path(), fs::perms::all);  // the child runs as nobody
  const std::string ids = lmkit::test::WriteTokenFile(tmp, 3000, 512);
  fs::create_directories(tmp.file("one"));
  fs::create_directories(tmp.file("many"));
  fs::permissions(tmp.file("many"), fs::perms::all);
  for (const ThreadedRun& c : ThreadedRuns(ids)) {
    RunResult r1 = RunLmkit(InDir(c.args, tmp.file("one"), "1"));
    INFO(c.args[0] << " " << c.args[1] << ": " << r1.err);
    REQUIRE(r1.exit_code == 0);
    ChildLimits few;
    few.rlimits = {{RLIMIT_NPROC, 4}};
    few.as_nobody = true;
    few.alarm_s = 300;
    RunResult rn = RunLmkitLimited(InDir(c.args, tmp.file("many"), "64"), few);
    INFO(rn.err);
    CHECK(rn.exit_code == 0);
    CHECK(rn.err.empty());
    if (c.output.empty()) {
      CHECK(rn.out == r1.out);
    } else {
      CHECK(ReadAll(At(c.output, tmp.file("many"))) == ReadAll(At(c.output, tmp.file("one"))));
    }
  }
}

// Under an address-space limit a thread's stack, a malloc arena or a worker's buffers may be refused: a run then
// either finishes with the one-thread output or stops with one line on stderr (exit 1), never a crash or a hang.
TEST_CASE("faults: a tight address-space limit ends in the output or in one line", "[faults][cli][threads]") {
  if (lmkit::test::kSanitizerBuild) LMKIT_SKIP("sanitizer build: RLIMIT_AS cannot starve its shadow memory");
  TempDir tmp;
  const std::string ids = lmkit::test::WriteTokenFile(tmp, 3000, 512);
  for (const std::string dir : {"one", "many"}) fs::create_directories(tmp.file(dir));
  for (const ThreadedRun& c : ThreadedRuns(ids)) {
    RunResult r1 = RunLmkit(InDir(c.args, tmp.file("one"), "1"));
    REQUIRE(r1.exit_code == 0);
    for (uint64_t mb : {200}) {
      ChildLimits tight;
      tight.rlimits = {{RLIMIT_AS, mb << 20}};
      tight.alarm_s = 300;
      fs::remove_all(tmp.file("many"));
      fs::create_directories(tmp.file("many"));
      RunResult rn = RunLmkitLimited(InDir(c.args, tmp.file("many"), "128"), tight);
      INFO(c.args[0] << " " << c.args[1] << " under " << mb << " MiB: exit " << rn.exit_code << ", " << rn.err);
      CHECK((rn.exit_code == 0 || rn.exit_code == 1));
      if (rn.exit_code == 1) {
        CHECK(std::count(rn.err.begin(), rn.err.end(), '\n') == 1);
      } else if (c.output.empty()) {
        CHECK(rn.out == r1.out);
      } else {
        CHECK(ReadAll(At(c.output, tmp.file("many"))) == ReadAll(At(c.output, tmp.file("one"))));
      }
    }
  }
}

TEST_CASE("faults: --threads has an upper bound", "[faults][cli][threads]") {
  RunResult r = RunLmkit({"-j", "5000", "bpe", "encode", "-t", "gpt2", "-"}, "hello");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("at most 1024 threads, got 5000") != std::string::npos);
  CHECK(RunLmkit({"-j", "1024", "env"}).exit_code == 0);
}

// #31 item 2: a JSON input that is a device, a FIFO or endless stdin is a one-line error at once.
TEST_CASE("faults: JSON inputs refuse devices and FIFOs and cap their size", "[faults][cli][files]") {
  TempDir tmp;
  const std::string fifo = tmp.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const std::string zero_cfg = CopyModel(tmp, "zero_cfg");
  fs::remove(zero_cfg + "/config.json");
  fs::create_symlink("/dev/zero", zero_cfg + "/config.json");
  for (const std::string& special : {std::string("/dev/zero"), fifo}) {
    const std::string what = special == fifo ? "is a pipe (FIFO)" : "is a device";
    const std::vector<std::vector<std::string>> runs = {
        {"flops", special},
        {"memory", special},
        {"plan", special},
        {"dataload", TestData("dataload/tokens_u16.npy"), "--model", special, "--gpu", "H100", "--mfu", "0.4",
         "--steps", "2"},
        {"quantize", kStoriesDir, "-o", tmp.file("q"), "--calibration", special, "--scheme", "w8a8"},
    };
    for (const auto& args : runs) {
      RunResult r = RunLmkit(args);
      INFO(args[0] << " " << special << ": " << r.err);
      CHECK(r.exit_code == 1);
      CHECK(r.err.find(special + ": " + what + ", expected a regular file") != std::string::npos);
    }
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"eval", zero_cfg, "--tokens", TestData("dataload/tokens_u16.npy")},
        {"generate", zero_cfg, "--prompt-ids", "1", "--max-tokens", "1"},
        {"quantize", zero_cfg, "-o", tmp.file("q2")},
        {"inspect", zero_cfg}}) {
    RunResult r = RunLmkit(args);
    INFO(args[0] << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(OneLine(r, "lmkit " + args[0] + ": " + zero_cfg + "/config.json: is a device, expected a regular file"));
  }
  // Standard input may be a pipe, but not an endless one.
  RunResult r = RunShell("timeout 60 '" + std::string(LMKIT_BINARY) + "' plan - </dev/zero");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("<stdin>: more than 256 MiB, the limit for this kind of file") != std::string::npos);
}

// #31 item 3: the three tokenizer files are one output.
TEST_CASE("faults: bpe train on a full disk keeps the old tokenizer whole", "[faults][cli][outputs]") {
  TempDir tmp;
  const std::string out = tmp.file("tok");
  RunResult old = RunLmkit({"bpe", "train", kCorpusEn, "--vocab-size", "300", "-o", out, "-q"});
  REQUIRE(old.exit_code == 0);
  const std::string old_vocab = ReadAll(out + "/vocab.json"), old_merges = ReadAll(out + "/merges.txt"),
                    old_tok = ReadAll(out + "/tokenizer.json");
  // A new run's files are larger; the limit lets vocab.json and merges.txt be written but not tokenizer.json.
  RunResult probe = RunLmkit({"bpe", "train", kCorpusEn, "--vocab-size", "500", "-o", tmp.file("probe"), "-q"});
  REQUIRE(probe.exit_code == 0);
  const uint64_t tok_bytes = fs::file_size(tmp.file("probe/tokenizer.json"));
  REQUIRE(fs::file_size(tmp.file("probe/vocab.json")) < tok_bytes - 1);
  RunResult full = RunLmkitLimited({"bpe", "train", kCorpusEn, "--vocab-size", "500", "-o", out, "-q"},
                                   {{{RLIMIT_FSIZE, tok_bytes - 1}}});
  INFO(full.err);
  CHECK(full.exit_code == 1);
  CHECK(OneLine(full, "lmkit bpe train: " + out + "/tokenizer.json: write failed: File too large"));
  CHECK(ReadAll(out + "/vocab.json") == old_vocab);
  CHECK(ReadAll(out + "/merges.txt") == old_merges);
  CHECK(ReadAll(out + "/tokenizer.json") == old_tok);
  CHECK(ListDir(out) == std::vector<std::string>{"merges.txt", "tokenizer.json", "vocab.json"});
  CHECK(Leftovers(tmp.path()).empty());
  CHECK(Leftovers(out).empty());
}

TEST_CASE("faults: a second writer of an output directory is refused, not mixed in", "[faults][cli][outputs]") {
  TempDir tmp;
  const std::string out = tmp.file("tok");
  fs::create_directories(out);
  // The test holds the lock a running `bpe train -o tok` would hold.
  const int fd = ::open(out.c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX) == 0);
  RunResult r = RunLmkit({"bpe", "train", kCorpusEn, "--vocab-size", "300", "-o", out, "-q"});
  CHECK(r.exit_code == 1);
  CHECK(r.err ==
        "lmkit bpe train: " + out + ": another process is writing this directory; try again when it is done\n");
  CHECK(ListDir(out).empty());
  ::close(fd);
  // And two real runs at once: each either wins whole or is refused; the directory holds one run's files.
  std::string cmd = "'";
  cmd += LMKIT_BINARY;
  cmd += "' -q bpe train '" + kCorpusEn + "' -o '" + out + "' ";
  RunResult both = RunShell("(" + cmd + "--vocab-size 300 & " + cmd + "--vocab-size 400 & wait) 2>&1; true");
  INFO(both.out);
  auto vocab = lmkit::ParseJson(ReadAll(out + "/vocab.json"), "vocab");
  auto tok = lmkit::ParseJson(ReadAll(out + "/tokenizer.json"), "tok");
  REQUIRE(vocab.ok());
  REQUIRE(tok.ok());
  CHECK(vocab->size() == (*tok)["model"]["vocab"].size());
}

// #31 item 4: quantize reads the index as strictly as eval and inspect.
TEST_CASE("faults: quantize, eval and inspect refuse an index that omits a shard", "[faults][cli][checkpoint]") {
  TempDir tmp;
  const std::string in = tmp.file("sharded");
  fs::create_directories(in);
  auto src = lmkit::io::SafetensorsFile::Open(kStoriesDir + "/model.safetensors");
  REQUIRE(src.ok());
  std::vector<lmkit::io::TensorData> a, b;
  lmkit::Json wm = lmkit::Json::object();
  for (const lmkit::io::TensorInfo& t : src->tensors()) {
    const bool first = t.name.find("layers.0.") != std::string::npos || t.name.find("embed") != std::string::npos;
    (first ? a : b).push_back({t.name, t.dtype, t.shape, src->Data(t)});
    if (first) wm[t.name] = "model-00001-of-00002.safetensors";  // shard 2's entries are lost
  }
  REQUIRE(lmkit::io::WriteSafetensors(in + "/model-00001-of-00002.safetensors", a).ok());
  REQUIRE(lmkit::io::WriteSafetensors(in + "/model-00002-of-00002.safetensors", b).ok());
  lmkit::Json idx;
  idx["weight_map"] = wm;
  WriteAll(in + "/model.safetensors.index.json", lmkit::DumpJson(idx));
  fs::copy_file(kStoriesDir + "/config.json", in + "/config.json");
  const std::string why = in +
                          "/model.safetensors.index.json: the weight_map lists no tensor of "
                          "model-00002-of-00002.safetensors (shard 2 of 2)\n";
  RunResult q = RunLmkit({"quantize", in, "-o", tmp.file("q")});
  CHECK(q.exit_code == 1);
  CHECK(q.err == "lmkit quantize: " + why);
  CHECK_FALSE(fs::exists(tmp.file("q")));
  RunResult e = RunLmkit({"eval", in, "--tokens", TestData("dataload/tokens_u16.npy")});
  CHECK(e.err == "lmkit eval: " + why);
  RunResult i = RunLmkit({"inspect", in});
  CHECK(i.err == "lmkit inspect: " + why);
}

// #31 item 5: a NaN weight used to give "perplexity nan" with exit 0.
TEST_CASE("faults: eval and generate refuse non-finite weights, naming the tensor", "[faults][cli][model]") {
  TempDir tmp;
  const std::string d = CopyModel(tmp, "nan");
  {
    auto src = lmkit::io::SafetensorsFile::Open(kStoriesDir + "/model.safetensors");
    REQUIRE(src.ok());
    std::vector<lmkit::io::TensorData> ts;
    std::vector<std::vector<uint8_t>> store;
    for (const lmkit::io::TensorInfo& t : src->tensors()) {
      auto bytes = src->Data(t);
      store.emplace_back(bytes.begin(), bytes.end());
      if (t.name == "model.layers.1.mlp.down_proj.weight") {
        REQUIRE(t.dtype == lmkit::io::DType::kF32);
        const float inf = std::numeric_limits<float>::infinity();
        std::memcpy(store.back().data() + 4 * (2 * t.shape[1] + 5), &inf, 4);
      }
      ts.push_back({t.name, t.dtype, t.shape, store.back()});
    }
    REQUIRE(lmkit::io::WriteSafetensors(d + "/model.safetensors", ts).ok());
  }
  const std::string why =
      d + "/model.safetensors: tensor 'model.layers.1.mlp.down_proj.weight': non-finite value at [2, 5]\n";
  RunResult e = RunLmkit({"eval", d, "--tokens", TestData("dataload/tokens_u16.npy")});
  CHECK(e.exit_code == 1);
  CHECK(e.err == "lmkit eval: " + why);
  RunResult g = RunLmkit({"generate", d, "--prompt-ids", "1", "--max-tokens", "3"});
  CHECK(g.exit_code == 1);
  CHECK(g.err == "lmkit generate: " + why);
  CHECK(g.out.empty());
}

TEST_CASE("faults: eval refuses quantization schemes it would misread", "[faults][cli][model]") {
  TempDir tmp;
  RunResult q = RunLmkit({"-q", "quantize", kStoriesDir, "-o", tmp.file("q")});
  REQUIRE(q.exit_code == 0);
  const std::string cfg_path = tmp.file("q/config.json");
  auto cfg = lmkit::ParseJson(ReadAll(cfg_path), "cfg");
  REQUIRE(cfg.ok());
  auto& weights = (*cfg)["quantization_config"]["config_groups"]["group_0"]["weights"];
  REQUIRE(weights.is_object());
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, lmkit::Json>>{{"num_bits", 2}, {"symmetric", false}}) {
    lmkit::Json changed = *cfg;
    changed["quantization_config"]["config_groups"]["group_0"]["weights"][key] = value;
    WriteAll(cfg_path, lmkit::DumpJson(changed));
    RunResult e = RunLmkit({"eval", tmp.file("q"), "--tokens", TestData("dataload/tokens_u16.npy")});
    INFO(key);
    CHECK(e.exit_code == 1);
    CHECK(OneLine(e, "lmkit eval: " + cfg_path +
                         ": quantization_config group 'group_0': weights must be symmetric 8-bit int (or 4-bit "
                         "pack-quantized)"));
  }
  {
    // 4 bits claimed over 8-bit packed words: the packed shape gives it away (the codes are never misread).
    lmkit::Json changed = *cfg;
    changed["quantization_config"]["config_groups"]["group_0"]["weights"]["num_bits"] = 4;
    WriteAll(cfg_path, lmkit::DumpJson(changed));
    RunResult e = RunLmkit({"eval", tmp.file("q"), "--tokens", TestData("dataload/tokens_u16.npy")});
    CHECK(e.exit_code == 1);
    CHECK(e.err.find("weight_packed' is I32 [") != std::string::npos);
  }
}

// Smaller promises of #31.
TEST_CASE("faults: SIGHUP removes the temporary output as SIGINT does", "[faults][cli][signals]") {
  TempDir tmp;
  for (int sig : {SIGHUP, SIGINT, SIGTERM}) {
    // bpe encode reading a pipe that stays open: its temporary output exists while it waits for input.
    int in[2];
    REQUIRE(::pipe(in) == 0);
    const std::string out = tmp.file("ids.bin");
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(in[0], 0);
      ::close(in[0]);
      ::close(in[1]);
      for (int s : {SIGHUP, SIGINT, SIGTERM, SIGPIPE}) ::signal(s, SIG_DFL);
      const char* argv[] = {LMKIT_BINARY, "-q", "bpe", "encode", "-t", "gpt2", "-", "-o", out.c_str(), nullptr};
      ::execv(LMKIT_BINARY, const_cast<char* const*>(argv));
      ::_exit(126);
    }
    ::close(in[0]);
    bool started = false;
    for (int i = 0; i < 400 && !started; ++i) {
      started = !Leftovers(tmp.path()).empty();
      if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(in[1]);
    INFO("signal " << sig);
    CHECK(started);
    CHECK(WIFSIGNALED(status));
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == sig));
    CHECK(Leftovers(tmp.path()).empty());
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("faults: generate refuses an empty id in --prompt-ids", "[faults][cli]") {
  RunResult r = RunLmkit({"generate", kStoriesDir, "--prompt-ids", "1,2,,3", "--max-tokens", "1"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--prompt-ids") != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE("faults: a report on a full stdout is the documented one-line error", "[faults][cli]") {
  struct stat st {};
  if (::stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode)) LMKIT_SKIP("no /dev/full here");
  TempDir tmp;
  for (const std::string& cmd :
       {std::string("bpe encode -t gpt2 '") + kCorpusEn + "' -o - --format json",
        std::string("bpe decode -t gpt2 --format json -"), std::string("inspect '") + kStoriesDir + "'",
        std::string("-q bpe train '") + kCorpusEn + "' --vocab-size 300 -o '" + tmp.file("t") + "'"}) {
    RunResult r = RunShell("(echo '[1, 2]' | '" + std::string(LMKIT_BINARY) + "' " + cmd + " 2>&1 >/dev/full)");
    INFO(cmd << ": " << r.out);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find(": stdout: write failed: No space left on device\n") != std::string::npos);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  }
}

TEST_CASE("faults: the bpe train summary cuts a long token", "[faults][cli]") {
  TempDir tmp;
  std::string word;
  for (int i = 0; i < 4; ++i) word += "abcdefghijklmnopqrstuvwxyz";
  std::string corpus;
  for (int i = 0; i < 50; ++i) corpus += word + " ";
  WriteAll(tmp.file("c.txt"), corpus);
  RunResult r = RunLmkit({"bpe", "train", tmp.file("c.txt"), "--vocab-size", "500", "-o", tmp.file("tok")});
  REQUIRE(r.exit_code == 0);
  const size_t at = r.out.find("longest token id ");
  REQUIRE(at != std::string::npos);
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  CHECK(line.find("(105 bytes): \xc4\xa0" + word.substr(0, 63) + " ... (41 more bytes)") != std::string::npos);
}

// One word of 4 MB of 'a' trains tokens of up to 4 MB (a, aa, aaaa, ... and their sums): the vocabulary is ~8x the
// input and the files 4x that. Memory stays the merger's 4 bytes per input byte plus the vocabulary once; rendering
// each file whole before writing it took 5x the input more (the issue measured ~32 bytes per input byte).
TEST_CASE("faults: one huge word trains in memory near the input plus its vocabulary", "[faults][cli]") {
  if (lmkit::test::kSanitizerBuild) LMKIT_SKIP("sanitizer build: its shadow memory and quarantine change the RSS");
  TempDir tmp;
  const uint64_t n = 4'000'000;
  WriteAll(tmp.file("w.txt"), std::string(n, 'a'));
  RunResult r =
      RunLmkit({"-j", "1", "bpe", "train", tmp.file("w.txt"), "--vocab-size", "1000", "-o", tmp.file("tok"), "--json"});
  REQUIRE(r.exit_code == 0);
  const lmkit::Json j = lmkit::test::StdoutJson(r);
  const uint64_t vocab_bytes = fs::file_size(tmp.file("tok/vocab.json"));
  const uint64_t files =
      vocab_bytes + fs::file_size(tmp.file("tok/merges.txt")) + fs::file_size(tmp.file("tok/tokenizer.json"));
  REQUIRE(vocab_bytes > 4 * n);  // the case is the one described: tokens of megabytes
  const uint64_t peak = j["peak_rss_bytes"].get<uint64_t>();
  INFO("peak " << peak << " B, vocab.json " << vocab_bytes << " B, files " << files << " B");
  CHECK(peak < 4 * n + vocab_bytes + (48u << 20));
  CHECK(peak < files);
}
