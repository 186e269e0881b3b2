// Skipped tests are reported as skipped, not as passed. LMKIT_SKIP(reason) prints "test skipped: <reason>" and
// returns from the test case; Skip(reason) does the same without returning (a test that skips one part and runs the
// rest). When a run had a skip and no failure, the test binary exits with kSkipExitCode (tests/unit/main.cpp), which
// ctest reports as skipped (SKIP_RETURN_CODE in CMakeLists.txt); a failure still exits non-zero as a failure.
#pragma once

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

namespace lmkit::test {

constexpr int kSkipExitCode = 77;  // the automake convention, also used by meson and ctest users

// Counts a skip; defined in tests/unit/main.cpp, which every Catch2 binary of the project links.
void NoteSkip();
int SkipCount();

}  // namespace lmkit::test

#define LMKIT_SKIP_NOTE_(reason)                 \
  do {                                           \
    ::lmkit::test::NoteSkip();                   \
    std::ostringstream lmkit_skip_;              \
    lmkit_skip_ << reason;                       \
    WARN("test skipped: " << lmkit_skip_.str()); \
  } while (0)

// Marks this test as skipped for `reason` (a streamable expression) and goes on.
#define LMKIT_SKIP_PART(reason) LMKIT_SKIP_NOTE_(reason)
// Marks this test as skipped for `reason` and returns from the test case (use only in a TEST_CASE body).
#define LMKIT_SKIP(reason)    \
  do {                        \
    LMKIT_SKIP_NOTE_(reason); \
    return;                   \
  } while (0)
