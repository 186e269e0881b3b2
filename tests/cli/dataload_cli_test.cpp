// `lmkit dataload` from the command line: report, JSON schema, exit codes (0, 1 bad input, 2 usage, 3 --fail-on gate).
#include <catch2/catch.hpp>

#include "lmkit/common/json.h"
#include "lmkit/cuda/device.h"
#include "support/run_lmkit.h"
#include "support/skip.h"

using lmkit::test::RunLmkit;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;
using lmkit::test::WriteTokenFile;

TEST_CASE("dataload cli: text report with stages, storage and verdict", "[dataload][cli]") {
  TempDir dir;
  const std::string f = WriteTokenFile(dir, 50000, 50257);
  auto r = RunLmkit({"dataload", f, "--steps", "20", "-b", "4", "-t", "128", "--tokens-per-s", "1000"});
  REQUIRE(r.exit_code == 0);
  for (const char* s : {"throughput", "first batch", "gather", "convert", "consumer wait", "read amplification",
                        "verdict     NOT input-bound", "  knob", "host->device     skipped (--device cpu)"})
    CHECK(r.out.find(s) != std::string::npos);
  CHECK(r.err.empty());
}

TEST_CASE("dataload cli: --json is one lmkit.dataload/2 document", "[dataload][cli]") {
  TempDir dir;
  const std::string f = WriteTokenFile(dir, 50000, 50257);
  auto r = RunLmkit({"--json", "dataload", f, "--steps", "10", "-t", "256", "--seed", "3", "--step-time-ms", "100"});
  REQUIRE(r.exit_code == 0);
  auto j = lmkit::ParseJson(r.out, "stdout");
  REQUIRE(j.ok());
  CHECK((*j)["schema"] == "lmkit.dataload/2");
  CHECK((*j)["files"][0]["tokens"] == 50000);
  CHECK((*j)["files"][0]["dtype"] == "uint16");
  const auto& run = (*j)["runs"][0];
  CHECK(run["config"]["batch_size"] == 12);
  CHECK(run["config"]["context_length"] == 256);
  CHECK(run["throughput"]["steady_batches"] == 10);
  CHECK(run["stages"]["gather"]["count"] == 10);
  CHECK(run["stages"]["h2d"].is_null());
  CHECK(run["verdict"]["level"] == "not");
  CHECK(run["demand"]["step_time_ms"] == Approx(100));
  CHECK((*j)["gate_level"] == "not");
  // Same seed, other thread count: the same batches.
  auto r2 = RunLmkit(
      {"--json", "--threads", "2", "dataload", f, "--steps", "10", "-t", "256", "--seed", "3", "--access", "pread"});
  REQUIRE(r2.exit_code == 0);
  auto j2 = lmkit::ParseJson(r2.out, "stdout");
  REQUIRE(j2.ok());
  CHECK((*j2)["runs"][0]["config"]["threads"] == 2);
  CHECK((*j2)["runs"][0]["checksum"] == run["checksum"]);
}

TEST_CASE("dataload cli: --fail-on gates with exit code 3", "[dataload][cli]") {
  TempDir dir;
  const std::string f = WriteTokenFile(dir, 50000, 50257);
  auto pass = RunLmkit({"dataload", f, "--steps", "10", "--tokens-per-s", "1000", "--fail-on", "moderate"});
  CHECK(pass.exit_code == 0);
  auto fail = RunLmkit({"dataload", f, "--steps", "10", "--tokens-per-s", "1e15", "--fail-on", "high"});
  CHECK(fail.exit_code == 3);
  CHECK(fail.out.find("HIGHLY input-bound") != std::string::npos);
  CHECK(fail.err.find("gate failed: HIGHLY input-bound (--fail-on high)") != std::string::npos);
  auto no_demand = RunLmkit({"dataload", f, "--steps", "10", "--fail-on", "high"});
  CHECK(no_demand.exit_code == 2);
}

TEST_CASE("dataload cli: bad input and usage errors", "[dataload][cli]") {
  TempDir dir;
  const std::string f = WriteTokenFile(dir, 5000, 1000);
  auto vocab = RunLmkit({"dataload", f, "--steps", "5", "-t", "64", "--vocab-size", "500"});
  CHECK(vocab.exit_code == 1);
  CHECK(vocab.err.find("is not below --vocab-size 500") != std::string::npos);
  CHECK(RunLmkit({"dataload", f, "--steps", "5", "-t", "64", "--vocab-size", "1000"}).exit_code == 0);
  // Staging memory exists only on the way to a device: on the CPU path these changed nothing, silently.
  auto pinned = RunLmkit({"dataload", f, "--steps", "5", "-t", "64", "--pageable"});
  CHECK(pinned.exit_code == 2);
  CHECK(pinned.err == "lmkit dataload: --pageable applies to --device cuda (the host-to-device staging)\n");
  auto mem = RunLmkit({"dataload", f, "--steps", "5", "-t", "64", "--sweep", "memory=pinned,pageable"});
  CHECK(mem.exit_code == 2);
  CHECK(mem.err == "lmkit dataload: --sweep memory=... applies to --device cuda (the host-to-device staging)\n");
  auto missing = RunLmkit({"dataload", dir.file("none.bin"), "--steps", "5"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err == "lmkit dataload: " + dir.file("none.bin") + ": no such file\n");
  auto short_file = RunLmkit({"dataload", f, "--steps", "5"});  // 5,000 tokens < T + 1 = 1,025? no: enough
  CHECK(short_file.exit_code == 0);
  auto too_short = RunLmkit({"dataload", f, "--steps", "5", "-t", "5000"});
  CHECK(too_short.exit_code == 1);
  CHECK(RunLmkit({"dataload", f, "--duration", "soon"}).exit_code == 2);
  CHECK(RunLmkit({"dataload", f, "--access", "fast"}).exit_code == 2);
  CHECK(RunLmkit({"dataload"}).exit_code == 2);
  CHECK(RunLmkit({"dataload", f, "--tokens-per-s", "5", "--step-time-ms", "5"}).exit_code == 2);
  CHECK(RunLmkit({"dataload", f, "--model", "gpt2"}).exit_code == 2);
  CHECK(RunLmkit({"dataload", f, "--sweep", "colour=red"}).exit_code == 2);
  auto npy_u32 =
      RunLmkit({"dataload", TestData("dataload/tokens_u32.npy"), "--steps", "3", "-t", "64", "--out-dtype", "uint16"});
  CHECK(npy_u32.exit_code == 2);
}

TEST_CASE("dataload cli: a NaN demand is a usage error, not a silent run without one", "[dataload][cli]") {
  TempDir dir;
  const std::string f = WriteTokenFile(dir, 5000, 1000);
  // CLI::PositiveNumber let "nan" through; the demand was then dropped and the run ended "verdict none", exit 0.
  auto r = RunLmkit({"dataload", f, "--steps", "3", "-t", "8", "--tokens-per-s", "nan"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "lmkit dataload: --tokens-per-s: must be a positive number, not 'nan' (see 'lmkit dataload --help')\n");
  r = RunLmkit({"dataload", f, "--steps", "3", "-t", "8", "--step-time-ms", "nan", "--fail-on", "high"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--step-time-ms: must be a positive number, not 'nan'") != std::string::npos);
  // The rejection of 0 names the rule instead of a 300-digit range.
  r = RunLmkit({"dataload", f, "--steps", "0"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit dataload: --steps: must be a positive number, not '0' (see 'lmkit dataload --help')\n");
}

TEST_CASE("dataload cli: a sweep prints one table and a recommendation", "[dataload][cli]") {
  TempDir dir;
  const std::string f = WriteTokenFile(dir, 50000, 50257);
  // PATH after the sweep's values: it must still be taken as a file.
  auto r = RunLmkit({"dataload", "--steps", "5", "-t", "128", "--step-time-ms", "500", "--sweep", "prefetch=1,2",
                     "access=mmap,pread", f});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("prefetch=1 access=mmap") != std::string::npos);
  CHECK(r.out.find("prefetch=2 access=pread") != std::string::npos);
  CHECK(r.out.find("recommended prefetch=1") != std::string::npos);
}

TEST_CASE("dataload cli: --device cuda without a device skips the copy and says so once", "[dataload][cli]") {
  TempDir dir;
  const std::string f = WriteTokenFile(dir, 50000, 50257);
  auto r = RunLmkit({"dataload", f, "--steps", "5", "-t", "128", "--device", "cuda", "--sweep", "prefetch=1,2"});
  REQUIRE(r.exit_code == 0);
  if (!lmkit::cuda::ListCudaDevices().devices.empty()) {
    LMKIT_SKIP("a CUDA device is present; the path without one is not exercised here");
  }
  size_t first = r.err.find("host->device stage skipped");
  CHECK(first != std::string::npos);
  CHECK(r.err.find("host->device stage skipped", first + 1) == std::string::npos);
}

TEST_CASE("dataload cli: a context length of 2^64 - 1 is not wrapped to 0", "[dataload][cli]") {
  TempDir dir;
  const std::string f = WriteTokenFile(dir, 5000, 1000);
  // T + 1 wrapped: the error said a window "needs at least 0" tokens.
  auto r = RunLmkit({"dataload", f, "--steps", "2", "-t", "18446744073709551615"});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit dataload: " + f +
                     ": has 5000 tokens; a window of context length 18446744073709551615 needs at least "
                     "18446744073709551616\n");
}

TEST_CASE("dataload cli: a batch larger than memory is a usage error naming the flags", "[dataload][cli]") {
  TempDir dir;
  const std::string f = WriteTokenFile(dir, 5000, 1000);
  // The buffers were allocated as asked: "lmkit: out of memory" from the top-level handler, exit 1.
  auto r = RunLmkit({"dataload", f, "--steps", "2", "-b", "9999999999", "-t", "64"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("lmkit dataload: --batch-size 9999999999 with --context-length 64 and --prefetch 2 needs ") == 0);
  CHECK(r.err.find("of batch buffers, more than this machine's ") != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE("dataload cli: the vocabulary check says what it checked and counts a position once", "[dataload][cli]") {
  TempDir dir;
  // 70 tokens, T = 64: six window starts, drawn 4 × 40 times, all of which cover token 30 — set out of range.
  std::string bytes;
  for (int i = 0; i < 70; ++i) {
    const uint16_t id = i == 30 ? 999 : static_cast<uint16_t>(i);
    bytes.append(reinterpret_cast<const char*>(&id), 2);
  }
  WriteAll(dir.file("t.bin"), bytes);
  auto r = RunLmkit({"--json", "dataload", dir.file("t.bin"), "--steps", "38", "--warmup", "2", "-b", "4", "-t", "64",
                     "--vocab-size", "500"});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit dataload: " + dir.file("t.bin") +
                     " token 30: token id 999 is not below --vocab-size 500 (1 out-of-range position in the sampled "
                     "windows)\n");
  auto j = lmkit::ParseJson(r.out, "stdout");
  REQUIRE(j.ok());
  const auto& v = (*j)["runs"][0]["vocab_check"];
  CHECK(v["scope"] == "sampled windows");
  CHECK(v["windows_checked"] == 160);
  CHECK(v["ids_checked"] == 160 * 65);
  CHECK(v["out_of_range"] == 1);  // 160 windows saw it; it is one position
  auto text = RunLmkit(
      {"dataload", dir.file("t.bin"), "--steps", "38", "--warmup", "2", "-b", "4", "-t", "64", "--vocab-size", "500"});
  CHECK(text.out.find("vocab       10,400 ids of the 160 sampled windows checked (not the whole file), max id 999, "
                      "1 position OUT OF RANGE (first: id 999 at " +
                      dir.file("t.bin") + " token 30)\n") != std::string::npos);
}

TEST_CASE("dataload cli: capacity, verdict and why agree for any demand", "[dataload][cli]") {
  TempDir dir;
  const std::string f = WriteTokenFile(dir, 200000, 50257);
  for (const char* demand : {"1e6", "1e8", "6e8", "1e10"}) {
    INFO(demand);
    auto r = RunLmkit({"--json", "dataload", f, "--steps", "300", "-b", "12", "-t", "1024", "--tokens-per-s", demand});
    REQUIRE(r.exit_code == 0);
    auto j = lmkit::ParseJson(r.out, "stdout");
    REQUIRE(j.ok());
    const auto& v = (*j)["runs"][0]["verdict"];
    const double capacity = v["capacity_ratio"];
    const std::string level = v["level"], reason = v["reason"];
    if (capacity < 0.95) CHECK(level != "not");
    if (capacity < 1) CHECK(v["wait_share"].get<double>() >= 1 - capacity - 0.02);
    CHECK((level == "not") == (reason.find("the loader makes ") == 0));
    CHECK((reason.find("slower than the step") != std::string::npos) == (level != "not" && capacity < 1));
  }
}
