// lmkit's exit codes: a contract with the shell scripts and CI jobs that call it (docs/cli.md).
#pragma once

namespace lmkit::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,  // bad input, I/O failure, runtime failure
  kExitUsage = 2,    // bad command line: unknown command or flag, missing or inconsistent options
  kExitGate = 3,     // a check the caller asked for did not pass (e.g. `dataload --fail-on`)
  kExitInterrupted = 130,
};

}  // namespace lmkit::cli
