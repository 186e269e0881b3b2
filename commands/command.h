// What every subcommand file in commands/ shares: the global options, the registration signature and every
// subcommand's setup function, and the helpers that turn core results into stdout/stderr/exit codes. Only this layer
// prints or decides exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "exit_codes.h"
#include "lmkit/common/json.h"
#include "lmkit/common/nearest_name.h"
#include "lmkit/common/output_check.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"

namespace lmkit::cli {

struct GlobalOptions {
  bool json = false;     // one JSON document on stdout instead of text
  unsigned threads = 0;  // 0 = all CPUs this process may use
  bool quiet = false;    // no progress and no notes on stderr (errors still print)

  unsigned ResolvedThreads() const;
};

// A subcommand's setup adds its options to `sub` and returns the function main() calls when it was chosen. That
// function returns an exit code (exit_codes.h). `name` is the full command name for messages ("bpe train").
using RunFn = std::function<int()>;
using SetupFn = RunFn (*)(CLI::App& sub, const GlobalOptions& globals);

struct CommandSpec {
  const char* name;
  const char* summary;  // one line, shown by `lmkit --help`
  SetupFn setup;
};

// The setup function of every subcommand, each defined in commands/<name>.cpp; run_cli.cpp's table lists them.
RunFn SetupInspect(CLI::App& sub, const GlobalOptions& g);
RunFn SetupEnv(CLI::App& sub, const GlobalOptions& g);
RunFn SetupBpe(CLI::App& sub, const GlobalOptions& g);
RunFn SetupFlops(CLI::App& sub, const GlobalOptions& g);
RunFn SetupMemory(CLI::App& sub, const GlobalOptions& g);
RunFn SetupPlan(CLI::App& sub, const GlobalOptions& g);
RunFn SetupCalibrate(CLI::App& sub, const GlobalOptions& g);
RunFn SetupQuantize(CLI::App& sub, const GlobalOptions& g);
RunFn SetupDataload(CLI::App& sub, const GlobalOptions& g);
RunFn SetupEval(CLI::App& sub, const GlobalOptions& g);
RunFn SetupGenerate(CLI::App& sub, const GlobalOptions& g);
// `lmkit bpe`'s subcommands (bpe_train.cpp, bpe_count.cpp, bpe_encode.cpp), listed once by BpeCommands().
RunFn SetupBpeTrain(CLI::App& sub, const GlobalOptions& g);
RunFn SetupBpeCount(CLI::App& sub, const GlobalOptions& g);
RunFn SetupBpeEncode(CLI::App& sub, const GlobalOptions& g);
RunFn SetupBpeDecode(CLI::App& sub, const GlobalOptions& g);
// The one table of `lmkit bpe`'s subcommands: drives its registration, its help and the did-you-mean check.
std::span<const CommandSpec> BpeCommands();

// How a command spells the core's request fields (Field() in a Status message): by default field "seq_len" is the
// flag "--seq-len"; a command lists the exceptions (positionals, short or renamed flags), e.g. {"model", "MODEL"}.
using FlagNames = std::map<std::string, std::string, std::less<>>;
// The CLI spelling of `field` under `names`.
std::string FlagFor(std::string_view field, const FlagNames& names = {});
// Prints `lmkit <command>: <subject>: <message>` on stderr, fields spelled as flags, and returns the exit code for
// the status (kInvalidArgument: kExitUsage).
int ReportError(const std::string& command, const Status& status, const FlagNames& names = {});
// Prints `lmkit <command>: <message>` on stderr and returns kExitUsage.
int UsageError(const std::string& command, const std::string& message);
// An option check: the value must parse as a finite number > 0. Used instead of CLI::PositiveNumber, which lets "nan"
// through (every comparison with NaN is false) and prints a 300-digit range when it rejects a value.
CLI::Validator PositiveFinite();
// A note on stderr (suppressed by --quiet), e.g. "no CUDA device; using the CPU path".
void Note(const GlobalOptions& g, const std::string& command, const std::string& message);
// Prints the CPU-fallback note at most once per process.
void NoteCpuFallbackOnce(const GlobalOptions& g, const std::string& command, const std::string& why);

// Where this layer writes: stdout and stderr.
std::FILE* CliOut();
std::FILE* CliErr();

// Runs one lmkit command line (argv[0] is the program name) and returns its exit code. `standalone` (main()):
// installs the signal handlers that remove partial outputs; an embedding process keeps its own. Never throws.
int RunCli(int argc, char** argv, bool standalone);

// Writes one JSON document (pretty, newline-terminated) on stdout.
void PrintJson(const Json& doc);
// Writes text on stdout exactly as given.
void PrintText(const std::string& text);
// The errno of the first PrintText/PrintJson write that failed (a full disk, /dev/full, a closed pipe with SIGPIPE
// ignored), or 0. main() turns it into exit 1: a script must not read a truncated report as a success.
int StdoutWriteError();

// A progress sink for stderr: draws only when stderr is a terminal and --quiet is off.
std::unique_ptr<TerminalProgress> MakeProgress(const GlobalOptions& g);

// A check for unsigned integer flags (size_t, uint64_t). CLI11 2.1 converts those with strtoull(base 0): "-1" wrapped
// to 2^64-1, a value past 64 bits saturated to it silently, and "0400" was read as octal 256. This accepts decimal
// digits only, within 64 bits (else a usage error naming the flag), and rewrites the value without leading zeros so
// that CLI11's own conversion reads it as decimal.
CLI::Validator DecimalCount();
// The same for signed integer flags: an optional '-' and decimal digits within 64 bits.
CLI::Validator DecimalInteger();
// Adds DecimalCount/DecimalInteger to every integer option of `app` and its subcommands that lacks one (both are
// named "decimal"), so that no integer flag reads "010" as octal 8 or accepts "0x10". A Range check on the raw text
// still sees CLI11's reading: such options add DecimalCount() themselves, before the check.
void RequireDecimalIntegers(CLI::App& app);

// The core's CheckOutputIsNotAnInput (common/output_check.h) with the output spelled as `flag`.
Status CheckOutputIsNotAnInput(const std::vector<std::string>& inputs, const std::string& output,
                               const std::string& flag = "-o");

}  // namespace lmkit::cli
