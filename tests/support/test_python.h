// The python that runs the tests' independent checkers: LMKIT_TEST_PYTHON (scripts/test.sh points it at a venv with
// tests/requirements.txt installed). A test that needs a package asks for it here and reports as skipped without it.
#pragma once

#include <string>

namespace lmkit::test {

// LMKIT_TEST_PYTHON when it is set and imports every module of `modules` (space-separated, e.g. "tiktoken regex");
// "" otherwise. The answer is cached per `modules`.
std::string TestPythonWith(const std::string& modules);

}  // namespace lmkit::test
