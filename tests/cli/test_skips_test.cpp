// tests/support/skip.h: a skipped test must not read as passed. The test binary runs itself on hidden cases that skip
// (and skip then fail) and its exit status is what ctest sees (SKIP_RETURN_CODE 77 in CMakeLists.txt).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "support/run_lmkit.h"
#include "support/skip.h"

using lmkit::test::RunResult;
using lmkit::test::RunShell;

namespace {

RunResult RunSelf(const std::string& spec) {
  return RunShell("'/proc/" + std::to_string(::getpid()) + "/exe' '" + spec + "'");
}

}  // namespace

TEST_CASE("skip demo: skips", "[.skip-demo-skip]") { LMKIT_SKIP("demo reason " << 42); }

TEST_CASE("skip demo: skips a part, then fails", "[.skip-demo-fail]") {
  LMKIT_SKIP_PART("part not run");
  CHECK(1 + 1 == 3);
}

TEST_CASE("skip demo: passes", "[.skip-demo-pass]") { CHECK(1 + 1 == 2); }

TEST_CASE("test skips: a skip exits 77 with its reason, a failure stays a failure", "[tests][skip]") {
  RunResult skipped = RunSelf("[.skip-demo-skip]");
  CHECK(skipped.exit_code == lmkit::test::kSkipExitCode);
  CHECK(skipped.out.find("test skipped: demo reason 42") != std::string::npos);
  RunResult failed = RunSelf("[.skip-demo-fail]");
  CHECK(failed.exit_code == 1);
  CHECK(failed.out.find("test skipped: part not run") != std::string::npos);
  RunResult passed = RunSelf("[.skip-demo-pass]");
  CHECK(passed.exit_code == 0);
}
