// scripts/gpu-check.sh, the one call a session lent a GPU makes: its decisions are tested here, without a GPU, on a
// copy of the script in a scratch tree whose .gpu-bundle holds stand-in binaries (shell scripts that answer as lmkit
// and lmkit_tests would). A wrong exit status there would spend a GPU session's few minutes on a silent skip or a
// stale binary.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "support/run_lmkit.h"

using lmkit::test::ReadAll;
using lmkit::test::RepoPath;
using lmkit::test::RunResult;
using lmkit::test::RunShell;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;
namespace fs = std::filesystem;

namespace {

void Executable(const std::string& path, const std::string& body) {
  WriteAll(path, "#!/usr/bin/env bash\n" + body);
  fs::permissions(path, fs::perms::owner_all, fs::perm_options::add);
}

// A tree shaped like the repository (the folders the digest covers) with the real script in it.
struct FakeRepo {
  TempDir dir;
  std::string root = dir.file("repo"), out = dir.file("out");
  FakeRepo() {
    for (const char* d : {"scripts", "src/lmkit", "commands", "tests/unit", "tests/support", "tests/cli", "data"})
      fs::create_directories(root + "/" + d);
    fs::create_directories(out);
    fs::copy_file(RepoPath("scripts/gpu-check.sh"), root + "/scripts/gpu-check.sh");
    WriteAll(root + "/src/lmkit/a.cpp", "int a;\n");
    WriteAll(root + "/CMakeLists.txt", "project(x)\n");
    fs::create_directories(root + "/.gpu-bundle/bin");
  }
  // lmkit: answers --version, env, env --json (a device listed when `device`) and dataload.
  void Lmkit(bool device) {
    Executable(
        root + "/.gpu-bundle/bin/lmkit",
        std::string("case \"$1 $2\" in\n") +
            "  '--version ') echo 'lmkit 0.1.0' ;;\n"
            "  'env ') echo 'devices fake' ;;\n"
            "  'env --json') echo '{\"devices\": [" +
            (device ? "{\"index\": 0}" : "") + "]}' ;;\n" +
            "  dataload*) echo 'throughput  1 M tokens/s'; echo '  host->device  1.0 us'; echo 'verdict  ok' ;;\n"
            "esac\n");
  }
  // lmkit_tests: what the [cuda] run prints and its status, and the benchmark's lines.
  void Tests(const std::string& cuda_output, int cuda_status) {
    Executable(root + "/.gpu-bundle/bin/lmkit_tests",
               "if [ \"$1\" = '[cuda]' ]; then echo '" + cuda_output + "'; exit " + std::to_string(cuda_status) +
                   "; fi\necho 'device Fake: peak 4900 GB/s'\necho 'quantize bf16 4096x4096 (picked): 80% of 4900'\n");
  }
  void Digest(const std::string& d) { WriteAll(root + "/.gpu-bundle/SOURCE_DIGEST", d + "\n"); }
  std::string RealDigest() {
    RunResult d = RunShell("bash " + root + "/scripts/gpu-check.sh --digest");
    REQUIRE(d.exit_code == 0);
    return d.out.substr(0, d.out.find('\n'));
  }
  RunResult Check() {
    return RunShell("cd " + root + " && OUT=" + out + " TMPDIR=" + dir.path() +
                    " GPU_CHECK_TOKEN_BYTES=4096 bash scripts/gpu-check.sh");
  }
};

}  // namespace

TEST_CASE("gpu-check.sh: the digest covers the sources and nothing the device copy lacks", "[scripts][gpu-check]") {
  FakeRepo r;
  const std::string d0 = r.RealDigest();
  CHECK(d0.size() == 40);
  WriteAll(r.root + "/src/lmkit/x.tmp.1", "scratch");  // ignored by git: not sent, so not in the digest
  CHECK(r.RealDigest() == d0);
  WriteAll(r.root + "/src/lmkit/a.cpp", "int a = 1;\n");
  CHECK(r.RealDigest() != d0);
}

TEST_CASE("gpu-check.sh: a stale bundle is refused before anything runs", "[scripts][gpu-check]") {
  FakeRepo r;
  r.Lmkit(true);
  r.Tests("All tests passed", 0);
  r.Digest("0000000000000000000000000000000000000000");
  RunResult run = r.Check();
  CHECK(run.exit_code == 1);
  CHECK(run.out.find("built from other sources") != std::string::npos);
  CHECK(run.out.find("== [cuda] tests") == std::string::npos);
  CHECK(ReadAll(r.out + "/gpu-check.txt").find("built from other sources") != std::string::npos);
}

TEST_CASE("gpu-check.sh: no device, a skipped test, a failed test each fail the call", "[scripts][gpu-check]") {
  FakeRepo r;
  r.Digest(r.RealDigest());
  SECTION("no device") {
    r.Lmkit(false);
    r.Tests("All tests passed", 0);
    RunResult run = r.Check();
    CHECK(run.exit_code == 1);
    CHECK(run.out.find("no CUDA device visible") != std::string::npos);
  }
  SECTION("a kernel test skipped (exit 77, as tests/unit/main.cpp reports a skip)") {
    r.Lmkit(true);
    r.Tests("test skipped: no CUDA device (x): kernel test", 77);
    RunResult run = r.Check();
    CHECK(run.exit_code == 1);
    CHECK(run.out.find("a CUDA test was skipped") != std::string::npos);
    CHECK(run.out.find("no CUDA device (x)") != std::string::npos);
    CHECK(run.out.find("== kernel bandwidth") == std::string::npos);
  }
  SECTION("a kernel test skipped, in the output only") {
    r.Lmkit(true);
    r.Tests("test skipped: no CUDA device (x): kernel test", 0);
    RunResult run = r.Check();
    CHECK(run.exit_code == 1);
    CHECK(run.out.find("a CUDA test was skipped") != std::string::npos);
  }
  SECTION("a kernel test failed") {
    r.Lmkit(true);
    r.Tests("codes differ", 3);
    RunResult run = r.Check();
    CHECK(run.exit_code == 1);
    CHECK(run.out.find("codes differ") != std::string::npos);
    CHECK(run.out.find("== kernel bandwidth") == std::string::npos);
  }
}

TEST_CASE("gpu-check.sh: a passing run reports the kernels and the host-to-device copies", "[scripts][gpu-check]") {
  FakeRepo r;
  r.Digest(r.RealDigest());
  r.Lmkit(true);
  r.Tests("All tests passed (3 assertions in 4 test cases)", 0);
  RunResult run = r.Check();
  INFO(run.out);
  CHECK(run.exit_code == 0);
  const std::string report = ReadAll(r.out + "/gpu-check.txt");
  CHECK(report.find("mode bundle") != std::string::npos);
  CHECK(report.find("device Fake: peak 4900 GB/s") != std::string::npos);
  CHECK(report.find("quantize bf16 4096x4096 (picked)") != std::string::npos);
  CHECK(report.find("-- --pinned") != std::string::npos);
  CHECK(report.find("-- --pageable") != std::string::npos);
  CHECK(report.find("host->device") != std::string::npos);
  CHECK(RunShell("bash " + r.root + "/scripts/gpu-check.sh --bogus").exit_code == 2);
}
