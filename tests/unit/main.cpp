// The Catch2 main of every test binary: exits kSkipExitCode when a test skipped and none failed (support/skip.h).
#define CATCH_CONFIG_RUNNER
#include <atomic>
#include <catch2/catch.hpp>

#include "support/skip.h"

namespace lmkit::test {
namespace {
std::atomic<int> skips{0};
}  // namespace
void NoteSkip() { skips.fetch_add(1); }
int SkipCount() { return skips.load(); }
}  // namespace lmkit::test

int main(int argc, char* argv[]) {
  const int failed = Catch::Session().run(argc, argv);
  if (failed != 0) return failed == lmkit::test::kSkipExitCode ? 1 : failed;
  return lmkit::test::SkipCount() > 0 ? lmkit::test::kSkipExitCode : 0;
}
